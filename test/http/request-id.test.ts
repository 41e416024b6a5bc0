// Logs an operator can follow: every log line of a request carries its request id, a caller's X-Request-Id (or
// Placement's x-openstack-request-id) is honoured when safe and echoed, anything else is replaced by req-<uuid>.
// The log lines are read from a stream the test hands to pino.
import { Writable } from 'node:stream';
import t from 'tap';
import { build } from '../helper.ts';

interface Line { level: number; msg: string; reqId?: string; [key: string]: unknown }

function logSink(): { stream: Writable; lines: Line[] } {
  const lines: Line[] = [];
  let partial = '';
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      const parts = (partial + chunk.toString()).split('\n');
      partial = parts.pop()!;
      for (const p of parts) if (p.trim() !== '') lines.push(JSON.parse(p) as Line);
      done();
    },
  });
  return { stream, lines };
}

async function logged(t: Parameters<typeof build>[0]) {
  const sink = logSink();
  const app = await build(t, {}, undefined, undefined, { logger: { level: 'info', stream: sink.stream } });
  return { app, lines: sink.lines };
}

const GiB = 2 ** 30;
const UUID = /^req-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

t.test('an incoming X-Request-Id is echoed and on every log line of the request, the decision line included', async (t) => {
  const { app, lines } = await logged(t);
  await app.inject({
    method: 'PUT', url: '/backends/node1@lvm', headers: { 'x-request-id': 'setup-1' },
    payload: { pools: [{ pool_name: 'p', total_capacity_gb: 100, free_capacity_gb: 100, thin_provisioning_support: true }] },
  });
  const res = await app.inject({
    method: 'POST', url: '/volumes/schedule', headers: { 'x-request-id': 'trace-7f3a.b:c_d' }, payload: { id: 'vol-log', size: 10 },
  });
  t.equal(res.statusCode, 200);
  t.equal(res.headers['x-request-id'], 'trace-7f3a.b:c_d', 'echoed');
  const mine = lines.filter((l) => l.reqId === 'trace-7f3a.b:c_d');
  t.same(mine.map((l) => l.msg), ['decision'], 'a claimed decision is the request\'s one line, its audit record too; it carries the id');
  t.match(mine[0], { req: { method: 'POST', url: '/volumes/schedule' }, res: { statusCode: 200 }, responseTime: Number, decision: 'placed', chosen: String },
    'the decision line says what the request line would have');
  t.notOk(lines.some((l) => ['incoming request', 'decision', 'request completed'].includes(l.msg) && l.reqId === undefined),
    'no request line without an id');
  const refused = await app.inject({ method: 'POST', url: '/volumes/schedule', headers: { 'x-request-id': 'bad-1' }, payload: { size: -1 } });
  t.equal(refused.statusCode, 400);
  const badLines = lines.filter((l) => l.reqId === 'bad-1').map((l) => l.msg);
  t.same(badLines.filter((m) => m === 'request completed' || m === 'decision'), ['request completed'], 'a request refused before deciding still gets its request line, and no decision line');
  const nothing = await app.inject({ method: 'POST', url: '/volumes/schedule', headers: { 'x-request-id': 'full-1' }, payload: { size: 5000 } });
  t.equal(nothing.statusCode, 409);
  t.same(lines.filter((l) => l.reqId === 'full-1').map((l) => l.msg), ['decision'], 'a decided refusal is told by its decision line alone');
  t.match(lines.find((l) => l.reqId === 'full-1'), { res: { statusCode: 409 }, decision: 'no_valid_backend', audit: true, outcome: 409 });
  await app.inject({ method: 'GET', url: '/pools', headers: { 'x-request-id': 'other-1' } });
  t.same(lines.filter((l) => l.reqId === 'other-1').map((l) => l.msg), ['incoming request', 'request completed'], 'other routes keep Fastify\'s two lines');
});

t.test('x-openstack-request-id is honoured when X-Request-Id is absent; X-Request-Id wins when both come', async (t) => {
  const { app } = await logged(t);
  const os = await app.inject({ url: '/healthz', headers: { 'x-openstack-request-id': 'req-11111111-2222-4333-8444-555555555555' } });
  t.equal(os.headers['x-request-id'], 'req-11111111-2222-4333-8444-555555555555');
  const both = await app.inject({ url: '/healthz', headers: { 'x-openstack-request-id': 'os-1', 'x-request-id': 'plain-1' } });
  t.equal(both.headers['x-request-id'], 'plain-1');
  const placement = await app.inject({ url: '/', headers: { 'x-request-id': 'pl-1', 'openstack-api-version': 'placement 1.39' } });
  t.equal(placement.headers['x-request-id'], 'pl-1', 'Placement routes echo it too');
});

t.test('without an id, or with an unsafe one, Berth makes req-<uuid>; the refused value never reaches the log', async (t) => {
  const { app, lines } = await logged(t);
  const none = await app.inject({ url: '/healthz' });
  t.match(none.headers['x-request-id'], UUID, 'generated in Placement\'s format');
  const again = await app.inject({ url: '/healthz' });
  t.not(again.headers['x-request-id'], none.headers['x-request-id'], 'a new one per request');
  for (const unsafe of ['a'.repeat(129), 'has space', '{"msg":"forged"}', '-starts-with-dash', 'ünïcode', '']) {
    const res = await app.inject({ url: '/healthz', headers: { 'x-request-id': unsafe } });
    t.match(res.headers['x-request-id'], UUID, `refused: ${JSON.stringify(unsafe.slice(0, 20))}`);
  }
  t.equal((await app.inject({ url: '/healthz', headers: { 'x-request-id': 'a'.repeat(128) } })).headers['x-request-id'], 'a'.repeat(128), '128 characters are fine');
  const refusals = lines.filter((l) => l.msg.startsWith('request id refused'));
  t.equal(refusals.length, 6, 'each refusal is logged once');
  t.notOk(JSON.stringify(lines).includes('forged'), 'the refused value itself is not logged');
  t.same(refusals[2]!.refusedRequestIdLengths, { 'x-request-id': 16 }, 'only its length');
});

t.test('the replicas decision line names the volume, its size and every replica placed', async (t) => {
  const { app, lines } = await logged(t);
  for (const n of ['n1', 'n2']) {
    await app.inject({ method: 'PUT', url: `/nodes/${n}`, payload: { zone: n, disks: { d1: { path: '/d', storageMaximum: 100 * GiB, storageAvailable: 100 * GiB } } } });
  }
  const res = await app.inject({
    method: 'POST', url: '/replicas/schedule', headers: { 'x-request-id': 'rep-1' },
    payload: { volume: { name: 'pvc-log', size: 5 * GiB, numberOfReplicas: 2 } },
  });
  const names = (res.json() as { replicas: Array<{ name: string }> }).replicas.map((r) => r.name);
  const decision = lines.find((l) => l.msg === 'decision' && l.reqId === 'rep-1')!;
  t.match(decision, {
    domain: 'replicas', decision: 'placed', dryRun: false, volume: 'pvc-log', size: 5 * GiB, numberOfReplicas: 2,
    chosen: ['n1/d1', 'n2/d1'],
    replicas: [{ name: names[0], node: 'n1', disk: 'd1', size: 5 * GiB }, { name: names[1], node: 'n2', disk: 'd1', size: 5 * GiB }],
  });
  await app.inject({
    method: 'POST', url: '/replicas/schedule?dry_run=true', headers: { 'x-request-id': 'rep-2' },
    payload: { volume: { name: 'pvc-dry', size: GiB, numberOfReplicas: 1 } },
  });
  const dry = lines.find((l) => l.msg === 'decision' && l.reqId === 'rep-2')!;
  t.match(dry, { decision: 'dry_run', dryRun: true, volume: 'pvc-dry', replicas: [{ node: String, disk: 'd1', size: GiB }] });
  t.notOk('name' in (dry.replicas as Array<Record<string, unknown>>)[0]!, 'a dry run names no replica');
});
