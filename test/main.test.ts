// The process as `npm start` runs it: built to JavaScript, configured from the environment, stopped by SIGTERM.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import t from 'tap';
import { buildDist, startBerth } from './process-helper.ts';

let mainJs = '';
t.before(async () => {
  mainJs = await buildDist((fn) => t.teardown(fn));
});

t.test('the built service serves, and SIGTERM exits 0 after closing the store', async (t) => {
  const { child, base, exited } = await startBerth(mainJs, { BERTH_DATA_DIR: t.testdir() });
  for (const path of ['/healthz', '/readyz', '/openapi.json', '/metrics', '/docs/']) {
    t.equal((await fetch(base + path)).status, 200, path);
  }
  const bad = await fetch(base + '/nowhere');
  t.equal(bad.status, 404);
  t.match(bad.headers.get('content-type'), /problem\+json/);
  const started = Date.now();
  child.kill('SIGTERM');
  const [code, signal] = await exited;
  t.equal(code, 0, 'exit code 0');
  t.equal(signal, null);
  t.ok(Date.now() - started < 5000, 'within a few seconds');
});

t.test('a bad option stops start-up with one line naming it', async (t) => {
  const result = await promisify(execFile)(process.execPath, [mainJs], {
    env: { ...process.env, BERTH_PORT: 'not-a-port', BERTH_DATA_DIR: ':memory:' },
  }).then(() => null, (err: { code: number; stderr: string }) => err);
  t.ok(result, 'exits non-zero');
  t.equal(result!.code, 2);
  t.match(result!.stderr, /^berth: configuration error: invalid option port: .*\n$/);
});
