// The single-provider search reads the model's class columns (limit, usage, free capacity, unit bounds) and the
// indexes' slot lists: its verdicts and ranking must follow every change of inventories, traits and usage.
import t from 'tap';
import { PlacementModel, type ProviderRecord } from '../../src/placement/model.ts';
import { parseAllocationCandidatesQuery } from '../../src/placement/query.ts';
import { findCandidates } from '../../src/placement/scheduler.ts';

const uuid = (i: number) => `00000000-0000-4000-8000-${i.toString(16).padStart(12, '0')}`;
const AGG = 'a0000000-0000-4000-8000-000000000001';
const vcpu = (o: Partial<{ total: number; min_unit: number; max_unit: number; step_size: number }> = {}) =>
  ({ total: 8, reserved: 0, min_unit: 1, max_unit: 16, step_size: 1, allocation_ratio: 1, ...o });
const disk = { total: 100, reserved: 0, min_unit: 1, max_unit: 100, step_size: 1, allocation_ratio: 1 };

function provider(i: number, inventories: ProviderRecord['inventories'], traits: string[] = [], aggregates: string[] = []): ProviderRecord {
  return { uuid: uuid(i), name: `p${i}`, parent_provider_uuid: null, generation: 1, inventories, traits, aggregates };
}

/** Each candidate's provider uuid (ranked), and every single-provider rejection as uuid → code. */
function search(model: PlacementModel, qs: string) {
  const q = parseAllocationCandidatesQuery([...new URLSearchParams(qs)], 39);
  const r = findCandidates(model, q, { randomize: false, explain: true });
  const rejected: Record<string, string> = {};
  for (const g of r.trace.groups) for (const f of g.filters) for (const x of f.rejected) rejected[x.provider_uuid!] = x.code;
  return { chosen: r.candidates.map((c) => c.key), rejected, stopped: r.trace.stopped };
}

t.test('unit checks follow inventory changes (and only refuse what a provider\'s own units refuse)', async (t) => {
  const m = new PlacementModel();
  for (let i = 1; i <= 3; i++) m.applyProvider(provider(i, { VCPU: vcpu() }));
  t.same(search(m, 'resources=VCPU:2').chosen.length, 3, 'uniform units: every provider fits');
  m.applyProvider({ ...provider(2, { VCPU: vcpu({ min_unit: 3, step_size: 4 }) }), generation: 2 });
  let r = search(m, 'resources=VCPU:2');
  t.same(r.rejected, { [uuid(2)]: 'below_min_unit' });
  r = search(m, 'resources=VCPU:5');
  t.same(r.rejected, { [uuid(2)]: 'not_a_multiple_of_step_size' });
  r = search(m, 'resources=VCPU:4');
  t.same(r.chosen.length, 3, 'a multiple of every step size');
  m.applyProvider({ ...provider(2, { VCPU: vcpu({ max_unit: 2 }) }), generation: 3 });
  r = search(m, 'resources=VCPU:3');
  t.same(r.rejected, { [uuid(2)]: 'above_max_unit' });
  m.applyProvider({ ...provider(2, { VCPU: vcpu() }), generation: 4 });
  t.same(search(m, 'resources=VCPU:3').chosen.length, 3, 'units back to the others\': every provider fits again');
  t.match(search(m, 'resources=VCPU:17').stopped, /no provider has capacity for VCPU:17/, 'above every max_unit');
});

t.test('the first class that does not fit names the code; usage changes the verdicts and the ranking', async (t) => {
  const m = new PlacementModel();
  // The search starts from the smallest index: the trait's (p1, p2) here, so p2's missing DISK_GB shows.
  m.applyProvider(provider(1, { VCPU: vcpu({ total: 2 }), DISK_GB: disk }, ['HW_CPU_X86_AVX2']));
  m.applyProvider(provider(2, { VCPU: vcpu({ total: 6 }) }, ['HW_CPU_X86_AVX2']));
  m.applyProvider(provider(3, { VCPU: vcpu({ total: 2 }), DISK_GB: disk }));
  m.applyProvider(provider(4, { VCPU: vcpu(), DISK_GB: disk }));
  let r = search(m, 'resources=VCPU:4,DISK_GB:10&required=HW_CPU_X86_AVX2');
  t.same(r.rejected, { [uuid(1)]: 'insufficient_capacity', [uuid(2)]: 'no_inventory' });
  r = search(m, 'resources=VCPU:7,DISK_GB:10&required=HW_CPU_X86_AVX2');
  t.same(r.rejected, { [uuid(1)]: 'insufficient_capacity', [uuid(2)]: 'insufficient_capacity' }, 'VCPU is checked first');
  r = search(m, 'resources=DISK_GB:10,VCPU:7&required=HW_CPU_X86_AVX2');
  t.same(r.rejected, { [uuid(1)]: 'insufficient_capacity', [uuid(2)]: 'no_inventory' }, 'DISK_GB is checked first');
  r = search(m, 'resources=VCPU:4,DISK_GB:10');
  t.same(r.rejected, { [uuid(1)]: 'insufficient_capacity', [uuid(3)]: 'insufficient_capacity' });
  t.same(r.chosen, [uuid(4)]);
  t.same(search(m, 'resources=VCPU:1').chosen, [uuid(4), uuid(2), uuid(1), uuid(3)], 'most free VCPU first, ties by uuid');
  const claim = (c: number, p: number, amount: number) => m.applyConsumer(uuid(100 + c), {
    uuid: uuid(100 + c), project_id: 'p', user_id: 'u', consumer_type: null, generation: 1, allocations: { [uuid(p)]: { VCPU: amount } },
  });
  claim(1, 4, 5);
  t.same(search(m, 'resources=VCPU:1').chosen, [uuid(2), uuid(4), uuid(1), uuid(3)], 'the claim lowered p4\'s free VCPU');
  r = search(m, 'resources=VCPU:4');
  t.same(r.chosen, [uuid(2)]);
  t.equal(r.rejected[uuid(4)], 'insufficient_capacity', '5 used + 4 > 8');
  m.applyConsumer(uuid(101), null);
  t.same(search(m, 'resources=VCPU:4').chosen, [uuid(4), uuid(2)], 'the claim deleted');
});

t.test('trait and aggregate verdicts follow providers replaced and removed', async (t) => {
  const m = new PlacementModel();
  for (let i = 1; i <= 4; i++) m.applyProvider(provider(i, { VCPU: vcpu() }, i % 2 === 0 ? ['HW_CPU_X86_AVX2'] : [], i <= 2 ? [AGG] : []));
  let r = search(m, `resources=VCPU:1&required=HW_CPU_X86_AVX2&member_of=!in:${AGG}`);
  t.same(r.chosen, [uuid(4)]);
  t.same(r.rejected, { [uuid(2)]: 'in_forbidden_aggregate' }, 'the seed (the trait\'s index) holds only AVX2 providers');
  r = search(m, 'resources=VCPU:1&required=!HW_CPU_X86_AVX2&root_required=!COMPUTE_STATUS_DISABLED');
  t.same(r.chosen, [uuid(1), uuid(3)]);
  m.applyProvider({ ...provider(3, { VCPU: vcpu() }, ['COMPUTE_STATUS_DISABLED']), generation: 2 });
  r = search(m, 'resources=VCPU:1&required=!HW_CPU_X86_AVX2&root_required=!COMPUTE_STATUS_DISABLED');
  t.same(r.chosen, [uuid(1)]);
  t.equal(r.rejected[uuid(3)], 'root_required_unmet');
  m.removeProvider(uuid(1));
  m.applyProvider(provider(5, { VCPU: vcpu() }, [], [AGG]));
  r = search(m, `resources=VCPU:1&member_of=${AGG}`);
  t.same(r.chosen.sort(), [uuid(2), uuid(5)], 'a new provider in the freed slot');
});

t.test('a search starts from clean verdict rows: what the search before refused does not carry over', async (t) => {
  const m = new PlacementModel();
  m.traits.add('CUSTOM_A');
  for (let i = 1; i <= 40; i++) m.applyProvider(provider(i, { VCPU: vcpu(), DISK_GB: disk }, i % 2 ? ['CUSTOM_A'] : [], i % 3 ? [] : [AGG]));
  // Each search after another that refused most providers, by other filters and with other numbers of rows.
  const cases: Array<[string, number]> = [
    ['resources=VCPU:9', 0],
    ['resources=VCPU:1', 40],
    [`resources=VCPU:1&required=CUSTOM_A&member_of=!${AGG}`, 13],
    ['resources=VCPU:1,DISK_GB:10', 40],
    ['resources=VCPU:1&required=!CUSTOM_A', 20],
    [`resources=VCPU:1&member_of=${AGG}`, 13],
    ['resources=VCPU:1&root_required=CUSTOM_A', 20],
    ['resources=DISK_GB:1', 40],
  ];
  for (const [qs, chosen] of cases) t.equal(search(m, qs).chosen.length, chosen, qs);
});
