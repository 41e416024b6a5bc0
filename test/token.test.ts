// npm run token: a new random token printed once, its entry, and --file adding it where a running Berth reads it.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { build } from './helper.ts';
import { root } from './process-helper.ts';

const run = (args: string[]) =>
  promisify(execFile)(process.execPath, ['--import', 'tsx', join(root, 'scripts', 'token.ts'), ...args], { cwd: root })
    .then((r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }), (e: { code: number; stdout: string; stderr: string }) => e);

t.test('prints a fresh 32-byte token and the entry holding its digest', async (t) => {
  const a = await run(['--name', 'nova-scheduler', '--role', 'scheduler']);
  const b = await run(['--name', 'nova-scheduler', '--role', 'scheduler']);
  t.equal(a.code, 0);
  const [token, entryLine] = a.stdout.trimEnd().split('\n');
  t.match(token, /^[A-Za-z0-9_-]{43}$/, 'base64url of 32 random bytes');
  t.equal(Buffer.from(token!, 'base64url').length, 32);
  t.not(b.stdout.split('\n')[0], token, 'a new token each time');
  t.same(JSON.parse(entryLine!), { name: 'nova-scheduler', sha256: createHash('sha256').update(token!).digest('hex'), roles: ['scheduler'] });
  t.notOk(a.stderr.includes(token!), 'the explanation does not repeat it');
});

t.test('--file adds the entry; Berth accepts the token with the roles given', async (t) => {
  const file = join(t.testdir(), 'tokens.json');
  const first = await run(['--name', 'ops', '--role', 'reporter,scheduler', '--file', file]);
  const second = await run(['--name', 'viewer', '--role', 'reader', '--file', file]);
  t.equal(first.code, 0);
  t.equal(second.code, 0);
  t.same(JSON.parse(readFileSync(file, 'utf8')).tokens.map((e: { name: string }) => e.name), ['ops', 'viewer']);
  const app = await build(t, { auth_tokens_file: file, max_event_loop_delay_ms: 0 });
  const ops = first.stdout.split('\n')[0]!;
  const as = (token: string) => ({ authorization: `Bearer ${token}` });
  t.equal((await app.inject({ method: 'PUT', url: '/backends/h@x', headers: as(ops), payload: { pools: [] } })).statusCode, 200, 'reporter');
  t.equal((await app.inject({ method: 'DELETE', url: '/volumes/v', headers: as(ops) })).statusCode, 404, 'scheduler');
  t.equal((await app.inject({ method: 'DELETE', url: '/backends/h@x', headers: as(second.stdout.split('\n')[0]!) })).statusCode, 403, 'reader only');
});

t.test('refuses what would not work, with one line', async (t) => {
  const file = join(t.testdir(), 'tokens.json');
  const cases: Array<[string[], RegExp]> = [
    [['--role', 'reader'], /--name is required/],
    [['--name', 'x'], /--role is required: one or more of reader, reporter, scheduler, admin/],
    [['--name', 'x', '--role', 'root'], /unknown role\(s\) root/],
    [['--name', 'x', '--role', 'reader', '--colour', 'red'], /Unknown option '--colour'/],
  ];
  for (const [args, message] of cases) {
    const r = await run(args);
    t.equal(r.code, 2, args.join(' '));
    t.match(r.stderr, message);
    t.equal(r.stdout, '', 'no token printed');
  }
  await run(['--name', 'x', '--role', 'reader', '--file', file]);
  t.match((await run(['--name', 'x', '--role', 'admin', '--file', file])).stderr, /already has a token named x/);
  writeFileSync(file, '{"tokens": [');
  t.match((await run(['--name', 'y', '--role', 'admin', '--file', file])).stderr, /is not valid JSON/, 'a broken file is not overwritten');
  t.equal(readFileSync(file, 'utf8'), '{"tokens": [');
});
