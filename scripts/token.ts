// npm run -s token -- --name NAME --role ROLE[,ROLE] [--file TOKENS_FILE]
// Prints a new random token (shown this once: Berth keeps only its digest) on the first line and the entry for
// auth_tokens_file on the second. With --file the entry is added to that file (created if missing), which a
// running Berth picks up without a restart.
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { AuthFileError, newToken, parseTokenFile, sha256, type TokenFile } from '../src/http/auth-tokens.ts';
import { isRole, ROLES, type Role } from '../src/http/roles.ts';

function fail(message: string): never {
  process.stderr.write(`token: ${message}\n`);
  process.exit(2);
}

let values: { name?: string; role?: string; file?: string };
try {
  ({ values } = parseArgs({
    options: { name: { type: 'string' }, role: { type: 'string' }, file: { type: 'string' } },
    strict: true,
  }));
} catch (err) {
  fail(`${(err as Error).message}\nusage: npm run -s token -- --name NAME --role ROLE[,ROLE] [--file TOKENS_FILE]`);
}

const name = values.name?.trim();
if (!name) fail('--name is required: who the token is for (it appears in audit lines)');
if (values.role === undefined) fail(`--role is required: one or more of ${ROLES.join(', ')}, comma separated`);
const roles = values.role.split(',').map((r) => r.trim()).filter((r) => r !== '');
const unknown = roles.filter((r) => !isRole(r));
if (unknown.length > 0) fail(`unknown role(s) ${unknown.join(', ')}: the roles are ${ROLES.join(', ')}`);

const token = newToken();
const entry = { name, sha256: sha256(token).toString('hex'), roles: [...new Set(roles)] as Role[] };

if (values.file) {
  // Relative to where `npm run` was typed (npm runs scripts from the package's directory).
  const file = resolve(process.env.INIT_CWD ?? process.cwd(), values.file);
  let doc: TokenFile = { tokens: [] };
  if (existsSync(file)) {
    const text = readFileSync(file, 'utf8');
    try {
      parseTokenFile(text, file);
    } catch (err) {
      fail(err instanceof AuthFileError ? err.message : String(err));
    }
    doc = JSON.parse(text) as TokenFile;
  }
  if (doc.tokens.some((t) => t.name === name)) fail(`${file} already has a token named ${name}; remove it first to replace it`);
  doc.tokens.push(entry);
  // Write then rename: a watching Berth never reads a half-written file.
  mkdirSync(dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(doc, null, 2) + '\n', { mode: 0o644 });
  renameSync(tmp, file);
}

process.stdout.write(`${token}\n${JSON.stringify(entry)}\n`);
process.stderr.write(
  'The first line is the token: give it to the client now, it is not stored anywhere.\n' +
    (values.file ? `The second line was added to ${values.file}.\n` : 'Add the second line to the "tokens" list of auth_tokens_file.\n'),
);
