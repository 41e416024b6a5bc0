// GET /headroom: equal, on generated fleets (traits, aggregates, nested and sharing providers), to a client that
// really asks GET /allocation_candidates and claims the first allocation request with PUT /allocations/{new
// consumer}, one after another, until the first empty answer; and it changes nothing.
import { randomUUID } from 'node:crypto';
import t from 'tap';
import { build } from '../helper.ts';
import { call, createProviders, u, type ProviderSpec } from './fixtures.ts';

/** A small deterministic PRNG (mulberry32), so each generated fleet is the same on every run. */
function prng(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let x = Math.imul(a ^ (a >>> 15), 1 | a);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

const AGG = [u('aggP'), u('aggQ')];

/** Roots with VCPU/MEMORY (some with NUMA children holding the VCPU), traits, aggregates, and sharing disks. */
function fleet(seed: number): { specs: ProviderSpec[]; sharing: Set<string> } {
  const rnd = prng(seed);
  const pick = (n: number) => Math.floor(rnd() * n);
  const specs: ProviderSpec[] = [];
  const sharing = new Set<string>();
  for (let i = 0; i < 3 + pick(3); i++) {
    const root = u(`f${seed}cn${i}`);
    const aggregates = [AGG[pick(2)]!];
    const traits = rnd() < 0.5 ? ['HW_CPU_X86_AVX2'] : [];
    const memory = { total: 2048 + 1024 * pick(4), reserved: 512 * pick(2), allocation_ratio: 1 + pick(2) * 0.5 };
    if (rnd() < 0.5) {
      specs.push({ uuid: root, name: `cn${i}`, inventories: { MEMORY_MB: memory }, traits, aggregates });
      for (let k = 0; k < 2; k++) specs.push({ uuid: u(`f${seed}cn${i}n${k}`), name: `cn${i}n${k}`, parent: root, inventories: { VCPU: 2 + pick(4) } });
    } else {
      specs.push({ uuid: root, name: `cn${i}`, inventories: { VCPU: { total: 2 + pick(6), allocation_ratio: 1 + pick(3) }, MEMORY_MB: memory }, traits, aggregates });
    }
  }
  for (let s = 0; s < 2; s++) {
    const uuid = u(`f${seed}ss${s}`);
    sharing.add(uuid);
    specs.push({ uuid, name: `ss${s}`, inventories: { DISK_GB: { total: 40 + 20 * pick(4), step_size: 10 } }, traits: ['MISC_SHARES_VIA_AGGREGATE'], aggregates: [AGG[s]!] });
  }
  return { specs, sharing };
}

const QUERIES = [
  'resources=VCPU:1,MEMORY_MB:512',
  'resources=VCPU:2,MEMORY_MB:1024,DISK_GB:10',
  'resources=VCPU:1&required=HW_CPU_X86_AVX2',
  `resources=VCPU:1,DISK_GB:20&member_of=${AGG[1]}`,
  'resources=DISK_GB:10',
  'resources1=VCPU:1&resources2=MEMORY_MB:1000&group_policy=none',
];

async function generations(app: Awaited<ReturnType<typeof build>>) {
  const r = await call(app, 'GET', '/resource_providers');
  return (r.body.resource_providers as Array<{ uuid: string; generation: number }>).map((p) => [p.uuid, p.generation]);
}

/** The client's way: ask, claim the first, until the first empty answer. */
async function claimUntilFull(app: Awaited<ReturnType<typeof build>>, q: string, sharing: Set<string>) {
  const roots = new Map<string, number>();
  let fits = 0;
  for (;;) {
    const r = await call(app, 'GET', `/allocation_candidates?${q}`);
    const first = r.body.allocation_requests[0];
    if (!first) break;
    const put = await call(app, 'PUT', `/allocations/${randomUUID()}`, {
      allocations: first.allocations, consumer_generation: null, project_id: 'p', user_id: 'u', consumer_type: 'INSTANCE',
    });
    if (put.status !== 204) throw new Error(`claim ${put.status} ${JSON.stringify(put.body)}`);
    fits++;
    // The candidate's tree: that of its non-sharing providers, else the sharing provider's own.
    const used = Object.keys(first.allocations);
    const anchor = used.find((p) => !sharing.has(p)) ?? used[0]!;
    const root = r.body.provider_summaries[anchor].root_provider_uuid as string;
    roots.set(root, (roots.get(root) ?? 0) + 1);
  }
  return { fits, roots: [...roots].sort(([a], [b]) => (a < b ? -1 : 1)).map(([root_provider_uuid, n]) => ({ root_provider_uuid, fits: n })) };
}

t.test('headroom equals sequential claims on generated fleets, and changes nothing', async (t) => {
  let total = 0;
  for (const seed of [1, 2, 3]) {
    for (const q of QUERIES) {
      const app = await build(t);
      const { specs, sharing } = fleet(seed);
      await createProviders(app, specs);
      const before = await generations(app);
      const candidatesBefore = (await call(app, 'GET', `/allocation_candidates?${q}`)).body;
      const r = await call(app, 'GET', `/headroom?${q}`);
      t.equal(r.status, 200, q);
      t.same(await generations(app), before, `${seed} ${q}: generations unchanged`);
      t.same((await call(app, 'GET', `/allocation_candidates?${q}`)).body, candidatesBefore, `${seed} ${q}: usage unchanged`);
      const real = await claimUntilFull(app, q, sharing);
      t.same(r.body, { fits: real.fits, truncated: false, roots: real.roots }, `fleet ${seed}, ${q}: ${real.fits} claims`);
      total += real.fits;
      await app.close();
    }
  }
  t.ok(total > 50, `the fleets took claims (${total})`);
});

t.test('max truncates; bad input is a 400 naming it', async (t) => {
  const app = await build(t);
  await createProviders(app, [{ uuid: u('one'), inventories: { VCPU: 8 } }]);
  let r = await call(app, 'GET', '/headroom?resources=VCPU:1');
  t.same(r.body, { fits: 8, truncated: false, roots: [{ root_provider_uuid: u('one'), fits: 8 }] });
  r = await call(app, 'GET', '/headroom?resources=VCPU:1&max=3');
  t.same(r.body, { fits: 3, truncated: true, roots: [{ root_provider_uuid: u('one'), fits: 3 }] });
  r = await call(app, 'GET', '/headroom?resources=VCPU:1&max=8');
  t.same(r.body, { fits: 8, truncated: true, roots: [{ root_provider_uuid: u('one'), fits: 8 }] }, 'max reached: more may fit');
  for (const max of ['0', '1000001', '-1', 'x', '2.5', '']) {
    r = await call(app, 'GET', `/headroom?resources=VCPU:1&max=${max}`);
    t.equal(r.status, 400, `max=${max}`);
    t.match(r.body.errors[0].detail, /'max' must be an integer from 1 to 1000000/);
  }
  r = await call(app, 'GET', '/headroom?resources=VCPU:1&max=1000000');
  t.same(r.body.fits, 8);
  r = await call(app, 'GET', '/headroom?resources=VCPU');
  t.equal(r.status, 400, 'the query is Placement\'s, with its errors');
  r = await call(app, 'GET', '/headroom?resources=VCPU:9');
  t.same(r.body, { fits: 0, truncated: false, roots: [] });
  const metrics = await app.inject({ method: 'GET', url: '/metrics' });
  t.match(metrics.body, /berth_headroom_requests_total\{domain="placement",truncated="true"\} 2/);
});
