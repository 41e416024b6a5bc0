// GET/PUT /settings/placement: Placement's runtime settings change the next allocation-candidates decision without
// a restart, are validated as the start-up options are (400 naming the setting, nothing changed) and survive a
// restart on the same data directory.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.ts';
import { parseConfig } from '../../src/config.ts';
import { openSqliteStore } from '../../src/store/sqlite.ts';
import type { AsyncStore } from '../../src/store/store.ts';
import { call, createProviders, u } from './fixtures.ts';

/** An app on `store` (src/app.ts serves the /settings routes for every dialect), closed when the test ends. */
async function build(t: { teardown(fn: () => unknown): void }, config: Record<string, unknown> = {}, store: AsyncStore = openSqliteStore(':memory:')): Promise<FastifyInstance> {
  const app = await buildApp({ config: parseConfig({ data_dir: ':memory:', ...config }), store, processMetrics: false, eventLoopDelay: () => 0 });
  t.teardown(async () => {
    await app.close();
    await store.close();
  });
  await app.ready();
  return app;
}

const BIG = u('big');
const SMALL = u('small');
const AGG = u('agg-licensed');

async function fleet(app: FastifyInstance) {
  await createProviders(app, [
    { uuid: BIG, inventories: { VCPU: 16 }, aggregates: [AGG] },
    { uuid: SMALL, inventories: { VCPU: 4 } },
  ]);
  const r = await call(app, 'PUT', `/aggregates/${AGG}/metadata`, { metadata: { 'trait:CUSTOM_LICENSED': 'required' } });
  if (r.status !== 200) throw new Error(JSON.stringify(r.body));
}

const first = async (app: FastifyInstance) => {
  const r = await call(app, 'GET', '/allocation_candidates?resources=VCPU:1&limit=1');
  return Object.keys(r.body.allocation_requests[0]?.allocations ?? {})[0];
};
const put = (app: FastifyInstance, body: unknown) =>
  app.inject({ method: 'PUT', url: '/settings/placement', payload: body as object });

t.test('the start-up options until a change; each change decides the next request', async (t) => {
  const app = await build(t);
  await fleet(app);
  let r = await app.inject({ method: 'GET', url: '/settings/placement' });
  t.equal(r.statusCode, 200);
  t.same(r.json(), {
    generation: 0,
    settings: { randomize_allocation_candidates: false, enable_isolated_aggregate_filtering: false, free_capacity_weight_multiplier: 1 },
  });
  t.equal(await first(app), BIG, 'most free capacity first');

  r = await put(app, { free_capacity_weight_multiplier: '-1' });
  t.equal(r.statusCode, 200);
  t.equal(r.json().settings.free_capacity_weight_multiplier, -1, 'coerced as a start-up number is');
  t.equal(await first(app), SMALL, 'a negative multiplier packs: least free first');
  let explain = (await call(app, 'GET', '/allocation_candidates?resources=VCPU:1&explain=true')).body.explain;
  t.same(explain.weighed.map((w: { weighers: Record<string, { normalized: number }>; weight: number }) => w.weight), [0, -1]);

  t.equal((await put(app, { enable_isolated_aggregate_filtering: 'true' })).statusCode, 200);
  t.same((await call(app, 'GET', '/allocation_candidates?resources=VCPU:1')).body.allocation_requests.map(
    (a: { allocations: object }) => Object.keys(a.allocations)[0]), [SMALL], 'the licensed aggregate is isolated now');
  explain = (await call(app, 'GET', '/allocation_candidates?resources=VCPU:1&explain=true')).body.explain;
  t.same(explain.isolate_aggregates.map((a: { uuid: string }) => a.uuid), [AGG]);

  t.equal((await put(app, { randomize_allocation_candidates: true, enable_isolated_aggregate_filtering: false })).statusCode, 200);
  explain = (await call(app, 'GET', '/allocation_candidates?resources=VCPU:1&explain=true')).body.explain;
  t.equal(explain.weighed, 'randomized');
  const history = (await app.inject({ method: 'GET', url: '/settings/placement/history' })).json();
  t.same(history.history.map((h: { changes: object }) => Object.keys(h.changes)), [
    ['free_capacity_weight_multiplier'], ['enable_isolated_aggregate_filtering'],
    ['randomize_allocation_candidates', 'enable_isolated_aggregate_filtering'],
  ]);
});

t.test('bad settings: 400 naming the setting and what is allowed, nothing changed', async (t) => {
  const app = await build(t);
  await fleet(app);
  const before = (await app.inject({ method: 'GET', url: '/settings/placement' })).json();
  for (const [body, pattern] of [
    [{ free_capacity_weight_multiplier: 'x' }, /free_capacity_weight_multiplier/],
    [{ free_capacity_weight_multiplier: 'Infinity' }, /free_capacity_weight_multiplier: .*Infinity/],
    [{ randomize_allocation_candidates: 'maybe' }, /randomize_allocation_candidates/],
    [{ limit: 5 }, /limit: unknown placement setting/],
  ] as const) {
    const r = await put(app, body);
    t.equal(r.statusCode, 400, JSON.stringify(body));
    t.match(r.json().detail, pattern);
  }
  t.same((await app.inject({ method: 'GET', url: '/settings/placement' })).json(), before);
  t.equal(await first(app), BIG);
  const stale = await app.inject({ method: 'PUT', url: '/settings/placement', headers: { 'if-match': '"7"' }, payload: { free_capacity_weight_multiplier: 2 } });
  t.equal(stale.statusCode, 412, 'If-Match with another generation');
  t.same((await app.inject({ method: 'GET', url: '/settings/placement' })).json(), before);
});

t.test('a change survives a restart on the same data directory', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'berth-placement-settings-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  {
    const closers: Array<() => unknown> = [];
    const app = await build({ teardown: (fn) => closers.push(fn) }, { data_dir: dir }, openSqliteStore(dir));
    await fleet(app);
    t.equal((await put(app, { free_capacity_weight_multiplier: -2 })).statusCode, 200);
    for (const close of closers) await close();
  }
  const store = openSqliteStore(dir);
  const app = await build(t, { data_dir: dir }, store);
  const r = (await app.inject({ method: 'GET', url: '/settings/placement' })).json();
  t.equal(r.settings.free_capacity_weight_multiplier, -2);
  t.ok(r.generation > 0);
  t.equal(await first(app), SMALL, 'the restarted service decides with the stored setting');
});
