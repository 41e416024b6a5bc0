// Back-pressure and time limits, over real sockets. No timer and no clock in the test: the server's own limits end
// every exchange, and back-pressure reads an injected event-loop delay.
import { connect } from 'node:net';
import t from 'tap';
import { RETRY_AFTER_SECONDS, sampleEventLoopDelay, windowDelayMs } from '../../src/http/limits.ts';
import { build } from '../helper.ts';

/** Sends raw bytes and resolves with everything received once the server closes the connection (the test has no timer). */
function rawRequest(port: number, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let out = '';
    socket.on('data', (d) => { out += d.toString(); });
    socket.on('close', () => resolve(out));
    socket.on('error', reject);
    socket.write(text);
  });
}

async function listen(app: Awaited<ReturnType<typeof build>>): Promise<number> {
  await app.listen({ port: 0, host: '127.0.0.1' });
  return (app.server.address() as { port: number }).port;
}

t.test('headers that do not arrive in time get 408 problem+json; a stalled body closes the connection', async (t) => {
  const app = await build(t, { request_timeout_ms: 300 });
  const port = await listen(app);
  const answer = await rawRequest(port, 'GET /healthz HTTP/1.1\r\nHost: x\r\n');
  t.match(answer, /^HTTP\/1\.1 408 Request Timeout\r\n/);
  t.match(answer, /Content-Type: application\/problem\+json/);
  t.match(answer, /"type":"\/problems\/request-timeout"/);
  const stalled = await rawRequest(port, 'POST /volumes/schedule HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"partial":');
  t.equal(stalled, '', 'no answer to half a request, and the server closed the connection');
  t.equal((await fetch(`http://127.0.0.1:${port}/healthz`)).status, 200, 'the server carries on');
});

t.test('oversized headers get 431 problem+json', async (t) => {
  const app = await build(t);
  const port = await listen(app);
  const answer = await rawRequest(port, `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20000)}\r\n\r\n`);
  t.match(answer, /^HTTP\/1\.1 431 /);
  t.match(answer, /"status":431/);
});

t.test('when the event loop lags, new work gets 503 with Retry-After; probes and metrics still answer', async (t) => {
  // The lag is an injected signal: the test decides when the loop "lags", the machine's load does not.
  let lagMs = 0;
  const app = await build(t, { max_event_loop_delay_ms: 100 }, undefined, undefined, { eventLoopDelay: () => lagMs });
  const port = await listen(app);
  const base = `http://127.0.0.1:${port}`;
  t.equal((await fetch(`${base}/openapi.json`)).status, 200, 'fine before the lag');
  lagMs = 100;
  t.equal((await fetch(`${base}/openapi.json`)).status, 200, 'exactly at the limit is still fine');

  lagMs = 101;
  const shed = await fetch(`${base}/openapi.json`);
  t.equal(shed.status, 503);
  t.equal(shed.headers.get('retry-after'), String(RETRY_AFTER_SECONDS));
  t.match(shed.headers.get('content-type'), /problem\+json/);
  const problem = (await shed.json()) as { type: string; detail: string };
  t.equal(problem.type, '/problems/overloaded');
  t.match(problem.detail, /event loop delay 101 ms, limit 100 ms/);
  for (const probe of ['/healthz', '/readyz', '/metrics']) t.equal((await fetch(base + probe)).status, 200, `${probe} is exempt`);
  const placement = await fetch(`${base}/resource_providers`, { headers: { 'openstack-api-version': 'placement 1.39' } });
  t.equal(placement.status, 503, 'Placement routes shed load too');
  t.match(await placement.json(), { errors: [{ status: 503 }] }, 'in Placement\'s error shape');
  const bad = await fetch(`${base}/volumes/schedule`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"size": 1}' });
  t.equal(bad.status, 503, 'scheduling is refused before any work is done');

  lagMs = 0;
  t.equal((await fetch(`${base}/openapi.json`)).status, 200, 'recovers once the loop is calm');
  t.same(((await (await fetch(`${base}/volumes`)).json()) as { volumes: unknown[] }).volumes, [], 'nothing was claimed while shedding');
});

t.test('max_event_loop_delay_ms 0 turns back-pressure off', async (t) => {
  const app = await build(t, { max_event_loop_delay_ms: 0 }, undefined, undefined, { eventLoopDelay: () => Infinity });
  t.equal((await app.inject({ method: 'GET', url: '/openapi.json' })).statusCode, 200);
});

t.test('the process sampler: the lag of a window is its mean turn delay above the timer resolution', async (t) => {
  t.equal(windowDelayMs(150e6), 140, '150 ms mean turn → 140 ms lag');
  t.equal(windowDelayMs(4e6), 0, 'turns faster than the resolution are no lag');
  t.equal(windowDelayMs(Number.NaN), Infinity, 'a window without a single turn is infinite lag');
  const sampler = sampleEventLoopDelay(1000);
  t.equal(sampler.read(), 0, 'nothing is measured before the first window closes');
  sampler.stop();
});
