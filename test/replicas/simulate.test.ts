// POST /replicas/simulate: each step answered exactly as the real route answers it, hypothetical settings, the final
// disks and balance score, and the live state, its generations and the store left untouched.
import t from 'tap';
import { SqliteStore } from '../../src/store/sqlite.ts';
import { build } from '../helper.ts';
import { diskBody, GiB, putNode, snapshot } from './http.ts';

const NOW = Date.parse('2026-12-01T09:30:00.000Z');

async function fleet(t: Parameters<typeof build>[0], now: () => number = () => NOW) {
  const store = new SqliteStore(':memory:');
  let commits = 0;
  // Counted where the dialect and the runtime settings write: the store's asynchronous view.
  const view = store.async();
  const commit = view.commit.bind(view);
  view.commit = (...args: Parameters<typeof commit>) => {
    commits++;
    return commit(...args);
  };
  const app = await build(t, {}, view, now);
  await putNode(app, 'a', { zone: 'z1', disks: { d1: diskBody(), d2: diskBody({ storageAvailable: 50 * GiB }) } });
  await putNode(app, 'b', { zone: 'z2', disks: { d1: diskBody({ storageMaximum: 40 * GiB, storageAvailable: 40 * GiB }) } });
  await app.inject({ method: 'POST', url: '/replicas/schedule', payload: { volume: { name: 'live', size: 5 * GiB, numberOfReplicas: 1 } } });
  return { app, commits: () => commits };
}

/** Everything that must not move: what clients read, the settings' generation, the store's commits. */
async function state(app: Awaited<ReturnType<typeof fleet>>['app'], commits: () => number) {
  return { ...(await snapshot(app)), generation: (await app.inject({ method: 'GET', url: '/settings/replicas' })).json().generation, commits: commits() };
}

const STEPS = [
  { schedule: { volume: { name: 'v1', size: 10 * GiB, numberOfReplicas: 2 } } },
  { schedule: { volume: { name: 'v1', size: 10 * GiB, numberOfReplicas: 2 } } },
  { schedule: { volume: { name: 'v2', size: 30 * GiB, numberOfReplicas: 2 } }, dry_run: true, explain: true },
  { schedule: { volume: { name: 'huge', size: 500 * GiB, numberOfReplicas: 1 } } },
  { delete: 'v1' },
  { delete: 'nope' },
  { schedule: { volume: { name: 'v3', size: 20 * GiB, numberOfReplicas: 2 }, existingReplicas: [{ node: 'a', disk: 'd1', failed: true }] } },
];

/** The same step through the real route. */
async function real(app: Awaited<ReturnType<typeof fleet>>['app'], step: (typeof STEPS)[number]) {
  if ('delete' in step) {
    const name = step.delete!;
    const replica = await app.inject({ method: 'GET', url: `/replicas/${name}` });
    if (replica.statusCode === 200) return app.inject({ method: 'DELETE', url: `/replicas/${name}` });
    const ofVolume = (await app.inject({ method: 'GET', url: `/replicas?volume=${name}` })).json().replicas as Array<{ name: string }>;
    if (ofVolume.length === 0) return app.inject({ method: 'DELETE', url: `/replicas/${name}` });
    for (const r of ofVolume) await app.inject({ method: 'DELETE', url: `/replicas/${r.name}` });
    return { statusCode: 204, body: '' };
  }
  const query = [step.dry_run ? 'dry_run=true' : '', step.explain ? 'explain=true' : ''].filter(Boolean).join('&');
  return app.inject({ method: 'POST', url: `/replicas/schedule${query ? `?${query}` : ''}`, payload: step.schedule });
}

t.test('every step answers what the real route answers; nothing changes', async (t) => {
  const { app, commits } = await fleet(t);
  const before = await state(app, commits);
  const res = await app.inject({ method: 'POST', url: '/replicas/simulate', payload: { steps: STEPS } });
  t.equal(res.statusCode, 200);
  const sim = res.json() as { steps: Array<{ status: number; body: unknown }>; final: { disks: Array<Record<string, number | string>>; balanceScore: number } };
  t.same(await state(app, commits), before, 'live state, settings generation and store commits untouched');
  t.same(sim.steps.map((s) => s.status), [200, 200, 200, 409, 204, 404, 200]);

  // The final figures: the disks as the simulation left them.
  const final = sim.final.disks.map((d) => `${d.node}/${d.disk}:${Number(d.storageScheduled) / GiB}`);
  // v1 deleted; v3's failed replica keeps node a used (node anti-affinity hard): one replica, on b (degraded).
  t.same(final, ['a/d1:5', 'a/d2:0', 'b/d1:20'], 'the live 5 GiB on a/d1, v3 on b/d1');
  t.same((sim.steps[6]!.body as { unscheduled: unknown }).unscheduled, [{ reason: 'replica scheduling failed' }]);
  const usable = sim.final.disks.map((d) => d.usable as number);
  const mean = usable.reduce((x, y) => x + y, 0) / usable.length;
  t.equal(sim.final.balanceScore, (Math.max(...usable) - Math.min(...usable)) / mean);

  // Now for real, step by step: the same statuses and bodies (names and times included).
  for (const [i, step] of STEPS.entries()) {
    const r = await real(app, step);
    t.equal(r.statusCode, sim.steps[i]!.status, `step ${i}: status`);
    t.same(r.body === '' ? null : JSON.parse(r.body), sim.steps[i]!.body, `step ${i}: body`);
  }
});

t.test('hypothetical settings apply to the simulation only', async (t) => {
  const { app, commits } = await fleet(t);
  const before = await state(app, commits);
  const steps = [{ schedule: { volume: { name: 'pair', size: GiB, numberOfReplicas: 3 } } }];
  const live = (await app.inject({ method: 'POST', url: '/replicas/simulate', payload: { steps } })).json();
  t.equal(live.steps[0].body.replicas.length, 2, 'two nodes, node anti-affinity hard: two of three (degraded)');
  const soft = (await app.inject({ method: 'POST', url: '/replicas/simulate', payload: { steps, settings: { 'replica-soft-anti-affinity': true } } })).json();
  t.equal(soft.steps[0].body.replicas.length, 3, 'what if node anti-affinity were soft: all three');
  t.notOk('unscheduled' in soft.steps[0].body);
  t.same(await state(app, commits), before);
  t.equal((await app.inject({ method: 'GET', url: '/replicas/settings' })).json()['replica-soft-anti-affinity'], false);
  const text = (await app.inject({ method: 'GET', url: '/metrics' })).body;
  t.match(text, 'berth_simulations_total{domain="replicas",outcome="completed"} 2');
  t.match(text, 'berth_simulation_duration_seconds_count{domain="replicas"} 2');
});

t.test('refused simulations: too many steps 413, over budget 422, bad steps and settings 400; nothing changes', async (t) => {
  let now = NOW;
  const { app, commits } = await fleet(t, () => now);
  const before = await state(app, commits);
  const tooMany = await app.inject({ method: 'POST', url: '/replicas/simulate', payload: { steps: Array.from({ length: 10_001 }, () => ({ delete: 'x' })) } });
  t.equal(tooMany.statusCode, 413);
  t.match(tooMany.json(), { type: '/problems/simulation-too-large', status: 413 });
  for (const [body, path] of [
    [{ steps: [], settings: { 'no-such-setting': 1 } }, 'body.settings'],
    [{ steps: [], settings: { 'storage-over-provisioning-percentage': -1 } }, 'body.settings'],
    [{ steps: [{ schedule: { volume: { name: 'v', size: -1 } } }] }, 'body.steps.0'],
    [{ steps: [{ move: 'v' }] }, 'body.steps.0'],
    [{}, 'body.steps'],
  ] as const) {
    const res = await app.inject({ method: 'POST', url: '/replicas/simulate', payload: body });
    t.equal(res.statusCode, 400, JSON.stringify(body));
    t.ok((res.json().errors as Array<{ path: string }>).some((e) => e.path.startsWith(path)), `names ${path}: ${res.body}`);
  }
  // Each reading of the clock moves it 2 s: the third step ends past 5 s.
  const tick = () => { now += 2000; return now; };
  const clocked = await fleet(t, tick);
  const slow = await clocked.app.inject({ method: 'POST', url: '/replicas/simulate', payload: { steps: Array.from({ length: 5 }, (_, i) => ({ schedule: { volume: { name: `s${i}`, size: GiB, numberOfReplicas: 1 } } })) } });
  t.equal(slow.statusCode, 422);
  t.match(slow.json(), { type: '/problems/simulation-over-budget', status: 422, detail: /longer than 5 s/ });
  t.equal((await clocked.app.inject({ method: 'GET', url: '/replicas' })).json().replicas.length, 1, 'only the live replica');
  t.same(await state(app, commits), before);
  t.match((await app.inject({ method: 'GET', url: '/metrics' })).body, 'berth_simulations_total{domain="replicas",outcome="too_many_steps"} 1');
});
