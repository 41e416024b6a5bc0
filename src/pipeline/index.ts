export * from './pipeline.ts';
