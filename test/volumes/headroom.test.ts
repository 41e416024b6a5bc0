// POST /volumes/headroom against the real thing: on generated fleets (thin pools under both calculations, 'auto'
// ratios, reserved space, thick requests, capability and zone filters, infinite pools, every weigher setting), the
// answer equals scheduling and claiming one volume after another through POST /volumes/schedule until the first
// refusal (or max): the count, each pool's share, and each pool's limit is the sentence the next request meets.
import type { FastifyInstance } from 'fastify';
import t, { type Test } from 'tap';
import { build } from '../helper.ts';
import { xorshift as rng } from '../random.ts';

type Random = () => number;
const pick = <T>(random: Random, items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
const int = (random: Random, lo: number, hi: number) => lo + Math.floor(random() * (hi - lo + 1));

function poolReport(random: Random, name: string): Record<string, unknown> {
  const total = random() < 0.3 ? int(random, 20, 300) + pick(random, [0.25, 0.5, 0.75]) : int(random, 20, 300);
  const pool: Record<string, unknown> = {
    pool_name: name,
    total_capacity_gb: total,
    free_capacity_gb: Math.floor(total * random() * 100) / 100,
    reserved_percentage: pick(random, [0, 0, 10, 29]),
    thin_provisioning_support: random() < 0.6,
    thick_provisioning_support: random() < 0.7,
    tier: pick(random, ['gold', 'silver']),
  };
  if (random() < 0.5) pool.provisioned_capacity_gb = int(random, 0, 400);
  const ratio = pick(random, [undefined, undefined, 1, 1.5, '2', 'auto', 0.5]);
  if (ratio !== undefined) pool.max_over_subscription_ratio = ratio;
  if (random() < 0.08) pool.free_capacity_gb = pick(random, ['infinite', 'unknown']);
  return pool;
}

interface Case {
  settings: Record<string, unknown>;
  reports: Array<[string, Record<string, unknown>]>;
  request: Record<string, unknown>;
  warmup: number;
  max: number;
}

function generate(seed: number): Case {
  const random = rng(seed);
  const reports: Case['reports'] = [];
  const backends = int(random, 1, 3);
  for (let b = 0; b < backends; b++) {
    const pools = Array.from({ length: int(random, 1, 4) }, (_, p) => poolReport(random, `p${p}`));
    const report: Record<string, unknown> = { pools };
    const zone = pick(random, [undefined, 'az1', 'az2']);
    if (zone) report.availability_zone = zone;
    reports.push([`h${b}@b${b}`, report]);
  }
  const specs: Record<string, string> = {};
  if (random() < 0.3) specs['provisioning:type'] = 'thick';
  if (random() < 0.3) specs.tier = pick(random, ['gold', 'silver']);
  if (random() < 0.2) specs.thin_provisioning_support = '<is> True';
  const request: Record<string, unknown> = { size: int(random, 1, 40) };
  if (Object.keys(specs).length > 0) request.volume_type = { extra_specs: specs };
  if (random() < 0.2) request.availability_zone = pick(random, ['az1', 'nova']);
  const settings: Record<string, unknown> = {
    over_provisioning_calculation: pick(random, ['cinder', 'standard']),
    max_over_subscription_ratio: pick(random, [20, 'auto', 2, 1]),
    scheduler_default_weighers: pick(random, [['CapacityWeigher'], ['CapacityWeigher'], [], ['AllocatedCapacityWeigher'],
      ['CapacityWeigher', 'AllocatedCapacityWeigher']]),
    capacity_weight_multiplier: pick(random, [1, 1, -1, 0]),
    allocated_capacity_weight_multiplier: pick(random, [-1, 1]),
  };
  return { settings, reports, request, warmup: int(random, 0, 3), max: int(random, 5, 250) };
}

async function prepare(app: FastifyInstance, c: Case): Promise<void> {
  t.equal((await app.inject({ method: 'PUT', url: '/settings/volumes', payload: c.settings })).statusCode, 200);
  for (const [host, report] of c.reports) {
    const r = await app.inject({ method: 'PUT', url: `/backends/${host}`, payload: report });
    if (r.statusCode !== 200) throw new Error(`${host}: ${r.body}`);
  }
  // A few volumes already placed (allocated and consumed figures), then a re-report of the first backend.
  for (let w = 0; w < c.warmup; w++) await app.inject({ method: 'POST', url: '/volumes/schedule', payload: { size: 3 } });
  if (c.warmup > 1) await app.inject({ method: 'PUT', url: `/backends/${c.reports[0]![0]}`, payload: c.reports[0]![1] });
}

type Limits = Record<string, string | null>;

/** What really happens: schedule and claim until the first refusal or max, then what the next request meets. */
async function sequential(app: FastifyInstance, request: object, max: number) {
  const fits: Record<string, number> = {};
  let placed = 0;
  while (placed < max) {
    const r = await app.inject({ method: 'POST', url: '/volumes/schedule', payload: request });
    if (r.statusCode !== 200) break;
    const pool = r.json().pool as string;
    fits[pool] = (fits[pool] ?? 0) + 1;
    placed++;
  }
  const next = await app.inject({ method: 'POST', url: '/volumes/schedule?dry_run=true&explain=true', payload: request });
  const limits: Limits = {};
  if (next.statusCode === 409) {
    for (const r of next.json().rejected as Array<{ pool: string; reason: string }>) limits[r.pool] = r.reason;
  } else {
    t.equal(next.statusCode, 200, next.body);
    for (const f of next.json().explain.filters) for (const r of f.rejected) limits[r.pool] = r.reason;
  }
  return { placed, truncated: next.statusCode === 200 && placed === max, fits, limits };
}

/** Asks headroom, then really schedules and claims; they must agree. Returns whether max was reached. */
async function compare(t: Test, c: Case, label: string): Promise<boolean> {
  const app = await build(t);
  await prepare(app, c);
  const pools = (await app.inject({ method: 'GET', url: '/pools' })).json().pools.map((p: { name: string }) => p.name) as string[];
  const h = await app.inject({ method: 'POST', url: '/volumes/headroom', payload: { ...c.request, max: c.max } });
  t.equal(h.statusCode, 200, h.body);
  const answer = h.json() as { fits: number; truncated: boolean; pools: Array<{ pool: string; fits: number; limit: string | null }> };
  const real = await sequential(app, c.request, c.max);
  label = `${label}: ${JSON.stringify(c)}`;
  t.equal(answer.fits, real.placed, `count, ${label}`);
  t.equal(answer.truncated, real.truncated, `truncated, ${label}`);
  t.same(answer.pools.map((p) => p.pool), pools, 'every pool, in candidate order');
  t.same(Object.fromEntries(answer.pools.filter((p) => p.fits > 0).map((p) => [p.pool, p.fits])), real.fits, `shares, ${label}`);
  t.same(Object.fromEntries(answer.pools.filter((p) => p.limit !== null).map((p) => [p.pool, p.limit])), real.limits, `limits, ${label}`);
  await app.close();
  return real.truncated;
}

t.test('headroom equals sequential schedule + claim on generated fleets', async (t) => {
  const seeds = Array.from({ length: 48 }, (_, k) => 1000 + k * 7919);
  let truncatedCases = 0;
  for (const seed of seeds) if (await compare(t, generate(seed), `seed ${seed}`)) truncatedCases++;
  t.ok(truncatedCases >= 5 && seeds.length - truncatedCases >= 5, `both endings covered (${truncatedCases} truncated)`);
});

t.test('infinite pools after the finite ones fill: the order decides, and all-infinite is refused', async (t) => {
  const inf = { pool_name: 'inf', total_capacity_gb: 'infinite', free_capacity_gb: 'infinite' };
  const finite = { pool_name: 'fin', total_capacity_gb: 50, free_capacity_gb: 50, thick_provisioning_support: true };
  const reports: Case['reports'] = [['h@a', { pools: [inf, finite] }], ['h@b', { pools: [{ ...finite, total_capacity_gb: 80, free_capacity_gb: 70 }] }]];
  const request = { size: 7, volume_type: { extra_specs: { 'provisioning:type': 'thick' } } };
  for (const weighers of [['CapacityWeigher'], ['CapacityWeigher', 'AllocatedCapacityWeigher']]) {
    for (const multiplier of [-1, 0, 1]) {
      const settings = { scheduler_default_weighers: weighers, capacity_weight_multiplier: multiplier };
      await compare(t, { settings, reports, request, warmup: 0, max: 40 }, `${weighers.join('+')} × ${multiplier}`);
    }
  }
});

const THIN = { pool_name: 'thin', total_capacity_gb: 100, free_capacity_gb: 100, thin_provisioning_support: true, max_over_subscription_ratio: 2 };
const THICK = { pool_name: 'thick', total_capacity_gb: 100, free_capacity_gb: 35, reserved_percentage: 10, thick_provisioning_support: true };

t.test('a worked example: shares and limits in the filters\' words; the settings change the answer at once', async (t) => {
  const app = await build(t);
  await app.inject({ method: 'PUT', url: '/backends/h@a', payload: { pools: [THIN] } });
  await app.inject({ method: 'PUT', url: '/backends/h@b', payload: { availability_zone: 'az2', pools: [THICK] } });
  const ask = async (body: object) => (await app.inject({ method: 'POST', url: '/volumes/headroom', payload: body })).json();
  // Thin: 100 × 2 = 200 GiB → 20 of 10 GiB; the thick pool: min(35, 90) = 35 → 3.
  t.same(await ask({ size: 10 }), {
    fits: 23, truncated: false,
    pools: [
      { pool: 'h@a#thin', fits: 20, limit: 'Insufficient free virtual space (0 GiB) to accommodate thin provisioned 10 GiB volume.' },
      { pool: 'h@b#thick', fits: 3, limit: 'Insufficient free space for volume creation (requested / avail): 10/5 GiB.' },
    ],
  });
  t.match(await ask({ size: 10, availability_zone: 'az2' }), {
    fits: 3, pools: [{ pool: 'h@a#thin', fits: 0, limit: 'availability zone nova is not the requested az2' }, { fits: 3 }],
  });
  t.match(await ask({ size: 10, max: 7 }), { fits: 7, truncated: true, pools: [{ fits: 7, limit: null }, { fits: 0, limit: null }] },
    'the thin pool has the most room for the first 7');
  await app.inject({ method: 'PUT', url: '/settings/volumes', payload: { over_provisioning_calculation: 'standard' } });
  t.match(await ask({ size: 10 }), { fits: 23, pools: [{ fits: 20, limit: /^Insufficient free virtual space \(0 GiB, standard calculation\)/ }, { fits: 3 }] });
  t.equal((await app.inject({ method: 'GET', url: '/volumes' })).json().volumes.length, 0, 'nothing was claimed');
  const metrics = (await app.inject({ method: 'GET', url: '/metrics' })).body;
  t.match(metrics, 'berth_headroom_requests_total{domain="volumes",truncated="false"} 3');
  t.match(metrics, 'berth_headroom_requests_total{domain="volumes",truncated="true"} 1');
});

t.test('an infinite pool fits without end: max truncates; a non-positive capacity multiplier refuses it alone', async (t) => {
  const app = await build(t);
  await app.inject({ method: 'PUT', url: '/backends/h@inf', payload: { pools: [{ pool_name: 'c', total_capacity_gb: 'infinite', free_capacity_gb: 'infinite' }] } });
  const r = await app.inject({ method: 'POST', url: '/volumes/headroom', payload: { size: 1000 } });
  t.match(r.json(), { fits: 100_000, truncated: true, pools: [{ pool: 'h@inf#c', fits: 100_000, limit: null }] });
  await app.inject({ method: 'PUT', url: '/settings/volumes', payload: { capacity_weight_multiplier: -1 } });
  const refused = (await app.inject({ method: 'POST', url: '/volumes/headroom', payload: { size: 1000 } })).json();
  t.match(refused, { fits: 0, truncated: false, pools: [{ fits: 0, limit: /^every candidate's capacity is infinite or unknown/ }] });
  t.equal((await app.inject({ method: 'POST', url: '/volumes/schedule', payload: { size: 1000 } })).statusCode, 409, 'as the real route');
});

t.test('bad input: a clear 400 naming the field, nothing changed', async (t) => {
  const app = await build(t);
  await app.inject({ method: 'PUT', url: '/backends/h@a', payload: { pools: [THIN] } });
  const before = (await app.inject({ method: 'GET', url: '/pools?detail=true' })).body;
  for (const [body, field] of [
    [{ size: -1 }, 'size'], [{ size: 0 }, 'size'], [{ size: 1.5 }, 'size'], [{}, 'size'],
    [{ size: 1, max: 0 }, 'max'], [{ size: 1, max: 1_000_001 }, 'max'], [{ size: 1, max: 2.5 }, 'max'], [{ size: 1, max: '10' }, 'max'],
    [{ size: 1, id: 'v' }, 'id'], [{ size: 1, colour: 'red' }, 'colour'],
  ] as const) {
    const r = await app.inject({ method: 'POST', url: '/volumes/headroom', payload: body });
    t.equal(r.statusCode, 400, JSON.stringify(body));
    t.match(r.json().detail, field, `names ${field}`);
  }
  t.equal((await app.inject({ method: 'GET', url: '/pools?detail=true' })).body, before, 'nothing changed');
});

// Two weighers couple the pools through the min–max bounds: headroom orders the claims with the bounds kept at the
// extremes and a tree of totals (src/volumes/headroom.ts followByWeights) instead of one engine decision per volume.
// On wider fleets, with multipliers of both signs, zero and fractional (bounds that move at most claims, ties), both weigher
// orders, and the engine's infinite-weight replacement, the count, shares and limits equal the real claims.
t.test('two weighers: the tree ordering equals sequential schedule + claim on wider fleets', async (t) => {
  let truncatedCases = 0;
  const seeds = Array.from({ length: 24 }, (_, k) => 7 + k * 104729);
  for (const seed of seeds) {
    const random = rng(seed);
    const c = generate(seed);
    const backends = int(random, 4, 9);
    c.reports = Array.from({ length: backends }, (_, b): [string, Record<string, unknown>] => {
      const report: Record<string, unknown> = { pools: Array.from({ length: int(random, 1, 4) }, (_, p) => poolReport(random, `p${p}`)) };
      const zone = pick(random, [undefined, 'az1']);
      if (zone) report.availability_zone = zone;
      return [`h${b}@b${b}`, report];
    });
    c.settings.scheduler_default_weighers = pick(random, [['CapacityWeigher', 'AllocatedCapacityWeigher'], ['AllocatedCapacityWeigher', 'CapacityWeigher']]);
    c.settings.capacity_weight_multiplier = pick(random, [1, -1, 0, 0.5, 2, -0.25]);
    c.settings.allocated_capacity_weight_multiplier = pick(random, [1, -1, 0, 0.5, -3]);
    c.max = int(random, 20, 300);
    if (await compare(t, c, `seed ${seed}`)) truncatedCases++;
  }
  t.ok(truncatedCases >= 3 && seeds.length - truncatedCases >= 3, `both endings covered (${truncatedCases} truncated)`);
});

// The bounds are kept as counts at the extremes: pools drawn from a few identical reports tie at the extremes (a
// bound moves only once the last of them moves), tie on totals (the first pool wins), and infinite pools keep one
// weight through their claims; with both weigher orders and multipliers of both signs, it must equal the real claims.
t.test('two weighers: pools tied at the bounds and on totals equal sequential schedule + claim', async (t) => {
  const seeds = Array.from({ length: 12 }, (_, k) => 11 + k * 7331);
  for (const seed of seeds) {
    const random = rng(seed);
    const c = generate(seed);
    const templates = Array.from({ length: int(random, 1, 3) }, (_, k) => poolReport(random, `p${k}`));
    c.reports = Array.from({ length: int(random, 4, 8) }, (_, b): [string, Record<string, unknown>] => {
      const pools = Array.from({ length: int(random, 1, 3) }, (_, p) => ({ ...pick(random, templates), pool_name: `p${p}` }));
      return [`h${b}@b${b}`, { pools }];
    });
    delete c.request.availability_zone;
    c.settings.scheduler_default_weighers = pick(random, [['CapacityWeigher', 'AllocatedCapacityWeigher'], ['AllocatedCapacityWeigher', 'CapacityWeigher']]);
    c.settings.capacity_weight_multiplier = pick(random, [1, -1, 0.5, -2]);
    c.settings.allocated_capacity_weight_multiplier = pick(random, [1, -1, 2, -0.5]);
    c.max = int(random, 20, 200);
    await compare(t, c, `seed ${seed}`);
  }
});
