// Static tokens: the file auth_tokens_file holds each token's SHA-256 digest, never the token. Re-read on demand
// (SIGHUP) and when its directory changes; a bad file on reload keeps the tokens in force.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { readFileSync, watch, type FSWatcher } from 'node:fs';
import { basename, dirname } from 'node:path';
import { z } from 'zod';
import { ROLES, type Role } from './roles.ts';

export const TokenFileSchema = z.strictObject({
  tokens: z.array(z.strictObject({
    name: z.string().min(1),
    sha256: z.string().regex(/^[0-9a-fA-F]{64}$/, 'must be the 64 hex digits of the token\'s SHA-256 digest'),
    roles: z.array(z.enum(ROLES)),
  })),
});
export type TokenFile = z.output<typeof TokenFileSchema>;

export interface TokenEntry {
  name: string;
  digest: Buffer;
  roles: Role[];
}

/** A tokens or key-set file that cannot be used: the message is one line naming the file and the problem. */
export class AuthFileError extends Error {}

export function sha256(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}

/** A new token: 32 random bytes, base64url (43 characters, no padding). */
export function newToken(): string {
  return randomBytes(32).toString('base64url');
}

/** Parses the file's text; never echoes its content (a token pasted by mistake must not reach a log). */
export function parseTokenFile(text: string, file: string): TokenEntry[] {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    const position = /position (\d+)/.exec((err as Error).message)?.[1];
    throw new AuthFileError(`auth_tokens_file ${file} is not valid JSON${position ? ` (at position ${position})` : ''}`);
  }
  const result = TokenFileSchema.safeParse(json);
  if (!result.success) {
    const issue = result.error.issues[0]!;
    const where = issue.path.map((p) => (typeof p === 'number' ? `[${p}]` : `.${String(p)}`)).join('').replace(/^\./, '');
    throw new AuthFileError(`auth_tokens_file ${file}: ${where || 'the document'}: ${issue.message}`);
  }
  const names = new Set<string>();
  const digests = new Set<string>();
  return result.data.tokens.map((t, i) => {
    const digest = t.sha256.toLowerCase();
    if (names.has(t.name)) throw new AuthFileError(`auth_tokens_file ${file}: tokens[${i}]: the name ${t.name} is used twice`);
    if (digests.has(digest)) throw new AuthFileError(`auth_tokens_file ${file}: tokens[${i}] (${t.name}): the same digest appears twice`);
    names.add(t.name);
    digests.add(digest);
    return { name: t.name, digest: Buffer.from(digest, 'hex'), roles: t.roles };
  });
}

export interface ReloadResult {
  changed: boolean;
  count: number;
  added: string[];
  removed: string[];
}

export class TokenStore {
  readonly file: string;
  #entries: TokenEntry[] = [];
  #text: string | undefined;
  #watcher: FSWatcher | undefined;
  #debounce: NodeJS.Timeout | undefined;

  constructor(file: string) {
    this.file = file;
  }

  get size(): number {
    return this.#entries.length;
  }

  /** Reads the file; on any problem throws AuthFileError and keeps the tokens in force. */
  reload(): ReloadResult {
    let text: string;
    try {
      text = readFileSync(this.file, 'utf8');
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      throw new AuthFileError(`auth_tokens_file ${this.file} cannot be read (${code ?? (err as Error).message})`);
    }
    if (text === this.#text) return { changed: false, count: this.#entries.length, added: [], removed: [] };
    const next = parseTokenFile(text, this.file);
    const before = new Map(this.#entries.map((e) => [e.name, e.digest.toString('hex') + e.roles.join(',')]));
    const after = new Map(next.map((e) => [e.name, e.digest.toString('hex') + e.roles.join(',')]));
    // A name whose digest or roles changed counts as removed and added.
    const added = [...after].filter(([n, v]) => before.get(n) !== v).map(([n]) => n);
    const removed = [...before].filter(([n, v]) => after.get(n) !== v).map(([n]) => n);
    this.#entries = next;
    this.#text = text;
    return { changed: true, count: next.length, added, removed };
  }

  /** The entry whose digest equals the token's, comparing with every entry in constant time. */
  match(token: string): TokenEntry | undefined {
    const digest = sha256(token);
    let found: TokenEntry | undefined;
    for (const entry of this.#entries) {
      if (timingSafeEqual(digest, entry.digest)) found = entry;
    }
    return found;
  }

  /**
   * Calls onChange (debounced) when anything in the file's directory changes: editors and Kubernetes replace files
   * by rename, which a watch on the file itself would miss.
   */
  watch(onChange: () => void, debounceMs = 100): void {
    this.unwatch();
    const name = basename(this.file);
    this.#watcher = watch(dirname(this.file), { persistent: false }, (_event, filename) => {
      // Kubernetes swaps a '..data' symlink; other names in the directory do not concern us.
      if (filename !== null && filename !== name && !filename.startsWith('..')) return;
      clearTimeout(this.#debounce);
      this.#debounce = setTimeout(onChange, debounceMs);
      this.#debounce.unref();
    });
    this.#watcher.on('error', () => this.unwatch());
  }

  unwatch(): void {
    clearTimeout(this.#debounce);
    this.#watcher?.close();
    this.#watcher = undefined;
  }
}
