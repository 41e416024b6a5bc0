// explain_target=NAME on POST /volumes/schedule and GET /pools?size=: only that pool's verdict, and it is exactly
// what the full trace (explain=true) says about that pool — the filter that refused it with its sentence, or its
// weights and place in the ranking — for every pool of a fleet that exercises each filter and both weighers.
import type { FastifyInstance } from 'fastify';
import t from 'tap';
import { build } from '../helper.ts';

const REPORTS = [
  ['h@a', { pools: [
    { pool_name: 'big', total_capacity_gb: 1000, free_capacity_gb: 900, thin_provisioning_support: true, tier: 'gold' },
    { pool_name: 'small', total_capacity_gb: 50, free_capacity_gb: 20, thick_provisioning_support: true, tier: 'gold' },
    { pool_name: 'silver', total_capacity_gb: 500, free_capacity_gb: 500, thin_provisioning_support: true, tier: 'silver' },
  ] }],
  ['h@b', { availability_zone: 'az2', pools: [{ pool_name: 'far', total_capacity_gb: 800, free_capacity_gb: 800, thin_provisioning_support: true, tier: 'gold' }] }],
  ['h@c', { pools: [
    { pool_name: 'mid', total_capacity_gb: 300, free_capacity_gb: 200, thin_provisioning_support: true, tier: 'gold', max_over_subscription_ratio: 1.5 },
    { pool_name: 'twin', total_capacity_gb: 300, free_capacity_gb: 200, thin_provisioning_support: true, tier: 'gold', max_over_subscription_ratio: 1.5 },
  ] }],
] as const;

async function fleet(app: FastifyInstance) {
  for (const [host, report] of REPORTS) t.equal((await app.inject({ method: 'PUT', url: `/backends/${host}`, payload: report })).statusCode, 200);
  t.equal((await app.inject({ method: 'POST', url: '/volumes/schedule', payload: { id: 'on-mid', size: 30 } })).statusCode, 200);
}

const REQUESTS = [
  { size: 40 },
  { size: 40, availability_zone: 'nova', volume_type: { extra_specs: { tier: 'gold' } } },
  { size: 300, volume_type: { extra_specs: { 'provisioning:type': 'thick' } } },
  { size: 100000 },
];

/** What the full trace says about one pool. */
function fromTrace(explain: any, pool: string) {
  const filters: Array<Record<string, unknown>> = [];
  for (const f of explain.filters) {
    const r = f.rejected.find((x: { pool: string }) => x.pool === pool);
    if (r) return { filters: [...filters, { name: f.name, passed: false, reason: r.reason }], passed: false };
    filters.push({ name: f.name, passed: true });
  }
  const at = explain.weighed.findIndex((w: { pool: string }) => w.pool === pool);
  const w = explain.weighed[at];
  return { filters, passed: true, weight: w.weight, rank: at + 1, weighers: w.weighers };
}

t.test('each pool\'s verdict equals its part of the full trace, on both routes', async (t) => {
  for (const weighers of [['CapacityWeigher'], ['CapacityWeigher', 'AllocatedCapacityWeigher']]) {
    const app = await build(t, { scheduler_default_weighers: weighers as never });
    await fleet(app);
    const pools = (await app.inject({ method: 'GET', url: '/pools' })).json().pools.map((p: { name: string }) => p.name) as string[];
    for (const body of REQUESTS) {
      const full = await app.inject({ method: 'POST', url: '/volumes/schedule?dry_run=true&explain=true', payload: body });
      const explain = full.json().explain;
      for (const pool of pools) {
        const q = `explain_target=${encodeURIComponent(pool)}`;
        const one = await app.inject({ method: 'POST', url: `/volumes/schedule?dry_run=true&${q}`, payload: body });
        t.equal(one.statusCode, full.statusCode);
        const target = one.json().target;
        t.notOk(one.json().explain, 'only the target');
        const expected = fromTrace(explain, pool);
        t.match(target, { pool, ...expected }, `${pool} for ${JSON.stringify(body)} (${weighers.join('+')})`);
        t.same(target.filters.map((f: { name: string }) => f.name), expected.filters.map((f) => f.name), 'the filters it met, in order');
        if (!expected.passed) t.type(target.filters.at(-1).code, 'string');
        if (full.statusCode === 200) {
          const listed = await app.inject({ method: 'GET', url: `/pools?size=${body.size}&${q}${body.availability_zone ? `&availability_zone=${body.availability_zone}` : ''}` +
            (body.volume_type ? `&volume_type=${encodeURIComponent(JSON.stringify(body.volume_type))}` : '') });
          t.same(listed.json().target, target, 'GET /pools?size= gives the same verdict');
        }
      }
    }
    await app.close();
  }
});

t.test('a worked verdict with its numbers; the claim still happens; unknown or misplaced targets are refused', async (t) => {
  const app = await build(t);
  await fleet(app);
  const refused = await app.inject({ method: 'POST', url: '/volumes/schedule?explain_target=h@a%23small', payload: { size: 40 } });
  t.equal(refused.statusCode, 200);
  t.same(refused.json().target, {
    pool: 'h@a#small', passed: false,
    filters: [
      { name: 'AvailabilityZoneFilter', passed: true },
      { name: 'CapacityFilter', passed: false, code: 'insufficient_free', reason: 'Insufficient free space for volume creation (requested / avail): 40/20 GiB.' },
    ],
  });
  t.equal((await app.inject({ method: 'GET', url: '/volumes' })).json().volumes.length, 2, 'claimed as without explain_target');
  const chosen = (await app.inject({ method: 'POST', url: '/volumes/schedule?dry_run=true&explain_target=h@a%23big', payload: { size: 40 } })).json();
  t.match(chosen.target, { passed: true, rank: 1, weight: 1, weighers: { CapacityWeigher: { normalized: 1 } } });
  t.equal(chosen.pool, 'h@a#big');

  const unknown = await app.inject({ method: 'POST', url: '/volumes/schedule?explain_target=nowhere%23x', payload: { size: 1 } });
  t.equal(unknown.statusCode, 404);
  t.match(unknown.json().detail, /no pool nowhere#x/);
  t.equal((await app.inject({ method: 'GET', url: '/pools?size=1&explain_target=nowhere%23x' })).statusCode, 404);
  const noSize = await app.inject({ method: 'GET', url: '/pools?explain_target=h@a%23big' });
  t.equal(noSize.statusCode, 400);
  t.match(noSize.json().detail, /explain_target needs size/);
  const notSelected = await app.inject({ method: 'GET', url: '/pools?size=1&name=h@c%23mid&explain_target=h@a%23big' });
  t.equal(notSelected.statusCode, 400);
  t.match(notSelected.json().detail, /not among the pools this query selects/);
  t.equal((await app.inject({ method: 'GET', url: '/volumes' })).json().volumes.length, 2, 'refused requests claim nothing');
});
