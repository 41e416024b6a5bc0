// The cross-cutting HTTP behaviour every route shares: problem+json errors, health, docs, metrics.
import t, { type Test } from 'tap';
import type { InjectOptions } from 'fastify';
import { z } from 'zod';
import { buildApp } from '../src/app.ts';
import { parseConfig } from '../src/config.ts';
import { zodApp } from '../src/http/context.ts';
import { ProblemError } from '../src/http/problem.ts';
import { openSqliteStore } from '../src/store/sqlite.ts';
import { build } from './helper.ts';

/** An app with a few probe routes, to exercise the error handler through real requests. */
async function probeApp(t: Test) {
  const store = openSqliteStore(':memory:');
  const app = await buildApp({ config: parseConfig({ data_dir: ':memory:', body_limit: 2048 }), store, processMetrics: false, eventLoopDelay: () => 0 });
  const written: unknown[] = [];
  zodApp(app).post('/probe', {
    schema: { body: z.object({ size: z.number().int().positive(), name: z.string() }), querystring: z.object({ n: z.coerce.number().optional() }) },
  }, async (request) => {
    written.push(request.body);
    return { ok: true };
  });
  app.get('/boom', async () => { throw new Error('secret internals'); });
  app.get('/conflict', async () => { throw new ProblemError(409, 'no-valid-backend', 'No valid backend', 'nothing fits', { reasons: ['x'] }); });
  t.teardown(async () => { await app.close(); await store.close(); });
  await app.ready();
  return { app, written };
}

t.test('problem+json for every kind of refusal, and nothing written', async (t) => {
  const { app, written } = await probeApp(t);
  const cases: Array<{ name: string; req: InjectOptions; status: number; type: string; detail?: RegExp }> = [
    { name: 'validation', req: { method: 'POST', url: '/probe', payload: { size: -1 } }, status: 400, type: '/problems/validation', detail: /body\.size/ },
    { name: 'query validation', req: { method: 'POST', url: '/probe?n=abc', payload: { size: 1, name: 'a' } }, status: 400, type: '/problems/validation', detail: /querystring\.n/ },
    { name: 'malformed JSON', req: { method: 'POST', url: '/probe', payload: '{"size": 1,', headers: { 'content-type': 'application/json' } }, status: 400, type: '/problems/malformed-body' },
    { name: 'empty JSON body', req: { method: 'POST', url: '/probe', payload: '', headers: { 'content-type': 'application/json' } }, status: 400, type: '/problems/malformed-body' },
    { name: 'too large', req: { method: 'POST', url: '/probe', payload: JSON.stringify({ size: 1, name: 'x'.repeat(5000) }), headers: { 'content-type': 'application/json' } }, status: 413, type: '/problems/payload-too-large' },
    { name: 'wrong content type', req: { method: 'POST', url: '/probe', payload: 'size=1', headers: { 'content-type': 'application/x-www-form-urlencoded' } }, status: 415, type: '/problems/unsupported-media-type' },
    { name: 'bad percent-encoding', req: { method: 'GET', url: '/probe/%E0%A4%A' }, status: 400, type: '/problems/bad-url' },
    { name: 'unknown route', req: { method: 'GET', url: '/nowhere?x=1' }, status: 404, type: '/problems/not-found', detail: /GET \/nowhere$/ },
    { name: 'domain problem', req: { method: 'GET', url: '/conflict' }, status: 409, type: '/problems/no-valid-backend', detail: /nothing fits/ },
  ];
  for (const c of cases) {
    const res = await app.inject(c.req);
    t.equal(res.statusCode, c.status, `${c.name}: status`);
    t.match(res.headers['content-type'], /^application\/problem\+json/, `${c.name}: content type`);
    const body = res.json();
    t.equal(body.status, c.status, `${c.name}: body status`);
    t.equal(body.type, c.type, `${c.name}: type`);
    t.type(body.title, 'string');
    t.type(body.detail, 'string');
    if (c.detail) t.match(body.detail, c.detail, `${c.name}: detail`);
  }
  const v = await app.inject({ method: 'POST', url: '/probe', payload: { size: 1.5 } });
  t.same(v.json().errors.map((e: { path: string }) => e.path).sort(), ['body.name', 'body.size']);
  t.same(written, [], 'no refused request reached the handler');
  const ok = await app.inject({ method: 'POST', url: '/probe', payload: { size: 1, name: 'a' } });
  t.equal(ok.statusCode, 200);
  t.equal((await app.inject({ method: 'GET', url: '/conflict' })).json().reasons[0], 'x', 'extensions are kept');
});

t.test('an unexpected error is a generic 500 without internals', async (t) => {
  const { app } = await probeApp(t);
  const res = await app.inject({ method: 'GET', url: '/boom' });
  t.equal(res.statusCode, 500);
  t.match(res.headers['content-type'], /problem\+json/);
  t.notMatch(res.body, /secret internals/);
  t.notMatch(res.body, /at .*\.ts/);
});

t.test('health, readiness, docs, metrics', async (t) => {
  const app = await build(t);
  t.same((await app.inject('/healthz')).json(), { status: 'ok' });
  t.same((await app.inject('/readyz')).json(), { status: 'ready' });
  const docs = await app.inject('/docs/');
  t.equal(docs.statusCode, 200);
  t.match(docs.body, /swagger/i);
  const spec = (await app.inject('/openapi.json')).json();
  t.equal(spec.openapi, '3.1.0');
  t.ok(spec.paths['/healthz'] && spec.paths['/readyz'] && spec.paths['/metrics'], 'operations routes documented');
  await app.inject('/healthz');
  const metrics = await app.inject('/metrics');
  t.equal(metrics.statusCode, 200);
  t.match(metrics.headers['content-type'], /text\/plain/);
  t.match(metrics.body, /berth_http_requests_total\{route="\/healthz",method="GET",status="200"\} 2/);
  t.match(metrics.body, /berth_http_request_duration_seconds_bucket\{le="[0-9.]+",route="\/healthz"/);
  t.match(metrics.body, /# TYPE berth_decisions_total counter/);
  t.match(metrics.body, /# TYPE berth_decision_duration_seconds histogram/);
  t.match(metrics.body, /# TYPE berth_filter_rejections_total counter/);
  await app.inject('/no/such/path/12345');
  t.match((await app.inject('/metrics')).body, /route="unmatched",method="GET",status="404"/, 'unknown URLs share one label');
});

t.test('readiness turns false while closing; two apps do not collide on metrics', async (t) => {
  const a = await build(t);
  // The defaults, as main.ts builds it (the process's own event-loop sampler; /metrics is exempt from it).
  const b = await buildApp({ config: parseConfig({ data_dir: ':memory:' }), store: openSqliteStore(':memory:') });
  await b.ready();
  t.match((await b.inject('/metrics')).body, /process_cpu_user_seconds_total/, 'process metrics on by default');
  await b.close();
  t.equal((await a.inject('/readyz')).statusCode, 200);
});
