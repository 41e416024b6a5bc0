// The process as `npm start` runs it: built to JavaScript, configured from the environment, stopped by SIGTERM.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';

const root = resolve(import.meta.dirname, '..');
const outDir = join(root, '.tap', `dist-test-${process.pid}`);

function listeningPort(child: ChildProcess): Promise<number> {
  return new Promise((resolvePort, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`no listen line: ${out}`)), 30_000);
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const m = /listening at http:\/\/127\.0\.0\.1:(\d+)/.exec(out);
      if (m) { clearTimeout(timer); resolvePort(Number(m[1])); }
    });
    child.once('exit', (code) => { clearTimeout(timer); reject(new Error(`exited ${code}: ${out}`)); });
  });
}

t.before(async () => {
  await promisify(execFile)(process.execPath, [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(root, 'tsconfig.build.json'), '--outDir', outDir]);
});

t.teardown(() => rmSync(outDir, { recursive: true, force: true }));

t.test('the built service serves, and SIGTERM exits 0 after closing the store', async (t) => {
  const dataDir = t.testdir();
  const child = spawn(process.execPath, [join(outDir, 'main.js')], {
    env: { ...process.env, BERTH_PORT: '0', BERTH_HOST: '127.0.0.1', BERTH_DATA_DIR: dataDir, BERTH_LOG_LEVEL: 'info', BERTH_CONFIG: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const port = await listeningPort(child);
  const base = `http://127.0.0.1:${port}`;
  for (const path of ['/healthz', '/readyz', '/openapi.json', '/metrics', '/docs/']) {
    t.equal((await fetch(base + path)).status, 200, path);
  }
  const bad = await fetch(base + '/nowhere');
  t.equal(bad.status, 404);
  t.match(bad.headers.get('content-type'), /problem\+json/);
  const exited = new Promise<[number | null, string | null]>((r) => child.once('exit', (code, signal) => r([code, signal])));
  const started = Date.now();
  child.kill('SIGTERM');
  const [code, signal] = await exited;
  t.equal(code, 0, 'exit code 0');
  t.equal(signal, null);
  t.ok(Date.now() - started < 5000, 'within a few seconds');
});

t.test('a bad option stops start-up with one line naming it', async (t) => {
  const result = await promisify(execFile)(process.execPath, [join(outDir, 'main.js')], {
    env: { ...process.env, BERTH_PORT: 'not-a-port', BERTH_DATA_DIR: ':memory:' },
  }).then(() => null, (err: { code: number; stderr: string }) => err);
  t.ok(result, 'exits non-zero');
  t.equal(result!.code, 2);
  t.match(result!.stderr, /^berth: configuration error: invalid option port: .*\n$/);
});
