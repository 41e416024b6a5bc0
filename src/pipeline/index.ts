export * from './types.ts';
export * from './engine.ts';
