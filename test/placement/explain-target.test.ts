// GET /allocation_candidates?explain_target=<provider uuid>: one provider's verdict, checked against the full
// explain=true trace for every provider of a small nested + sharing fleet, and its bad input.
import t from 'tap';
import { build } from '../helper.ts';
import { call, createProviders, u } from './fixtures.ts';

const N = ['cnA', 'numaA0', 'numaA1', 'cnB', 'ss1', 'ss2', 'aggA', 'aggB'];
const id = Object.fromEntries(N.map((n) => [n, u(n)])) as Record<string, string>;
const PROVIDERS = ['cnA', 'numaA0', 'numaA1', 'cnB', 'ss1', 'ss2'];

interface Rejection { provider_uuid?: string; root_provider_uuid: string; code: string; reason: string }
interface Stage { name: string; class?: string; rejected: Rejection[] }
interface Step { name: string; class?: string; root_provider_uuid: string; passed: boolean; code?: string; reason?: string }
interface AllocationRequest { allocations: Record<string, unknown>; mappings?: Record<string, string[]> }

const involves = (ar: AllocationRequest, p: string) =>
  p in ar.allocations || Object.values(ar.mappings ?? {}).some((list) => list.includes(p));
const sameStage = (s: Stage, step: Step) => s.name === step.name && s.class === step.class;
const asStep = (stage: Stage, r: Rejection): Step => ({
  name: stage.name, ...(stage.class === undefined ? {} : { class: stage.class }),
  root_provider_uuid: r.root_provider_uuid, passed: false, code: r.code, reason: r.reason,
});

async function fleet(t: { teardown(fn: () => unknown): void }) {
  const app = await build(t);
  await createProviders(app, [
    { uuid: id.cnA!, name: 'cnA', inventories: { MEMORY_MB: 4096 }, traits: ['CUSTOM_ROOTTRAIT'], aggregates: [id.aggA!] },
    { uuid: id.numaA0!, name: 'numaA0', parent: id.cnA!, inventories: { VCPU: 4 }, traits: ['HW_CPU_X86_AVX2'] },
    { uuid: id.numaA1!, name: 'numaA1', parent: id.cnA!, inventories: { VCPU: 4 } },
    { uuid: id.cnB!, name: 'cnB', inventories: { VCPU: 8, MEMORY_MB: 4096 }, aggregates: [id.aggB!] },
    { uuid: id.ss1!, name: 'ss1', inventories: { DISK_GB: 100 }, traits: ['MISC_SHARES_VIA_AGGREGATE'], aggregates: [id.aggA!] },
    { uuid: id.ss2!, name: 'ss2', inventories: { DISK_GB: 100 }, traits: ['MISC_SHARES_VIA_AGGREGATE', 'CUSTOM_SLOW'], aggregates: [id.aggB!] },
  ]);
  return app;
}

t.test('explain_target is the full trace seen from one provider', async (t) => {
  const app = await fleet(t);
  const queries = [
    'resources=VCPU:1,MEMORY_MB:512,DISK_GB:10',
    'resources=VCPU:1,MEMORY_MB:512,DISK_GB:10&required=!CUSTOM_SLOW',
    'resources=VCPU:5,MEMORY_MB:512',
    'resources=VCPU:1&limit=2',
    'resources1=VCPU:1&required1=!HW_CPU_X86_AVX2&resources2=DISK_GB:10&group_policy=none',
    'resources_C=VCPU:3&resources_D=VCPU:3&group_policy=none',
    'resources=DISK_GB:10',
    'resources=VCPU:1&required=HW_CPU_X86_AVX2',
    'resources1=VCPU:1&required1=HW_CPU_X86_AVX2',
    `resources1=VCPU:1&member_of1=${id.aggB}&resources2=MEMORY_MB:1&group_policy=isolate`,
  ];
  let refusals = 0;
  let weighed = 0;
  for (const q of queries) {
    const full = await call(app, 'GET', `/allocation_candidates?${q}&explain=true`);
    t.equal(full.status, 200, q);
    const requests = full.body.allocation_requests as AllocationRequest[];
    for (const name of PROVIDERS) {
      const p = id[name]!;
      const what = `${q} @${name}`;
      const r = await call(app, 'GET', `/allocation_candidates?${q}&explain_target=${p}`);
      t.equal(r.status, 200, what);
      t.same(r.body.allocation_requests, requests, `${what}: the same answer`);
      t.equal(r.body.explain, undefined, `${what}: not the full trace`);
      const target = r.body.target;
      t.equal(target.provider_uuid, p);
      t.equal(target.groups.length, full.body.explain.groups.length, what);
      target.groups.forEach((g: { suffix: string; indexed: boolean; filters: Step[] }, gi: number) => {
        const stages = full.body.explain.groups[gi].filters as Stage[];
        t.equal(g.suffix, full.body.explain.groups[gi].suffix);
        if (!g.indexed) {
          // The search never looked at it: the full trace has no row of it; alone, a filter refuses it.
          t.notOk(stages.some((st) => st.rejected.some((x) => x.provider_uuid === p)), `${what}: not in the full trace`);
          t.ok(g.filters.some((st) => !st.passed), `${what}: refused alone`);
          refusals++;
          return;
        }
        // Every rejection of this provider in the full trace is one of its refusals, and nothing else refused it
        // but a combination it was part of (those rows name the tree only).
        const mine = stages.flatMap((s) => s.rejected.filter((x) => x.provider_uuid === p).map((x) => asStep(s, x)));
        const refused = g.filters.filter((s) => !s.passed);
        for (const m of mine) t.ok(refused.some((s) => JSON.stringify(s) === JSON.stringify(m)), `${what}: ${m.name} refused it`);
        for (const s of refused) {
          const rows = stages.filter((st) => sameStage(st, s)).flatMap((st) => st.rejected.map((x) => ({ st, x })));
          t.ok(rows.some(({ st, x }) => (x.provider_uuid === p || x.provider_uuid === undefined) &&
            JSON.stringify(asStep(st, x)) === JSON.stringify(s)), `${what}: ${s.name} is in the full trace`);
        }
        for (const s of g.filters.filter((st) => st.passed)) {
          t.ok(stages.some((st) => sameStage(st, s)), `${what}: ${s.name} ran`);
          t.notOk(stages.some((st) => sameStage(st, s) && st.rejected.some((x) => x.provider_uuid === p && x.root_provider_uuid === s.root_provider_uuid)),
            `${what}: ${s.name} passed it`);
        }
        refusals += refused.length;
      });
      for (const s of (target.filters as Step[]).filter((st) => !st.passed)) {
        const stage = (full.body.explain.filters as Stage[]).find((st) => st.name === s.name)!;
        t.ok(stage.rejected.some((x) => JSON.stringify(asStep(stage, x)) === JSON.stringify(s)), `${what}: post-merge ${s.name}`);
        refusals++;
      }
      const expected = (full.body.explain.weighed as Array<{ index: number }>).filter((w) => involves(requests[w.index]!, p));
      t.same(target.weighed, expected, `${what}: the weights of the candidates it is part of`);
      weighed += expected.length;
    }
  }
  t.ok(refusals > 10 && weighed > 10, `the comparison saw refusals (${refusals}) and weights (${weighed})`);

  // Spot checks with the numbers.
  let r = await call(app, 'GET', `/allocation_candidates?resources=VCPU:1,MEMORY_MB:512,DISK_GB:10&required=!CUSTOM_SLOW&explain_target=${id.ss2}`);
  const refusal = r.body.target.groups[0].filters.find((s: Step) => !s.passed);
  t.match(refusal, { name: 'ForbiddenTraits', root_provider_uuid: id.cnB, passed: false });
  t.match(refusal.reason, /forbidden trait\(s\) CUSTOM_SLOW present/);
  t.same(r.body.target.weighed, []);
  r = await call(app, 'GET', `/allocation_candidates?resources=VCPU:5,MEMORY_MB:1&explain_target=${id.numaA0}`);
  const capacity = r.body.target.groups[0].filters.find((s: Step) => !s.passed);
  t.match(capacity, { name: 'Capacity', class: 'VCPU', code: String, passed: false });
  t.match(capacity.reason, /5/);
  // A provider the trait index rules out is still judged, alone, by the filter that would refuse it.
  r = await call(app, 'GET', `/allocation_candidates?resources1=VCPU:1&required1=HW_CPU_X86_AVX2&explain_target=${id.cnB}`);
  t.match(r.body.target.groups[0], { indexed: false, filters: [{ name: 'Capacity', passed: true }, { name: 'InTree', passed: true }, { name: 'RequiredTraits', passed: false, reason: /HW_CPU_X86_AVX2/ }] });
  r = await call(app, 'GET', `/allocation_candidates?resources1=VCPU:1&required1=HW_CPU_X86_AVX2&explain_target=${id.numaA0}`);
  t.match(r.body.target.groups[0], { indexed: true, filters: [{ passed: true }] });
  r = await call(app, 'GET', `/allocation_candidates?resources=MEMORY_MB:1&explain_target=${id.cnB}`);
  t.same(r.body.target.weighed.map((w: { weighers: object }) => Object.keys(w.weighers)), [['FreeCapacity:MEMORY_MB']]);
  r = await call(app, 'GET', `/allocation_candidates?resources=VCPU:100&explain_target=${id.cnB}`);
  t.match(r.body.target, { groups: [], filters: [], weighed: [], stopped: /no provider has capacity for VCPU:100/ });
});

t.test('explain_target bad input', async (t) => {
  const app = await fleet(t);
  const missing = u('nobody');
  let r = await call(app, 'GET', `/allocation_candidates?resources=VCPU:1&explain_target=${missing}`);
  t.equal(r.status, 404);
  t.match(r.body.errors[0], { status: 404, detail: new RegExp(missing) });
  r = await call(app, 'GET', '/allocation_candidates?resources=VCPU:1&explain_target=not-a-uuid');
  t.equal(r.status, 400);
  t.match(r.body.errors[0], { status: 400, detail: /explain_target.*not-a-uuid/ });
  // Placement's own errors come first, as for explain.
  r = await call(app, 'GET', `/allocation_candidates?resources=VCPU:x&explain_target=${missing}`);
  t.equal(r.status, 400);
  // Accepted at every microversion of the route, like explain.
  r = await call(app, 'GET', `/allocation_candidates?resources=VCPU:1&explain_target=${id.cnB}`, undefined, '1.10');
  t.equal(r.status, 200);
  t.equal(r.body.target.provider_uuid, id.cnB);
  r = await call(app, 'GET', `/allocation_candidates?resources=VCPU:1&explain_target=${id.cnB}`, undefined, '1.9');
  t.equal(r.status, 404, 'the route itself starts at 1.10');
});
