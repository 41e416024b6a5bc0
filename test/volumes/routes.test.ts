// The volumes routes through the HTTP interface: ingest, get_pools, schedule/claim, volumes, restart, stale stats,
// metrics, and the seed's worked examples.
import type { FastifyInstance } from 'fastify';
import t from 'tap';
import { SqliteStore } from '../../src/store/sqlite.ts';
import { build } from '../helper.ts';

/** The seed's pool: 1 TB = 1024 GiB = 400 (Cinder) + 124 (created outside) + 500 free; provisioned 924 GiB. */
const SEED_POOL = {
  pool_name: 'pool1',
  total_capacity_gb: 1024,
  free_capacity_gb: 500,
  provisioned_capacity_gb: 924,
  reserved_percentage: 0,
  max_over_subscription_ratio: 'auto',
  thin_provisioning_support: true,
  thick_provisioning_support: true,
};

async function put(app: FastifyInstance, host: string, report: unknown) {
  return app.inject({ method: 'PUT', url: `/backends/${host}`, payload: report as object });
}
async function schedule(app: FastifyInstance, body: unknown, query = '') {
  return app.inject({ method: 'POST', url: `/volumes/schedule${query}`, payload: body as object });
}
async function detail(app: FastifyInstance, name: string) {
  const pools = (await app.inject({ method: 'GET', url: '/pools?detail=true' })).json() as {
    pools: Array<{ name: string; capabilities: Record<string, any> }>;
  };
  return pools.pools.find((p) => p.name === name)!.capabilities;
}

t.test('seed: the 1 TB pool, the auto ratio and both formulas', async (t) => {
  const app = await build(t);
  const r = await put(app, 'node1@lvm', { volume_backend_name: 'lvm', pools: [SEED_POOL] });
  t.equal(r.statusCode, 200);
  // ratio = 1 + provisioned / (total − free + 1) = 1 + 924 / 525
  t.equal(r.json().pools[0].max_over_subscription_ratio, 1 + 924 / (1024 - 500 + 1));
  t.equal(r.json().pools[0].max_over_subscription_ratio, 2.76);
  // Cinder 21 thin: (1024 − 0) × 2.76 − 924 = 1902.24 GiB of virtual free space (sizes are whole GiB).
  const dry = await schedule(app, { size: 1902 }, '?dry_run=true&explain=true');
  t.equal(dry.statusCode, 200);
  t.equal(dry.json().explain.weighed[0].weighers.CapacityWeigher.raw, 1902.24);
  t.equal((await schedule(app, { size: 1903 }, '?dry_run=true')).statusCode, 409);
  // Thick: min(free 500, 1024 − 924 = 100) = 100.
  const thick = { size: 100, volume_type: { extra_specs: { 'provisioning:type': 'thick' } } };
  t.equal((await schedule(app, thick, '?dry_run=true')).statusCode, 200);
  t.equal((await schedule(app, { ...thick, size: 101 }, '?dry_run=true')).statusCode, 409);

  // The auto ratio is recomputed at every report; without provisioned_capacity_gb it uses Berth's allocated figure.
  const { provisioned_capacity_gb: _omit, ...noProvisioned } = SEED_POOL;
  const a = await put(app, 'node1@lvm', { volume_backend_name: 'lvm', pools: [noProvisioned] });
  t.equal(a.json().pools[0].max_over_subscription_ratio, 20, 'nothing provisioned: INITIAL_AUTO_MOSR 20');
  t.equal((await schedule(app, { id: 'v1', size: 100 })).statusCode, 200);
  const b = await put(app, 'node1@lvm', { volume_backend_name: 'lvm', pools: [noProvisioned] });
  t.equal(b.json().pools[0].max_over_subscription_ratio, 1 + 100 / (1024 - 500 + 1), 'allocated 100 → 1 + 100/525');

  // Standard: provisioned + size ≤ total × (1 − reserved/100) × ratio.
  const std = await build(t, { over_provisioning_calculation: 'standard' });
  await put(std, 'node1@lvm', { pools: [{ ...SEED_POOL, reserved_percentage: 10, max_over_subscription_ratio: 2 }] });
  t.equal((await schedule(std, { size: 919 }, '?dry_run=true')).statusCode, 200, '924 + 919 ≤ 1024 × 0.9 × 2 = 1843.2');
  t.equal((await schedule(std, { size: 920 }, '?dry_run=true')).statusCode, 409);
});

t.test('vendor auto options (Pure, Kaminario) mean auto, per pool or for the whole backend', async (t) => {
  const app = await build(t);
  const pool = { pool_name: 'p', total_capacity_gb: 100, free_capacity_gb: 40, provisioned_capacity_gb: 300, thin_provisioning_support: true, max_over_subscription_ratio: 5 };
  const auto = 1 + 300 / (100 - 40 + 1);
  t.equal((await put(app, 'pure@x', { pools: [pool] })).json().pools[0].max_over_subscription_ratio, 5, 'the reported ratio');
  t.equal((await put(app, 'pure@x', { pools: [{ ...pool, pure_automatic_max_oversubscription_ratio: true }] })).json().pools[0].max_over_subscription_ratio, auto);
  t.equal((await put(app, 'k2@x', { auto_calc_max_oversubscription_ratio: true, pools: [pool] })).json().pools[0].max_over_subscription_ratio, auto);
  t.equal((await put(app, 'k2@x', { auto_calc_max_oversubscription_ratio: false, pools: [pool] })).json().pools[0].max_over_subscription_ratio, 5);
  const conf = await build(t, { max_over_subscription_ratio: 'auto' });
  const { max_over_subscription_ratio: _r, ...noRatio } = pool;
  t.equal((await put(conf, 'h@x', { pools: [noRatio] })).json().pools[0].max_over_subscription_ratio, auto, 'configured auto');
  t.equal((await put(conf, 'h@x', { pools: [{ ...noRatio, thin_provisioning_support: false }] })).json().pools[0].max_over_subscription_ratio, 1, 'no thin support: 1.0');
});

t.test('seed: allocated_capacity_gb is Berth\'s own, per volume it placed that still exists', async (t) => {
  const app = await build(t);
  const r = await put(app, 'node1@lvm', { pools: [{ ...SEED_POOL, allocated_capacity_gb: 7 }] });
  t.match(r.json().warnings, [/allocated_capacity_gb is ignored/]);
  t.equal((await detail(app, 'node1@lvm#pool1')).allocated_capacity_gb, 0, 'the reported value is ignored');
  // Two 1 GiB volumes, one thick and one thin → allocated 2; deleting one → 1.
  await schedule(app, { id: 'thick1', size: 1, volume_type: { extra_specs: { 'provisioning:type': 'thick' } } });
  await schedule(app, { id: 'thin1', size: 1 });
  t.equal((await detail(app, 'node1@lvm#pool1')).allocated_capacity_gb, 2);
  t.equal((await app.inject({ method: 'DELETE', url: '/volumes/thin1' })).statusCode, 204);
  t.equal((await detail(app, 'node1@lvm#pool1')).allocated_capacity_gb, 1);
});

t.test('a placed volume is consumed until the next report; generations change with claims and reports', async (t) => {
  const app = await build(t);
  const first = await put(app, 'node1@lvm', { pools: [{ pool_name: 'p', total_capacity_gb: 100, free_capacity_gb: 50, provisioned_capacity_gb: 40, thin_provisioning_support: true, max_over_subscription_ratio: 2 }] });
  const g0 = first.json().pools[0].generation;
  const placed = await schedule(app, { id: 'a', size: 10 });
  t.same(placed.json().volume, { id: 'a', size: 10, pool: 'node1@lvm#p' });
  let caps = await detail(app, 'node1@lvm#p');
  t.same(caps.current, { free_capacity_gb: 40, provisioned_capacity_gb: 50, virtual_free_capacity_gb: 150 });
  t.equal(caps.allocated_capacity_gb, 10);
  t.ok(caps.generation > g0, 'a claim changes the generation');
  const g1 = caps.generation;
  t.equal((await schedule(app, { size: 5 }, '?dry_run=true')).statusCode, 200);
  t.equal((await detail(app, 'node1@lvm#p')).generation, g1, 'dry_run claims nothing');
  t.equal((await app.inject({ method: 'GET', url: '/volumes' })).json().volumes.length, 1);

  // The next report replaces the consumed figures; allocated stays Berth's.
  await put(app, 'node1@lvm', { pools: [{ pool_name: 'p', total_capacity_gb: 100, free_capacity_gb: 45, provisioned_capacity_gb: 50, thin_provisioning_support: true, max_over_subscription_ratio: 2 }] });
  caps = await detail(app, 'node1@lvm#p');
  t.same(caps.current, { free_capacity_gb: 45, provisioned_capacity_gb: 50, virtual_free_capacity_gb: 150 });
  t.equal(caps.allocated_capacity_gb, 10);
  t.ok(caps.generation > g1, 'a report changes the generation');

  // Deleting a volume placed before the report releases allocated; the backend reports the rest.
  t.equal((await app.inject({ method: 'DELETE', url: '/volumes/a' })).statusCode, 204);
  t.equal((await detail(app, 'node1@lvm#p')).allocated_capacity_gb, 0);
  // Deleting one placed since the report gives its free and provisioned space back at once.
  await schedule(app, { id: 'b', size: 20 });
  t.same((await detail(app, 'node1@lvm#p')).current, { free_capacity_gb: 25, provisioned_capacity_gb: 70, virtual_free_capacity_gb: 130 });
  await app.inject({ method: 'DELETE', url: '/volumes/b' });
  t.same((await detail(app, 'node1@lvm#p')).current, { free_capacity_gb: 45, provisioned_capacity_gb: 50, virtual_free_capacity_gb: 150 });
  t.equal((await app.inject({ method: 'DELETE', url: '/volumes/b' })).statusCode, 404);
  t.equal((await app.inject({ method: 'GET', url: '/volumes/b' })).statusCode, 404);
});

t.test('volume ids, 409 shapes, explain and dry_run', async (t) => {
  const app = await build(t);
  await put(app, 'h1@x', { pools: [{ pool_name: 'a', total_capacity_gb: 10, free_capacity_gb: 10 }] });
  t.equal((await schedule(app, { id: 'v', size: 1 })).statusCode, 200);
  const again = await schedule(app, { id: 'v', size: 1 });
  t.equal(again.statusCode, 409);
  t.match(again.json(), { type: '/problems/volume-exists', status: 409 });
  t.same((await app.inject({ method: 'GET', url: '/volumes/v' })).json(), {
    id: 'v', size: 1, pool: 'h1@x#a', thin: true, created_at: (await app.inject({ method: 'GET', url: '/volumes/v' })).json().created_at, created_by: null,
  });
  const none = await schedule(app, { size: 100 }, '?explain=true');
  t.equal(none.statusCode, 409);
  t.match(none.headers['content-type'], /application\/problem\+json/);
  t.match(none.json(), {
    type: /\/no-valid-backend$/,
    rejected: [{ pool: 'h1@x#a', filter: 'CapacityFilter', code: 'insufficient_free' }],
    explain: { weighed: [], filters: [{ name: 'AvailabilityZoneFilter', in: 1, out: 1 }, { name: 'CapacityFilter', in: 1, out: 0 }] },
  });
  const empty = await build(t);
  t.match((await schedule(empty, { size: 1 })).json(), { status: 409, detail: /no pool has been reported/ });
});

t.test('ingest: legacy single pool, malformed stats refused whole, DELETE forgets', async (t) => {
  const app = await build(t);
  const legacy = await put(app, 'h1@legacy', { volume_backend_name: 'legacy', total_capacity_gb: 100, free_capacity_gb: 50, storage_protocol: 'iSCSI' });
  t.same(legacy.json().pools.map((p: { name: string }) => p.name), ['h1@legacy#legacy']);
  const noName = await put(app, 'h2@x', { total_capacity_gb: 100, free_capacity_gb: 50 });
  t.same(noName.json().pools.map((p: { name: string }) => p.name), ['h2@x#_pool0'], 'no volume_backend_name → _pool0');
  // storage_protocol is matched by its variants, shown as reported.
  t.equal((await schedule(app, { size: 1, volume_type: { extra_specs: { storage_protocol: 'iscsi' } } }, '?dry_run=true')).json().pool, 'h1@legacy#legacy');
  t.equal((await detail(app, 'h1@legacy#legacy')).storage_protocol, 'iSCSI');

  const bad: Array<[unknown, string]> = [
    [{ pools: [{ pool_name: 'a', total_capacity_gb: '100', free_capacity_gb: 1 }] }, 'pools.0.total_capacity_gb'],
    [{ pools: [{ pool_name: 'a', total_capacity_gb: 100, free_capacity_gb: null }] }, 'pools.0.free_capacity_gb'],
    [{ pools: [{ pool_name: 'a', total_capacity_gb: -1, free_capacity_gb: 1 }] }, 'pools.0.total_capacity_gb'],
    [{ pools: [{ pool_name: 'a', total_capacity_gb: 1, free_capacity_gb: 1, thin_provisioning_support: 'False' }] }, 'pools.0.thin_provisioning_support'],
    [{ pools: [{ pool_name: 'a', total_capacity_gb: 1, free_capacity_gb: 1, reserved_percentage: 101 }] }, 'pools.0.reserved_percentage'],
    [{ pools: [{ pool_name: 'a', total_capacity_gb: 1, free_capacity_gb: 1, max_over_subscription_ratio: 'lots' }] }, 'pools.0.max_over_subscription_ratio'],
    [{ pools: [{ pool_name: 'a', total_capacity_gb: 1, free_capacity_gb: 1, provisioned_capacity_gb: 'x' }] }, 'pools.0.provisioned_capacity_gb'],
    [{ pools: [{ total_capacity_gb: 1, free_capacity_gb: 1 }] }, 'pools.0.pool_name'],
    [{ pools: [{ pool_name: 'a', total_capacity_gb: 1, free_capacity_gb: 1 }, { pool_name: 'a', total_capacity_gb: 1, free_capacity_gb: 1 }] }, 'pools.1.pool_name'],
    [{ pools: [{ pool_name: 'a', total_capacity_gb: 100, free_capacity_gb: 101, provisioned_capacity_gb: 1, thin_provisioning_support: true, max_over_subscription_ratio: 'auto' }] }, 'pools.0.free_capacity_gb'],
    [{ volume_backend_name: 'x', free_capacity_gb: 1 }, 'total_capacity_gb'],
  ];
  for (const [report, field] of bad) {
    const before = (await app.inject({ method: 'GET', url: '/pools?detail=true' })).body;
    const r = await put(app, 'h1@legacy', report);
    t.equal(r.statusCode, 400, field);
    t.ok((r.json().errors as Array<{ path: string }>).some((e) => e.path.endsWith(field)), `names ${field}: ${r.body}`);
    t.equal((await app.inject({ method: 'GET', url: '/pools?detail=true' })).body, before, 'nothing changed');
  }

  t.equal((await app.inject({ method: 'DELETE', url: '/backends/h1@legacy' })).statusCode, 204);
  t.equal((await app.inject({ method: 'DELETE', url: '/backends/h1@legacy' })).statusCode, 404);
  t.same((await app.inject({ method: 'GET', url: '/pools' })).json(), { pools: [{ name: 'h2@x#_pool0' }] });
  t.same((await app.inject({ method: 'GET', url: '/backends' })).json().backends.map((b: { backend: string }) => b.backend), ['h2@x']);
});

t.test('GET /pools filters: name, capabilities, volume_type, size (best first)', async (t) => {
  const app = await build(t);
  await put(app, 'h1@lvm', { volume_backend_name: 'lvm', pools: [
    { pool_name: 'small', total_capacity_gb: 100, free_capacity_gb: 10, thick_provisioning_support: true },
    { pool_name: 'big', total_capacity_gb: 100, free_capacity_gb: 90, thick_provisioning_support: true },
  ] });
  await put(app, 'h2@ceph', { volume_backend_name: 'ceph', availability_zone: 'az2', pools: [
    { pool_name: 'thin', total_capacity_gb: 100, free_capacity_gb: 50, thin_provisioning_support: true, max_over_subscription_ratio: 2 },
  ] });
  const names = async (q: string) => ((await app.inject({ method: 'GET', url: `/pools${q}` })).json().pools as Array<{ name: string }>).map((p) => p.name);
  t.same(await names(''), ['h1@lvm#small', 'h1@lvm#big', 'h2@ceph#thin'], 'report order');
  t.same(await names('?name=h1%40lvm%23big'), ['h1@lvm#big']);
  t.same(await names('?volume_backend_name=ceph'), ['h2@ceph#thin'], 'a capability filter');
  t.same(await names('?thin_provisioning_support=true'), ['h2@ceph#thin']);
  const vt = encodeURIComponent(JSON.stringify({ extra_specs: { thick_provisioning_support: '<is> True' } }));
  t.same(await names(`?volume_type=${vt}`), ['h1@lvm#small', 'h1@lvm#big']);
  t.same(await names('?size=20'), ['h2@ceph#thin', 'h1@lvm#big'], 'only pools that accept 20 GiB, best first');
  t.same(await names('?size=20&availability_zone=nova'), ['h1@lvm#big']);
  t.same(await names(`?size=5&volume_type=${vt}`), ['h1@lvm#big', 'h1@lvm#small']);
  t.equal((await app.inject({ method: 'GET', url: '/pools?volume_type=nope' })).statusCode, 400);
  t.equal((await app.inject({ method: 'GET', url: '/pools?detail=maybe' })).statusCode, 400);
  t.equal((await app.inject({ method: 'GET', url: '/pools?size=-1' })).statusCode, 400);
});

t.test('configuration picks the filters, weighers and multipliers', async (t) => {
  const pools = { pools: [
    { pool_name: 'a', total_capacity_gb: 100, free_capacity_gb: 80 },
    { pool_name: 'b', total_capacity_gb: 100, free_capacity_gb: 20 },
  ] };
  const spread = await build(t);
  await put(spread, 'h@x', pools);
  t.equal((await schedule(spread, { size: 1 }, '?dry_run=true')).json().pool, 'h@x#a', 'spread: most free first');
  const stack = await build(t, { capacity_weight_multiplier: -1 });
  await put(stack, 'h@x', pools);
  t.equal((await schedule(stack, { size: 1 }, '?dry_run=true')).json().pool, 'h@x#b', 'stack: least free first');
  const noCapacity = await build(t, { scheduler_default_filters: ['AvailabilityZoneFilter'] });
  await put(noCapacity, 'h@x', pools);
  t.equal((await schedule(noCapacity, { size: 1000 }, '?dry_run=true')).statusCode, 200, 'without CapacityFilter anything goes');
  const allocated = await build(t, { scheduler_default_weighers: ['AllocatedCapacityWeigher'], allocated_capacity_weight_multiplier: -1 });
  await put(allocated, 'h@x', pools);
  await schedule(allocated, { size: 1 });
  const second = await schedule(allocated, { size: 1 }, '?explain=true');
  t.equal(second.json().pool, 'h@x#b', 'AllocatedCapacityWeigher spreads onto the emptier pool');
  t.same(Object.keys(second.json().explain.weighed[0].weighers), ['AllocatedCapacityWeigher']);
});

t.test('stale stats: a backend silent for longer than the limit is rejected, with its age as a gauge', async (t) => {
  let clock = 1_000_000;
  const app = await build(t, { stats_stale_after_seconds: 120 }, undefined, () => clock);
  await put(app, 'node1@lvm', { pools: [{ pool_name: 'a', total_capacity_gb: 100, free_capacity_gb: 100 }] });
  clock += 60_000;
  await put(app, 'node2@lvm', { pools: [{ pool_name: 'b', total_capacity_gb: 100, free_capacity_gb: 10 }] });
  clock += 70_000; // node1 reported 130 s ago, node2 70 s ago
  const r = await schedule(app, { size: 1 }, '?explain=true&dry_run=true');
  t.equal(r.json().pool, 'node2@lvm#b');
  t.same(r.json().explain.filters[0], {
    name: 'StaleStatsFilter', in: 2, out: 1,
    rejected: [{ pool: 'node1@lvm#a', reason: 'backend node1@lvm last reported 130 s ago (limit 120 s)' }],
  });
  const metrics = (await app.inject({ method: 'GET', url: '/metrics' })).body;
  t.match(metrics, /berth_backend_report_age_seconds\{backend="node1@lvm"\} 130\n/);
  t.match(metrics, /berth_backend_report_age_seconds\{backend="node2@lvm"\} 70\n/);
  clock += 60_000;
  const none = await schedule(app, { size: 1 });
  t.equal(none.statusCode, 409);
  t.match(none.json().rejected, [{ filter: 'StaleStatsFilter', code: 'stale_stats' }, { filter: 'StaleStatsFilter' }]);
  t.match((await app.inject({ method: 'GET', url: '/metrics' })).body, /berth_filter_rejections_total\{domain="volumes",filter="StaleStatsFilter"\} 3/);
  const off = await build(t, {}, undefined, () => clock);
  await put(off, 'node1@lvm', { pools: [{ pool_name: 'a', total_capacity_gb: 100, free_capacity_gb: 100 }] });
  clock += 10_000_000;
  t.equal((await schedule(off, { size: 1 })).statusCode, 200, 'stats_stale_after_seconds 0 trusts reports forever');
});

t.test('metrics: decisions, rejections, per-pool gauges', async (t) => {
  const app = await build(t);
  await put(app, 'h@x', { pools: [{ pool_name: 'a', total_capacity_gb: 100, free_capacity_gb: 60, provisioned_capacity_gb: 30, thin_provisioning_support: true, max_over_subscription_ratio: 'auto' }] });
  await put(app, 'h@inf', { pools: [{ pool_name: 'c', total_capacity_gb: 'infinite', free_capacity_gb: 'unknown' }] });
  await schedule(app, { size: 10, availability_zone: 'nova' });
  await schedule(app, { size: 10 }, '?dry_run=true');
  await schedule(app, { size: 10, availability_zone: 'elsewhere' });
  const m = (await app.inject({ method: 'GET', url: '/metrics' })).body;
  t.match(m, /berth_decisions_total\{domain="volumes",outcome="placed"\} 1/);
  t.match(m, /berth_decisions_total\{domain="volumes",outcome="dry_run"\} 1/);
  t.match(m, /berth_decisions_total\{domain="volumes",outcome="no_valid_backend"\} 1/);
  t.match(m, /berth_filter_rejections_total\{domain="volumes",filter="AvailabilityZoneFilter"\} 2/);
  t.match(m, /berth_decision_duration_seconds_count\{domain="volumes"\} 3/);
  // Cinder's GiB figures, exported in bytes.
  const bytes = (gib: number) => String(Math.round(gib * 2 ** 30));
  t.match(m, `berth_pool_total_capacity_bytes{pool="h@x#a",backend="h@x"} ${bytes(100)}\n`);
  t.match(m, `berth_pool_free_capacity_bytes{pool="h@x#a",backend="h@x"} ${bytes(50)}\n`);
  t.match(m, `berth_pool_provisioned_capacity_bytes{pool="h@x#a",backend="h@x"} ${bytes(40)}\n`);
  t.match(m, `berth_pool_allocated_capacity_bytes{pool="h@x#a",backend="h@x"} ${bytes(10)}\n`);
  const ratio = 1 + 30 / (100 - 60 + 1);
  t.match(m, new RegExp(`berth_pool_max_over_subscription_ratio\\{pool="h@x#a",backend="h@x"\\} ${ratio}`));
  t.match(m, `berth_pool_virtual_free_capacity_bytes{pool="h@x#a",backend="h@x"} ${bytes(133.17)}\n`);
  t.match(m, /berth_pool_total_capacity_bytes\{pool="h@inf#c",backend="h@inf"\} \+Inf/);
  t.match(m, /berth_pool_free_capacity_bytes\{pool="h@inf#c",backend="h@inf"\} NaN/i);
  t.notMatch(m, /berth_pool_generation|_gib\b/, 'no generation gauge, no GiB names');
});

t.test('after a restart, volumes, allocated figures and generations are back', async (t) => {
  const dir = t.testdir();
  const store1 = new SqliteStore(dir);
  const app1 = await build(t, {}, store1.async());
  await put(app1, 'h@x', { pools: [{ pool_name: 'a', total_capacity_gb: 100, free_capacity_gb: 50, thin_provisioning_support: true }] });
  await schedule(app1, { id: 'before', size: 5 });
  await put(app1, 'h@x', { pools: [{ pool_name: 'a', total_capacity_gb: 100, free_capacity_gb: 45, thin_provisioning_support: true }] });
  await schedule(app1, { id: 'after', size: 7 });
  const caps1 = await detail(app1, 'h@x#a');
  await app1.close();
  store1.close();

  const store2 = new SqliteStore(dir);
  const app2 = await build(t, {}, store2.async());
  t.same((await app2.inject({ method: 'GET', url: '/volumes' })).json().volumes.map((v: { id: string }) => v.id).sort(), ['after', 'before']);
  const caps2 = await detail(app2, 'h@x#a');
  t.same({ ...caps2, timestamp: 0 }, { ...caps1, timestamp: 0 }, 'same figures: allocated 12, consumed 7 since the last report');
  t.equal(caps2.allocated_capacity_gb, 12);
  t.same(caps2.current, { free_capacity_gb: 38, provisioned_capacity_gb: 12, virtual_free_capacity_gb: 1988 });
  t.equal((await schedule(app2, { id: 'after', size: 1 })).statusCode, 409, 'ids are remembered');
  await schedule(app2, { id: 'third', size: 1 });
  t.ok((await detail(app2, 'h@x#a')).generation > caps2.generation);
});

t.test('on the embedded store a claim writes its volume alone; the pool\'s generation never goes back, restart included', async (t) => {
  const dir = t.testdir();
  const store1 = new SqliteStore(dir);
  const app1 = await build(t, {}, store1.async());
  await put(app1, 'h@x', { pools: [{ pool_name: 'a', total_capacity_gb: 100, free_capacity_gb: 50, thin_provisioning_support: true }] });
  const reported = store1.get('volumes.pool', 'h@x#a')!.generation;
  t.equal((await schedule(app1, { id: 'v', size: 5 })).statusCode, 200);
  t.equal(store1.get('volumes.pool', 'h@x#a')!.generation, reported, 'the claim left the pool record as the report wrote it');
  const claimed = (await detail(app1, 'h@x#a')).generation;
  t.equal(claimed, store1.get('volumes.volume', 'v')!.generation, 'the pool\'s generation is its newest volume\'s');
  t.equal((await app1.inject({ method: 'DELETE', url: '/volumes/v' })).statusCode, 204);
  const released = (await detail(app1, 'h@x#a')).generation;
  t.ok(released > claimed, 'a release moves it on (it writes the pool record)');
  t.equal(store1.get('volumes.pool', 'h@x#a')!.generation, released);
  await app1.close();
  store1.close();

  const store2 = new SqliteStore(dir);
  const app2 = await build(t, {}, store2.async());
  t.equal((await detail(app2, 'h@x#a')).generation, released, 'after a restart: not back to the claim\'s or the report\'s');
  t.equal((await detail(app2, 'h@x#a')).allocated_capacity_gb, 0);
  await schedule(app2, { id: 'w', size: 2 });
  t.equal((await detail(app2, 'h@x#a')).generation, store2.get('volumes.volume', 'w')!.generation, 'and the next claim moves it on');
});
