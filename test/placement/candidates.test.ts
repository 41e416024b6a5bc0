// GET /allocation_candidates over nested and sharing providers: every verified example of reference §2–§4,
// granular groups, group_policy, same_subtree, root_required, limit and the response format.
import t from 'tap';
import { HAS_FORBIDDEN_TRAIT, MERGED_CAPACITY_EXCEEDED } from '../../src/placement/filters.ts';
import { build } from '../helper.ts';
import { call, createProviders, shapes, u } from './fixtures.ts';

const N = ['cnA', 'numaA0', 'numaA1', 'cnB', 'ss1', 'ss2', 'aggA', 'aggB', 'aggX'];
const id = Object.fromEntries(N.map((n) => [n, u(n)])) as Record<string, string>;
const names = Object.fromEntries(N.map((n) => [u(n), n]));

/** The reference's tree: cnA(MEMORY, ROOTTRAIT, aggA) → numaA0(VCPU, AVX2), numaA1(VCPU, aggX);
 *  cnB(VCPU, MEMORY, aggB); ss1(DISK, sharing, aggA); ss2(DISK, sharing, CUSTOM_SLOW, aggB). */
async function referenceFleet(t: { teardown(fn: () => unknown): void }) {
  const app = await build(t);
  await createProviders(app, [
    { uuid: id.cnA!, name: 'cnA', inventories: { MEMORY_MB: 4096 }, traits: ['CUSTOM_ROOTTRAIT'], aggregates: [id.aggA!] },
    { uuid: id.numaA0!, name: 'numaA0', parent: id.cnA!, inventories: { VCPU: 4 }, traits: ['HW_CPU_X86_AVX2'] },
    { uuid: id.numaA1!, name: 'numaA1', parent: id.cnA!, inventories: { VCPU: 4 }, aggregates: [id.aggX!] },
    { uuid: id.cnB!, name: 'cnB', inventories: { VCPU: 8, MEMORY_MB: 4096 }, aggregates: [id.aggB!] },
    { uuid: id.ss1!, name: 'ss1', inventories: { DISK_GB: 100 }, traits: ['MISC_SHARES_VIA_AGGREGATE'], aggregates: [id.aggA!] },
    { uuid: id.ss2!, name: 'ss2', inventories: { DISK_GB: 100 }, traits: ['MISC_SHARES_VIA_AGGREGATE', 'CUSTOM_SLOW'], aggregates: [id.aggB!] },
  ]);
  return app;
}

const ALL3 = 'resources=VCPU:1,MEMORY_MB:512,DISK_GB:10';
const A0 = 'cnA(MEMORY_MB:512)+numaA0(VCPU:1)+ss1(DISK_GB:10)';
const A1 = 'cnA(MEMORY_MB:512)+numaA1(VCPU:1)+ss1(DISK_GB:10)';
const B = 'cnB(MEMORY_MB:512,VCPU:1)+ss2(DISK_GB:10)';

t.test('reference §4 verified examples (nested + sharing)', async (t) => {
  const app = await referenceFleet(t);
  const sub = (q: string) => q.replace(/@(\w+)/g, (_m, n: string) => id[n]!);
  const cases: Array<[string, string[]]> = [
    [ALL3, [A0, A1, B]],
    [`${ALL3}&member_of=!@aggA`, [B]],
    [`${ALL3}&member_of=!@aggX`, [A0, B]],
    [`${ALL3}&member_of=@aggX`, []],
    ['resources1=VCPU:1&member_of1=@aggA', []],
    ['resources=VCPU:1&member_of=@aggA', ['numaA0(VCPU:1)', 'numaA1(VCPU:1)']],
    ['resources1=VCPU:1&member_of1=!@aggA', ['cnB(VCPU:1)', 'numaA0(VCPU:1)', 'numaA1(VCPU:1)']],
    [`${ALL3}&required=!CUSTOM_SLOW`, [A0, A1]],
    [`${ALL3}&in_tree=@cnA`, []],
    ['resources=VCPU:1,DISK_GB:10&required=CUSTOM_ROOTTRAIT', []],
    ['resources=VCPU:1,DISK_GB:10&root_required=CUSTOM_ROOTTRAIT', ['numaA0(VCPU:1)+ss1(DISK_GB:10)', 'numaA1(VCPU:1)+ss1(DISK_GB:10)']],
    ['resources=VCPU:1,DISK_GB:10&root_required=!CUSTOM_ROOTTRAIT', ['cnB(VCPU:1)+ss2(DISK_GB:10)']],
    ['resources=DISK_GB:10', ['ss1(DISK_GB:10)', 'ss2(DISK_GB:10)']],
    [`${ALL3}&required=HW_CPU_X86_AVX2`, [A0]],
    [`${ALL3}&required=in:HW_CPU_X86_AVX2,CUSTOM_SLOW`, [A0, B]],
    ['resources=VCPU:1,MEMORY_MB:512&in_tree=@numaA1', ['cnA(MEMORY_MB:512)+numaA0(VCPU:1)', 'cnA(MEMORY_MB:512)+numaA1(VCPU:1)']],
    ['resources=VCPU:5', ['cnB(VCPU:5)']],
    ['resources=VCPU:1&member_of=00000000-0000-0000-0000-000000000000', []],
    [`resources=VCPU:1&member_of=!00000000-0000-0000-0000-000000000000`, ['cnB(VCPU:1)', 'numaA0(VCPU:1)', 'numaA1(VCPU:1)']],
    ['resources=VCPU:1&in_tree=00000000-0000-0000-0000-000000000000', []],
  ];
  for (const [q, expected] of cases) {
    const r = await call(app, 'GET', `/allocation_candidates?${sub(q)}`);
    t.equal(r.status, 200, q);
    t.same(shapes(r.body, names), expected.slice().sort(), q);
  }
});

t.test('provider summaries cover every provider of every tree used, and only those (§2.4)', async (t) => {
  const app = await referenceFleet(t);
  let r = await call(app, 'GET', `/allocation_candidates?${ALL3}`);
  t.same(Object.keys(r.body.provider_summaries).map((k) => names[k]).sort(), ['cnA', 'cnB', 'numaA0', 'numaA1', 'ss1', 'ss2']);
  const numa = r.body.provider_summaries[id.numaA0!];
  t.same(numa, {
    resources: { VCPU: { capacity: 4, used: 0 } }, traits: ['HW_CPU_X86_AVX2'],
    parent_provider_uuid: id.cnA, root_provider_uuid: id.cnA,
  });
  t.same(r.body.provider_summaries[id.cnA!].resources, { MEMORY_MB: { capacity: 4096, used: 0 } });
  r = await call(app, 'GET', '/allocation_candidates?resources=DISK_GB:10');
  t.same(Object.keys(r.body.provider_summaries).map((k) => names[k]).sort(), ['ss1', 'ss2'], 'anchor trees not included');
  // Every allocation request maps the unsuffixed group to the providers it uses.
  r = await call(app, 'GET', `/allocation_candidates?${ALL3}&member_of=!${id.aggA}`);
  t.same(r.body.allocation_requests, [{
    allocations: { [id.cnB!]: { resources: { VCPU: 1, MEMORY_MB: 512 } }, [id.ss2!]: { resources: { DISK_GB: 10 } } },
    mappings: { '': [id.cnB, id.ss2] },
  }]);
});

t.test('granular groups: group_policy, duplicates by mappings (§2.3), same_subtree, resourceless groups', async (t) => {
  const app = await referenceFleet(t);
  let r = await call(app, 'GET', '/allocation_candidates?resources_C=VCPU:1&resources_D=VCPU:1&group_policy=isolate');
  t.equal(r.status, 200);
  t.same(shapes(r.body, names), ['numaA0(VCPU:1)+numaA1(VCPU:1)', 'numaA0(VCPU:1)+numaA1(VCPU:1)'], 'two entries, same allocations');
  const maps = r.body.allocation_requests.map((a: { mappings: Record<string, string[]> }) => `${names[a.mappings._C![0]!]}/${names[a.mappings._D![0]!]}`).sort();
  t.same(maps, ['numaA0/numaA1', 'numaA1/numaA0']);

  r = await call(app, 'GET', '/allocation_candidates?resources_C=VCPU:1&resources_D=VCPU:1&group_policy=none');
  t.same(shapes(r.body, names), [
    'cnB(VCPU:2)', 'numaA0(VCPU:1)+numaA1(VCPU:1)', 'numaA0(VCPU:1)+numaA1(VCPU:1)', 'numaA0(VCPU:2)', 'numaA1(VCPU:2)',
  ], 'none: same provider may serve both groups; amounts summed');

  // Capacity re-check after merging: 3 + 3 > 4 on one NUMA node, but fits cnB's 8.
  r = await call(app, 'GET', '/allocation_candidates?resources_C=VCPU:3&resources_D=VCPU:3&group_policy=none');
  t.same(shapes(r.body, names), ['cnB(VCPU:6)', 'numaA0(VCPU:3)+numaA1(VCPU:3)', 'numaA0(VCPU:3)+numaA1(VCPU:3)']);
  r = await call(app, 'GET', '/allocation_candidates?resources_C=VCPU:3&resources_D=VCPU:3&group_policy=none&explain=true');
  const merged = r.body.explain.filters.find((f: { name: string }) => f.name === 'MergedCapacity');
  t.same([merged.in, merged.out], [5, 3], 'explain counts the re-check: numaA0 and numaA1 cannot take 6');
  t.match(merged.rejected[0].reason, /VCPU on .*requested 6 > capacity 4/);
  t.equal(merged.rejected[0].code, MERGED_CAPACITY_EXCEEDED);
  // Groups naming disjoint classes put one amount on each (provider, class), which its group's Capacity check
  // passed: the re-check has nothing to sum and keeps every candidate (still listed, in = out).
  r = await call(app, 'GET', '/allocation_candidates?resources_C=VCPU:3&resources_D=MEMORY_MB:512&group_policy=none&explain=true');
  const disjoint = r.body.explain.filters.find((f: { name: string }) => f.name === 'MergedCapacity');
  t.ok(r.body.allocation_requests.length > 0);
  t.same([disjoint.in, disjoint.out, disjoint.rejected.length], [r.body.allocation_requests.length, r.body.allocation_requests.length, 0]);

  // The pre-merge checks are named filters too, per group, with their counts and sentences.
  r = await call(app, 'GET', '/allocation_candidates?resources=VCPU:1,MEMORY_MB:512,DISK_GB:10&required=!CUSTOM_SLOW&explain=true');
  t.same(shapes(r.body, names), [A0, A1]);
  const disk = r.body.explain.groups[0].filters.find((f: { name: string; class?: string }) => f.name === 'Capacity' && f.class === 'DISK_GB');
  t.same([disk.in, disk.out], [4, 4], 'ss1 (own tree and cnA) and ss2 (own tree and cnB) offer 10 GB');
  const traits = r.body.explain.groups[0].filters.find((f: { name: string }) => f.name === 'ForbiddenTraits');
  t.same([traits.in, traits.out], [3, 2], 'the combination using ss2 carries CUSTOM_SLOW');
  t.same(traits.rejected.map((x: { root_provider_uuid: string; code: string }) => [names[x.root_provider_uuid], x.code]), [['cnB', HAS_FORBIDDEN_TRAIT]]);
  t.match(traits.rejected[0].reason, /forbidden trait\(s\) CUSTOM_SLOW present/);
  r = await call(app, 'GET', '/allocation_candidates?resources1=VCPU:1&required1=!HW_CPU_X86_AVX2&explain=true');
  const forbidden = r.body.explain.groups[0].filters.find((f: { name: string }) => f.name === 'ForbiddenTraits');
  t.same([forbidden.in, forbidden.out], [3, 2], 'granular: the provider itself, numaA0 has AVX2');
  t.same(forbidden.rejected.map((x: { provider_uuid: string }) => names[x.provider_uuid]), ['numaA0']);

  // Unsuffixed + granular merge in one tree; the sharing provider may serve a granular group.
  r = await call(app, 'GET', `/allocation_candidates?resources=MEMORY_MB:512&resources1=VCPU:1&required1=HW_CPU_X86_AVX2&resources2=DISK_GB:5&group_policy=isolate`);
  t.same(shapes(r.body, names), ['cnA(MEMORY_MB:512)+numaA0(VCPU:1)+ss1(DISK_GB:5)']);
  t.same(r.body.allocation_requests[0].mappings, { '': [id.cnA], '1': [id.numaA0], '2': [id.ss1] });

  // same_subtree with a resourceless group: the AVX2 provider and the VCPU must share a subtree.
  r = await call(app, 'GET', '/allocation_candidates?resources_V=VCPU:1&required_T=HW_CPU_X86_AVX2&same_subtree=_V,_T&group_policy=none');
  t.same(shapes(r.body, names), ['numaA0(VCPU:1)']);
  t.same(r.body.allocation_requests[0].mappings, { _V: [id.numaA0], _T: [id.numaA0] });
  r = await call(app, 'GET', '/allocation_candidates?resources_V=VCPU:1&required_R=CUSTOM_ROOTTRAIT&same_subtree=_R,_V&group_policy=none');
  t.same(shapes(r.body, names), ['numaA0(VCPU:1)', 'numaA1(VCPU:1)'], 'root is ancestor of both NUMA nodes');
  r = await call(app, 'GET', '/allocation_candidates?resources_V=VCPU:1&resources_W=VCPU:1&same_subtree=_V,_W&group_policy=isolate');
  t.same(shapes(r.body, names), [], 'two sibling NUMA nodes are not one subtree');
});

t.test('before 1.29 a request using two providers of one tree is dropped (§2.5)', async (t) => {
  const app = await referenceFleet(t);
  let r = await call(app, 'GET', '/allocation_candidates?resources=VCPU:1,MEMORY_MB:512', undefined, '1.28');
  t.same(shapes(r.body, names), ['cnB(MEMORY_MB:512,VCPU:1)']);
  r = await call(app, 'GET', '/allocation_candidates?resources=VCPU:1,MEMORY_MB:512', undefined, '1.29');
  t.equal(r.body.allocation_requests.length, 3);
});

t.test('limit, ordering and microversion formats', async (t) => {
  const app = await build(t);
  const fleet = Array.from({ length: 6 }, (_, i) => ({ uuid: u(`n${i}`), inventories: { VCPU: 2 + i, MEMORY_MB: 1024 } }));
  await createProviders(app, fleet);
  let r = await call(app, 'GET', '/allocation_candidates?resources=VCPU:1&limit=2');
  t.same(Object.keys(r.body.allocation_requests[0].allocations), [u('n5')], 'most free VCPU first');
  t.same(Object.keys(r.body.allocation_requests[1].allocations), [u('n4')]);
  t.same(Object.keys(r.body.provider_summaries).sort(), [u('n4'), u('n5')].sort(), 'summaries trimmed to kept trees');
  r = await call(app, 'GET', '/allocation_candidates?resources=VCPU:1');
  t.equal(r.body.allocation_requests.length, 6);
  t.equal(r.headers['cache-control'], 'no-cache');
  t.equal(r.headers['openstack-api-version'], 'placement 1.39');
  r = await call(app, 'GET', '/allocation_candidates?resources=VCPU:1&limit=1', undefined, '1.29');
  t.notOk('mappings' in r.body.allocation_requests[0], 'no mappings before 1.34');
  // One group, one provider a request: each request is written from one template for the answer.
  r = await call(app, 'GET', '/allocation_candidates?resources1=VCPU:1&limit=2');
  t.same(r.body.allocation_requests, [
    { allocations: { [u('n5')]: { resources: { VCPU: 1 } } }, mappings: { 1: [u('n5')] } },
    { allocations: { [u('n4')]: { resources: { VCPU: 1 } } }, mappings: { 1: [u('n4')] } },
  ], "a suffixed group's mappings name its suffix");
  for (const amount of [3, 1, 3]) {
    r = await call(app, 'GET', `/allocation_candidates?resources=VCPU:${amount},MEMORY_MB:8`);
    const asked = r.body.allocation_requests.map((a: { allocations: Record<string, { resources: object }> }) => Object.values(a.allocations)[0]!.resources);
    t.equal(asked.length, amount === 1 ? 6 : 5, 'n0 offers at most 2 VCPU at once');
    t.same(asked, asked.map(() => ({ VCPU: amount, MEMORY_MB: 8 })), `every request asks VCPU:${amount} (asked in turn with other amounts)`);
  }
  t.ok('root_provider_uuid' in r.body.provider_summaries[u('n5')]);
  r = await call(app, 'GET', '/allocation_candidates?resources=VCPU:1&limit=1', undefined, '1.11');
  t.equal(r.status, 400, 'limit only exists from 1.16');
  r = await call(app, 'GET', '/allocation_candidates?resources=VCPU:1', undefined, '1.11');
  t.same(r.body.allocation_requests[0], { allocations: [{ resource_provider: { uuid: u('n5') }, resources: { VCPU: 1 } }] }, 'list form before 1.12');
  t.notOk('traits' in r.body.provider_summaries[u('n5')]);
  r = await call(app, 'GET', '/allocation_candidates?resources=VCPU:1', undefined, '1.9');
  t.equal(r.status, 404);
  // explain names the weighers.
  r = await call(app, 'GET', '/allocation_candidates?resources=VCPU:1,MEMORY_MB:1&limit=1&explain=true');
  t.same(r.body.explain.weighed[0].weighers['FreeCapacity:VCPU'], { raw: 7, normalized: 1 });
  t.equal(r.body.explain.total, 6);
});

t.test('randomize_allocation_candidates samples before limit', async (t) => {
  const app = await build(t, { randomize_allocation_candidates: true });
  await createProviders(app, Array.from({ length: 20 }, (_, i) => ({ uuid: u(`r${i}`), inventories: { VCPU: 4 } })));
  const seen = new Set<string>();
  for (let i = 0; i < 20; i++) {
    const r = await call(app, 'GET', '/allocation_candidates?resources=VCPU:1&limit=1');
    t.equal(r.body.allocation_requests.length, 1);
    seen.add(Object.keys(r.body.allocation_requests[0].allocations)[0]!);
  }
  t.ok(seen.size > 1, 'different providers come first');
});
