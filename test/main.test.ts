// The process as `npm start` runs it: built to JavaScript, configured from the environment, stopped by SIGTERM.
import { execFile } from 'node:child_process';
import { connect } from 'node:net';
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
  child.kill('SIGTERM');
  const [code, signal] = await exited;
  t.equal(code, 0, 'exit code 0 (a shutdown stuck for 10 s would exit 1)');
  t.equal(signal, null);
});

t.test('SIGTERM lets an in-flight request finish and keeps what it wrote', async (t) => {
  const dataDir = t.testdir();
  const first = await startBerth(mainJs, { BERTH_DATA_DIR: dataDir });
  const body = JSON.stringify({
    volume_backend_name: 'lvm',
    pools: [{ pool_name: 'p1', total_capacity_gb: 100, free_capacity_gb: 100, thin_provisioning_support: true }],
  });
  const socket = connect(first.port, '127.0.0.1');
  let answer = '';
  socket.on('data', (d) => { answer += d.toString(); });
  const closed = new Promise((r) => socket.once('close', r));
  socket.write(`PUT /backends/inflight@lvm HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`);
  socket.write(body.slice(0, 20));
  // Events, not time: Fastify logs the request once its headers are in; the body is still half-way.
  await first.logLine(/^(?=.*"msg":"incoming request")(?=.*"url":"\/backends\/inflight@lvm")/);
  first.child.kill('SIGTERM');
  await first.logLine(/shutting down/);
  socket.end(body.slice(20));
  await closed;
  t.match(answer, /^HTTP\/1\.1 200 /, 'the in-flight request was answered');
  t.same(await first.exited, [0, null], 'then the process exited 0');
  const second = await startBerth(mainJs, { BERTH_DATA_DIR: dataDir });
  const pools = (await (await fetch(`${second.base}/pools`)).json()) as { pools: Array<{ name: string }> };
  t.same(pools.pools.map((p) => p.name), ['inflight@lvm#p1'], 'and what it wrote is there after a restart');
  second.child.kill('SIGTERM');
  await second.exited;
});

t.test("the container's healthcheck asks /readyz on the configured port", async (t) => {
  const healthcheck = mainJs.replace(/main\.js$/, 'healthcheck.js');
  const check = (port: number) => promisify(execFile)(process.execPath, [healthcheck], {
    env: { ...process.env, BERTH_PORT: String(port), BERTH_HOST: '0.0.0.0', BERTH_CONFIG: '' },
  }).then(() => 0, (err: { code: number }) => err.code);
  const berth = await startBerth(mainJs, { BERTH_DATA_DIR: ':memory:' });
  t.equal(await check(berth.port), 0, 'ready: exit 0');
  berth.child.kill('SIGTERM');
  await berth.exited;
  t.equal(await check(berth.port), 1, 'nothing listening: exit 1');
});

t.test('a bad option stops start-up with one line naming it', async (t) => {
  const result = await promisify(execFile)(process.execPath, [mainJs], {
    env: { ...process.env, BERTH_PORT: 'not-a-port', BERTH_DATA_DIR: ':memory:' },
  }).then(() => null, (err: { code: number; stderr: string }) => err);
  t.ok(result, 'exits non-zero');
  t.equal(result!.code, 2);
  t.match(result!.stderr, /^berth: configuration error: invalid option port: .*\n$/);
});
