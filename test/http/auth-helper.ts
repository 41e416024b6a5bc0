// Tokens files for tests: one token per role (and one holding none), written as Berth reads them.
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Role } from '../../src/http/roles.ts';

const digest = (token: string) => createHash('sha256').update(token).digest('hex');

/** Test tokens: long random-looking strings, so that a search of the logs for them cannot match by accident. */
export const TOKENS = {
  reader: 'tok-reader-Q2v9xL3mP8rT1sW6',
  reporter: 'tok-reporter-H7kD2nB5cF9gJ4',
  scheduler: 'tok-scheduler-Z3yU8eR1oI6pA5',
  admin: 'tok-admin-M4tN7bV2cX9zL1qW',
  none: 'tok-none-E5rT8yU1iO4pS7dF',
} as const;
export type TokenName = keyof typeof TOKENS;

const TOKEN_ROLES: Record<TokenName, Role[]> = {
  reader: ['reader'],
  reporter: ['reporter'],
  scheduler: ['scheduler'],
  admin: ['admin'],
  none: [],
};

export interface TokenSpec {
  name: string;
  token: string;
  roles: Role[];
}

export function tokensFileText(specs: readonly TokenSpec[]): string {
  return JSON.stringify({ tokens: specs.map((s) => ({ name: s.name, sha256: digest(s.token), roles: s.roles })) }, null, 2);
}

/** Writes dir/tokens.json with the given tokens (default: the five above, named by their role). */
export function writeTokens(dir: string, specs: readonly TokenSpec[] = roleTokens()): string {
  const file = join(dir, 'tokens.json');
  writeFileSync(file, tokensFileText(specs));
  return file;
}

function roleTokens(): TokenSpec[] {
  return (Object.keys(TOKENS) as TokenName[]).map((name) => ({ name, token: TOKENS[name], roles: TOKEN_ROLES[name] }));
}

export const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
