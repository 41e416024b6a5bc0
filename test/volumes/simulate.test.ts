// POST /volumes/simulate: every step answered as the real route answers it at that point (checked by replaying the
// steps through the real routes on an identical app), hypothetical settings, the final figures, and nothing changed:
// live state, generations, settings and the store's commit count. Bounds: 413 beyond 10,000 steps, 422 over the time
// budget (a test clock), 400 for bad settings or a malformed body.
import type { FastifyInstance } from 'fastify';
import t from 'tap';
import { build } from '../helper.ts';

const POOLS = [
  ['h@a', { pools: [{ pool_name: 'thin', total_capacity_gb: 100, free_capacity_gb: 100, thin_provisioning_support: true, tier: 'gold' }] }],
  ['h@b', { availability_zone: 'az2', pools: [{ pool_name: 'thick', total_capacity_gb: 300, free_capacity_gb: 250, thick_provisioning_support: true }] }],
] as const;

async function fleet(app: FastifyInstance): Promise<void> {
  for (const [host, report] of POOLS) t.equal((await app.inject({ method: "PUT", url: `/backends/${host}`, payload: report })).statusCode, 200);
  t.equal((await app.inject({ method: 'POST', url: '/volumes/schedule', payload: { id: 'old', size: 40 } })).statusCode, 200);
}
const STEPS = [
  { schedule: { id: 'v1', size: 500 } },
  { schedule: { id: 'v2', size: 150, volume_type: { extra_specs: { 'provisioning:type': 'thick' } } } },
  { schedule: { id: 'v3', size: 200, volume_type: { extra_specs: { 'provisioning:type': 'thick' } } } },
  { schedule: { id: 'v1', size: 1 } },
  { schedule: { size: -1 } },
  { schedule: { id: 'v4', size: 10, availability_zone: 'az9' }, explain: true },
  { schedule: { id: 'v5', size: 10, volume_type: { extra_specs: { tier: 'gold' } } }, explain: true },
  { delete: 'old' },
  { delete: 'old' },
  { delete: 'bad id!' },
  { schedule: { id: 'v6', size: 1800 } },
];

/** Every read that shows the live state. */
async function snapshot(app: FastifyInstance) {
  const metrics = (await app.inject({ method: 'GET', url: '/metrics' })).body;
  return {
    pools: (await app.inject({ method: 'GET', url: '/pools?detail=true' })).json(),
    volumes: (await app.inject({ method: 'GET', url: '/volumes' })).json(),
    settings: (await app.inject({ method: 'GET', url: '/settings/volumes' })).json(),
    commits: /^berth_store_commit_duration_seconds_count(?:\{[^}]*\})? (\d+)$/m.exec(metrics)?.[1],
  };
}

t.test('each step is what the real route answers at that point; nothing changes', async (t) => {
  const app = await build(t, {}, undefined, () => Date.parse('2026-12-01T09:00:00Z'));
  await fleet(app);
  const before = await snapshot(app);
  t.ok(before.commits !== undefined && Number(before.commits) > 0, 'the store commit count is exported');
  const r = await app.inject({ method: 'POST', url: '/volumes/simulate', payload: { steps: STEPS } });
  t.equal(r.statusCode, 200, r.body);
  const simulated = r.json() as { steps: Array<{ status: number; body: any }>; final: { pools: any[] } };
  t.same(await snapshot(app), before, 'live pools, generations, volumes, settings and store commits unchanged');

  // The same steps through the real routes, on this app (its state is the simulation's starting point).
  const real: Array<{ status: number; body: unknown }> = [];
  for (const step of STEPS) {
    const res = 'delete' in step
      ? await app.inject({ method: 'DELETE', url: `/volumes/${encodeURIComponent(String(step.delete))}` })
      : await app.inject({ method: 'POST', url: `/volumes/schedule${step.explain ? '?explain=true' : ''}`, payload: step.schedule });
    real.push({ status: res.statusCode, body: res.statusCode === 204 ? null : res.json() });
  }
  t.same(simulated.steps, real, 'status and body of every step');
  t.same(simulated.steps.map((s) => s.status), [200, 200, 409, 409, 400, 409, 200, 204, 404, 400, 409]);
  const pools = (await app.inject({ method: 'GET', url: '/pools?detail=true' })).json().pools as Array<{ name: string; capabilities: any }>;
  t.same(simulated.final.pools, pools.map((p) => ({
    pool: p.name, allocated_capacity_gb: p.capabilities.allocated_capacity_gb, free_capacity_gb: p.capabilities.current.free_capacity_gb,
    provisioned_capacity_gb: p.capabilities.current.provisioned_capacity_gb,
    virtual_free_capacity_gb: p.capabilities.current.virtual_free_capacity_gb, max_over_subscription_ratio: p.capabilities.max_over_subscription_ratio,
  })), 'final figures are the state the real steps left');
  t.match((await app.inject({ method: 'GET', url: '/metrics' })).body, /berth_simulations_total\{domain="volumes",outcome="completed"\} 1\n/);
});

t.test('hypothetical settings: "what if the ratio were 2?" without changing it', async (t) => {
  const app = await build(t);
  await fleet(app);
  const before = await snapshot(app);
  const steps = [{ schedule: { size: 200 } }, { schedule: { size: 100 } }];
  const at20 = (await app.inject({ method: 'POST', url: '/volumes/simulate', payload: { steps } })).json();
  t.same(at20.steps.map((s: { body: { pool: string } }) => s.body.pool), ['h@a#thin', 'h@a#thin']);
  const at2 = (await app.inject({ method: 'POST', url: '/volumes/simulate', payload: { steps, settings: { max_over_subscription_ratio: 2 } } })).json();
  t.same(at2.steps.map((s: { body: { pool: string } }) => s.body.pool), ['h@b#thick', 'h@a#thin'], 'at 2 the thin pool offers 160 GiB');
  t.match(at2.final.pools, [{ pool: 'h@a#thin', max_over_subscription_ratio: 2, allocated_capacity_gb: 140 }, { allocated_capacity_gb: 200 }]);
  t.same(await snapshot(app), before, 'the live settings and pools are untouched');

  const bad = await app.inject({ method: 'POST', url: '/volumes/simulate', payload: { steps, settings: { max_over_subscription_ratio: 0.5, colour: 'red' } } });
  t.equal(bad.statusCode, 400);
  t.match(bad.json().detail, /body\.settings\.max_over_subscription_ratio: must be a number >= 1/);
  t.match(bad.json().detail, /colour/);
});

t.test('bounds and bad input: 413 beyond 10,000 steps, 422 over the time budget, 400 for a malformed body; nothing changes', async (t) => {
  let clock = Date.parse('2026-12-01T09:00:00Z');
  let ticking = false;
  const app = await build(t, {}, undefined, () => (ticking ? (clock += 1000) : clock));
  await fleet(app);
  const before = await snapshot(app);
  const tooMany = await app.inject({ method: 'POST', url: '/volumes/simulate', payload: { steps: Array.from({ length: 10_001 }, () => ({ delete: 'x' })) } });
  t.equal(tooMany.statusCode, 413);
  t.match(tooMany.json(), { type: '/problems/simulation-too-large', detail: /at most 10000 steps; this one has 10001/ });
  t.equal((await app.inject({ method: 'POST', url: '/volumes/simulate', payload: { steps: Array.from({ length: 10_000 }, () => ({ delete: 'x' })) } })).statusCode, 200,
    '10,000 steps are taken');
  ticking = true;
  const slow = await app.inject({ method: 'POST', url: '/volumes/simulate', payload: { steps: Array.from({ length: 20 }, () => ({ schedule: { size: 1 } })) } });
  ticking = false;
  t.equal(slow.statusCode, 422);
  t.match(slow.json(), { type: '/problems/simulation-over-budget', detail: /longer than 5 s after \d+ of 20 steps/ });
  for (const body of [{}, { steps: [{}] }, { steps: [{ schedule: { size: 1 }, delete: 'x' }] }, { steps: 'many' }, { steps: [], extra: 1 }]) {
    const r = await app.inject({ method: 'POST', url: '/volumes/simulate', payload: body });
    t.equal(r.statusCode, 400, JSON.stringify(body));
  }
  t.same(await snapshot(app), before, 'nothing changed');
  const metrics = (await app.inject({ method: 'GET', url: '/metrics' })).body;
  t.match(metrics, /berth_simulations_total\{domain="volumes",outcome="too_many_steps"\} 1\n/);
  t.match(metrics, /berth_simulations_total\{domain="volumes",outcome="over_time_budget"\} 1\n/);
  t.match(metrics, /berth_simulation_duration_seconds_count\{domain="volumes"\} 2\n/);
});
