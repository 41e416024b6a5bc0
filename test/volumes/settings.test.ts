// GET/PUT /settings/volumes through HTTP: the start-up options as the initial values, validation as at start-up,
// the next decision, get_pools, the capacity metrics and the stale window using a change at once, If-Match, history
// with who changed it, and a change surviving a restart.
import type { FastifyInstance } from 'fastify';
import t from 'tap';
import { SqliteStore } from '../../src/store/sqlite.ts';
import { build } from '../helper.ts';
import { bearer, TOKENS, writeTokens } from '../http/auth-helper.ts';

async function put(app: FastifyInstance, host: string, report: unknown, headers: Record<string, string> = {}) {
  const r = await app.inject({ method: 'PUT', url: `/backends/${host}`, payload: report as object, headers });
  if (r.statusCode !== 200) throw new Error(r.body);
}
const settingsPut = (app: FastifyInstance, body: unknown, headers: Record<string, string> = {}) =>
  app.inject({ method: 'PUT', url: '/settings/volumes', payload: body as object, headers });
async function detail(app: FastifyInstance, name: string) {
  const pools = (await app.inject({ method: 'GET', url: '/pools?detail=true' })).json() as {
    pools: Array<{ name: string; capabilities: Record<string, any> }>;
  };
  return pools.pools.find((p) => p.name === name)!.capabilities;
}

/** A thin pool with 100 GiB reserved-free total and a thick one with more physical room. */
const THIN = { pool_name: 'thin', total_capacity_gb: 100, free_capacity_gb: 100, thin_provisioning_support: true };
const THICK = { pool_name: 'thick', total_capacity_gb: 300, free_capacity_gb: 300, thick_provisioning_support: true };

t.test('the start-up options are the initial values', async (t) => {
  const app = await build(t, { max_over_subscription_ratio: 3, scheduler_default_weighers: ['CapacityWeigher', 'AllocatedCapacityWeigher'] });
  const r = await app.inject({ method: 'GET', url: '/settings/volumes' });
  t.equal(r.statusCode, 200);
  t.equal(r.headers.etag, '"0"');
  t.same(r.json(), {
    generation: 0,
    settings: {
      max_over_subscription_ratio: 3, over_provisioning_calculation: 'cinder',
      scheduler_default_filters: ['AvailabilityZoneFilter', 'CapacityFilter', 'CapabilitiesFilter'],
      scheduler_default_weighers: ['CapacityWeigher', 'AllocatedCapacityWeigher'],
      capacity_weight_multiplier: 1, allocated_capacity_weight_multiplier: -1, storage_availability_zone: 'nova',
      stats_stale_after_seconds: 0,
    },
  });
  t.same((await app.inject({ method: 'GET', url: '/settings/volumes/history' })).json(), { history: [] });
  t.equal((await app.inject({ method: 'GET', url: '/settings/nowhere' })).statusCode, 400, 'the dialect is one of the three');
});

t.test('a changed ratio: the next decision, get_pools and the capacity metrics use it at once', async (t) => {
  const app = await build(t);
  await put(app, 'h@a', { pools: [THIN] });
  await put(app, 'h@b', { pools: [THICK] });
  // Ratio 20: the thin pool offers 100 × 20 = 2000 GiB, more than the thick pool's 300.
  const before = await app.inject({ method: 'POST', url: '/volumes/schedule?dry_run=true', payload: { size: 10 } });
  t.equal(before.json().pool, 'h@a#thin');
  t.equal((await detail(app, 'h@a#thin')).max_over_subscription_ratio, 20);

  const r = await settingsPut(app, { max_over_subscription_ratio: '2' });
  t.equal(r.statusCode, 200, r.body);
  t.equal(r.json().settings.max_over_subscription_ratio, 2, 'coerced as the start-up option is');
  t.equal(r.headers.etag, `"${r.json().generation}"`);
  const caps = await detail(app, 'h@a#thin');
  t.equal(caps.max_over_subscription_ratio, 2);
  t.same(caps.current, { free_capacity_gb: 100, provisioned_capacity_gb: 0, virtual_free_capacity_gb: 200 });
  const after = await app.inject({ method: 'POST', url: '/volumes/schedule?dry_run=true', payload: { size: 10 } });
  t.equal(after.json().pool, 'h@b#thick', 'the thick pool now has more room (300 > 200)');
  const metrics = (await app.inject({ method: 'GET', url: '/metrics' })).body;
  t.match(metrics, 'berth_pool_max_over_subscription_ratio{pool="h@a#thin",backend="h@a"} 2\n');
  t.match(metrics, `berth_pool_virtual_free_capacity_bytes{pool="h@a#thin",backend="h@a"} ${200 * 2 ** 30}\n`);

  // A thin request of 250 GiB fits nowhere at 2; 'standard' and 'auto' change the answer again.
  t.equal((await app.inject({ method: 'POST', url: '/volumes/schedule?dry_run=true', payload: { size: 301 } })).statusCode, 409);
  t.equal((await settingsPut(app, { max_over_subscription_ratio: 'auto' })).statusCode, 200);
  t.equal((await detail(app, 'h@a#thin')).max_over_subscription_ratio, 20, "'auto' with nothing provisioned is 20");
  t.equal((await app.inject({ method: 'POST', url: '/volumes/schedule?dry_run=true', payload: { size: 301 } })).json().pool, 'h@a#thin');
});

t.test('the calculation, filters, weighers, multipliers, zone and stale window change the next decision', async (t) => {
  let now = Date.parse('2026-12-01T09:00:00Z');
  const app = await build(t, {}, undefined, () => now);
  await put(app, 'h@a', { pools: [{ ...THIN, reserved_percentage: 10 }] });
  await put(app, 'h@b', { availability_zone: 'az2', pools: [THICK] });
  const schedule = (body: object) => app.inject({ method: 'POST', url: '/volumes/schedule?dry_run=true', payload: body });

  // Cinder: (100 − 10) × 20 = 1800; standard: 100 × 0.9 × 20 = 1800 too, but a provisioned ratio differs: use virtual free.
  t.equal((await settingsPut(app, { over_provisioning_calculation: 'standard' })).statusCode, 200);
  t.equal((await detail(app, 'h@a#thin')).current.virtual_free_capacity_gb, 1800);
  // Spread by capacity → stack (a negative multiplier prefers the least free space).
  t.equal((await schedule({ size: 1 })).json().pool, 'h@a#thin');
  t.equal((await settingsPut(app, { capacity_weight_multiplier: -1 })).statusCode, 200);
  t.equal((await schedule({ size: 1 })).json().pool, 'h@b#thick');
  t.equal((await settingsPut(app, { capacity_weight_multiplier: 1, scheduler_default_weighers: [] })).statusCode, 200);
  t.equal((await schedule({ size: 1 })).json().pool, 'h@a#thin', 'no weigher: the first pool in report order');

  // The default zone: h@a reports none, so it moves with storage_availability_zone.
  t.equal((await schedule({ size: 1, availability_zone: 'az1' })).statusCode, 409);
  t.equal((await settingsPut(app, { storage_availability_zone: 'az1' })).statusCode, 200);
  t.equal((await schedule({ size: 1, availability_zone: 'az1' })).json().pool, 'h@a#thin');
  t.match((await app.inject({ method: 'GET', url: '/backends' })).json().backends, [{ backend: 'h@a', availability_zone: 'az1' }, { availability_zone: 'az2' }]);
  t.equal((await settingsPut(app, { scheduler_default_filters: 'CapacityFilter' })).statusCode, 200, 'a list as at start-up (comma separated)');
  t.equal((await schedule({ size: 1, availability_zone: 'nowhere' })).statusCode, 200, 'without AvailabilityZoneFilter the zone is not checked');

  // The stale window: reports older than it are skipped (and the stale-reporter gauge says the window).
  now += 120_000;
  t.equal((await settingsPut(app, { stats_stale_after_seconds: 60 })).statusCode, 200);
  const stale = await schedule({ size: 1 });
  t.equal(stale.statusCode, 409);
  t.match(stale.json().rejected, [{ filter: 'StaleStatsFilter' }, { filter: 'StaleStatsFilter' }]);
  t.match((await app.inject({ method: 'GET', url: '/metrics' })).body, /berth_stats_stale_after_seconds\{domain="volumes"\} 60\n/);
});

t.test('bad values are refused as at start-up, naming the setting and what is allowed; nothing changes', async (t) => {
  const app = await build(t);
  const before = (await app.inject({ method: 'GET', url: '/settings/volumes' })).json();
  for (const [body, pattern] of [
    [{ max_over_subscription_ratio: 0.5 }, /max_over_subscription_ratio: must be a number >= 1 or "auto"/],
    [{ max_over_subscription_ratio: 'lots' }, /max_over_subscription_ratio/],
    [{ over_provisioning_calculation: 'fast' }, /over_provisioning_calculation: .*\(allowed: cinder, standard\)/],
    [{ scheduler_default_filters: ['CapacityFilter', 'MagicFilter'] }, /scheduler_default_filters\.1: .*\(allowed: AvailabilityZoneFilter, CapacityFilter, CapabilitiesFilter\)/],
    [{ scheduler_default_weighers: ['GoodnessWeigher'] }, /scheduler_default_weighers\.0: .*allowed: CapacityWeigher, AllocatedCapacityWeigher/],
    [{ capacity_weight_multiplier: 'x' }, /capacity_weight_multiplier/],
    [{ storage_availability_zone: '' }, /storage_availability_zone/],
    [{ stats_stale_after_seconds: -1 }, /stats_stale_after_seconds/],
    [{ max_over_subscription_ratio: 2, enable_isolated_aggregate_filtering: true }, /enable_isolated_aggregate_filtering: unknown volumes setting/],
  ] as const) {
    const r = await settingsPut(app, body);
    t.equal(r.statusCode, 400, JSON.stringify(body));
    t.match(r.json().detail, pattern);
  }
  t.same((await app.inject({ method: 'GET', url: '/settings/volumes' })).json(), before, 'nothing changed');
  t.same((await app.inject({ method: 'GET', url: '/settings/volumes/history' })).json(), { history: [] });
});

t.test('If-Match: the generation read, else 412 and nothing changed', async (t) => {
  const app = await build(t);
  const first = await settingsPut(app, { max_over_subscription_ratio: 4 }, { 'if-match': '"0"' });
  t.equal(first.statusCode, 200);
  const stale = await settingsPut(app, { max_over_subscription_ratio: 5 }, { 'if-match': '"0"' });
  t.equal(stale.statusCode, 412);
  t.match(stale.json(), { generation: first.json().generation });
  t.equal((await app.inject({ method: 'GET', url: '/settings/volumes' })).json().settings.max_over_subscription_ratio, 4);
  t.equal((await settingsPut(app, { max_over_subscription_ratio: 5 }, { 'if-match': first.headers.etag as string })).statusCode, 200);
});

t.test('a change survives a restart (the stored value wins over the start-up option), history included', async (t) => {
  const dir = t.testdir();
  const store1 = new SqliteStore(dir);
  const app1 = await build(t, { max_over_subscription_ratio: 20 }, store1.async());
  await put(app1, 'h@a', { pools: [THIN] });
  t.equal((await settingsPut(app1, { max_over_subscription_ratio: 1.5, over_provisioning_calculation: 'standard' })).statusCode, 200);
  const settings1 = (await app1.inject({ method: 'GET', url: '/settings/volumes' })).json();
  await app1.close();
  store1.close();

  const store2 = new SqliteStore(dir);
  const app2 = await build(t, { max_over_subscription_ratio: 20 }, store2.async());
  t.same((await app2.inject({ method: 'GET', url: '/settings/volumes' })).json(), settings1);
  const caps = await detail(app2, 'h@a#thin');
  t.equal(caps.max_over_subscription_ratio, 1.5, 'the pools were rebuilt with the stored ratio');
  t.equal(caps.current.virtual_free_capacity_gb, 150);
  t.match((await app2.inject({ method: 'GET', url: '/settings/volumes/history' })).json().history, [
    { by: null, changes: { max_over_subscription_ratio: { from: 20, to: 1.5 }, over_provisioning_calculation: { from: 'cinder', to: 'standard' } } },
  ]);
});

t.test('with authentication: readers read, admins change, and the history names the token', async (t) => {
  const app = await build(t, { auth_tokens_file: writeTokens(t.testdir()) });
  t.equal((await app.inject({ method: 'GET', url: '/settings/volumes', headers: bearer(TOKENS.reader) })).statusCode, 200);
  t.equal((await settingsPut(app, { max_over_subscription_ratio: 2 }, bearer(TOKENS.scheduler))).statusCode, 403);
  t.equal((await settingsPut(app, { max_over_subscription_ratio: 2 }, bearer(TOKENS.admin))).statusCode, 200);
  const history = (await app.inject({ method: 'GET', url: '/settings/volumes/history', headers: bearer(TOKENS.reader) })).json().history;
  t.match(history, [{ by: 'admin', changes: { max_over_subscription_ratio: { from: 20, to: 2 } } }]);
  t.match(history[0].at, /^\d{4}-\d\d-\d\dT/);
});
