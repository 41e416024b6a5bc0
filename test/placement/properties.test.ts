// Property tests (fast-check) over the pure search: every returned allocation request fits capacity, min/max/step,
// and honours the traits and aggregates asked for, on random nested and sharing fleets.
import fc from 'fast-check';
import t from 'tap';
import { capacity, type Inventory } from '../../src/placement/capacity.ts';
import { findCandidates } from '../../src/placement/scheduler.ts';
import { PlacementModel, type Provider, type ProviderRecord } from '../../src/placement/model.ts';
import { parseAllocationCandidatesQuery } from '../../src/placement/query.ts';

const RCS = ['VCPU', 'MEMORY_MB', 'DISK_GB'] as const;
const TRAITS = ['CUSTOM_A', 'CUSTOM_B', 'CUSTOM_C'];
const AGGS = ['11111111-1111-4111-8111-111111111111', '22222222-2222-4222-8222-222222222222'];

const inventory = fc.record({
  total: fc.integer({ min: 4, max: 32 }),
  reserved: fc.integer({ min: 0, max: 2 }),
  min_unit: fc.constantFrom(1, 1, 1, 2),
  max_unit: fc.integer({ min: 2, max: 32 }),
  step_size: fc.constantFrom(1, 1, 1, 2),
  allocation_ratio: fc.constantFrom(1, 1.5, 2, 0.9),
}).map((i) => ({ ...i, reserved: Math.min(i.reserved, i.total), max_unit: Math.max(i.max_unit, i.min_unit) }));

/** Mostly absent, sometimes present, so that constraints filter without emptying every answer. */
function maybe<T>(arb: fc.Arbitrary<T>): fc.Arbitrary<T | undefined> {
  return fc.oneof({ weight: 2, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: arb });
}

const providerSpec = fc.record({
  inventories: fc.dictionary(fc.constantFrom(...RCS), inventory, { minKeys: 2, maxKeys: 3 }),
  traits: fc.subarray(TRAITS),
  aggregates: fc.subarray(AGGS),
  usedFraction: fc.double({ min: 0, max: 0.7, noNaN: true }),
  sharing: fc.boolean(),
  children: fc.integer({ min: 0, max: 2 }),
});

type Spec = typeof providerSpec extends fc.Arbitrary<infer T> ? T : never;

function buildModel(specs: Array<Spec>): PlacementModel {
  const m = new PlacementModel();
  for (const t of TRAITS) m.traits.add(t);
  let n = 0;
  const uuid = () => `00000000-0000-4000-8000-${String(++n).padStart(12, '0')}`;
  const add = (spec: Spec, parent: string | null, sharing: boolean) => {
    const rec: ProviderRecord = {
      uuid: uuid(), name: `rp${n}`, parent_provider_uuid: parent, generation: 0,
      inventories: spec.inventories as Record<string, Inventory>,
      traits: sharing ? [...spec.traits, 'MISC_SHARES_VIA_AGGREGATE'] : spec.traits, aggregates: spec.aggregates,
    };
    const p = m.applyProvider(rec);
    const allocations: Record<string, number> = {};
    for (const [rc, inv] of Object.entries(spec.inventories)) {
      const used = Math.floor(capacity(inv as Inventory) * spec.usedFraction);
      if (used > 0) allocations[rc] = used;
    }
    if (Object.keys(allocations).length > 0) {
      m.applyConsumer(`c-${p.uuid}`, { uuid: `c-${p.uuid}`, project_id: 'p', user_id: 'u', consumer_type: null, generation: 1, allocations: { [p.uuid]: allocations } });
    }
    return p;
  };
  specs.forEach((spec, i) => {
    const root = add(spec, null, spec.sharing && i % 3 === 0);
    for (let c = 0; c < spec.children; c++) add({ ...spec, aggregates: c === 0 ? [] : spec.aggregates }, root.uuid, false);
  });
  return m;
}

const request = fc.record({
  resources: fc.dictionary(fc.constantFrom(...RCS), fc.integer({ min: 1, max: 4 }), { minKeys: 1, maxKeys: 2 }),
  required: maybe(fc.constantFrom(...TRAITS)),
  anyOf: maybe(fc.subarray(TRAITS, { minLength: 2, maxLength: 2 })),
  forbidden: maybe(fc.constantFrom(...TRAITS)),
  memberOf: maybe(fc.constantFrom(...AGGS)),
  forbiddenAgg: maybe(fc.constantFrom(...AGGS)),
  granular: maybe(fc.record({ rc: fc.constantFrom(...RCS), amount: fc.integer({ min: 1, max: 4 }), policy: fc.constantFrom('none', 'isolate') })),
  limit: maybe(fc.integer({ min: 1, max: 5 })),
});

type Req = typeof request extends fc.Arbitrary<infer T> ? T : never;

function queryOf(r: Req): Array<[string, string]> {
  const pairs: Array<[string, string]> = [['resources', Object.entries(r.resources).map(([rc, n]) => `${rc}:${n}`).join(',')]];
  const traits = [r.required, r.forbidden && r.forbidden !== r.required ? `!${r.forbidden}` : undefined].filter(Boolean) as string[];
  if (traits.length) pairs.push(['required', traits.join(',')]);
  if (r.anyOf) pairs.push(['required', `in:${r.anyOf.join(',')}`]);
  if (r.memberOf) pairs.push(['member_of', r.memberOf]);
  if (r.forbiddenAgg) pairs.push(['member_of', `!${r.forbiddenAgg}`]);
  if (r.granular) {
    pairs.push(['resources1', `${r.granular.rc}:${r.granular.amount}`], ['group_policy', r.granular.policy]);
  }
  if (r.limit) pairs.push(['limit', String(r.limit)]);
  return pairs;
}

t.test('every allocation request fits and honours traits and aggregates', async (t) => {
  let nonEmpty = 0;
  fc.assert(fc.property(fc.array(providerSpec, { minLength: 2, maxLength: 8 }), request, (specs, req) => {
    const m = buildModel(specs);
    const q = parseAllocationCandidatesQuery(queryOf(req), 39);
    const { candidates } = findCandidates(m, q, { randomize: false });
    if (req.limit && candidates.length > req.limit) throw new Error('limit exceeded');
    if (candidates.length > 0) nonEmpty++;
    const unsuffixed = q.groups.find((g) => g.suffix === '')!;
    for (const c of candidates) {
      for (const [p, res] of c.allocations) {
        for (const [rc, sum] of res) {
          const inv = p.inventories.get(rc);
          if (!inv) throw new Error(`${rc} from ${p.uuid} without inventory`);
          if ((p.used.get(rc) ?? 0) + sum > capacity(inv)) throw new Error(`capacity exceeded on ${p.uuid} ${rc}`);
          if (sum > inv.max_unit) throw new Error('max_unit exceeded');
          if (!req.granular && (sum < inv.min_unit || sum % inv.step_size !== 0)) throw new Error('min_unit/step_size violated');
        }
      }
      // The unsuffixed group's amounts come wholly from single providers of its mapping.
      const mapped = c.mappings.get('')!;
      const suppliers = new Set<Provider>(mapped);
      const traits = new Set([...suppliers].flatMap((p) => [...p.traits]));
      for (const orSet of unsuffixed.required) {
        if (!orSet.some((tr) => traits.has(tr))) throw new Error(`required ${orSet} not satisfied`);
      }
      for (const p of suppliers) {
        for (const f of unsuffixed.forbidden) if (p.traits.has(f)) throw new Error(`forbidden ${f} on ${p.uuid}`);
        for (const a of unsuffixed.forbiddenAggs) {
          if (p.aggregates.has(a) || p.root.aggregates.has(a) || c.anchor.aggregates.has(a)) throw new Error('forbidden aggregate');
        }
        for (const set of unsuffixed.memberOf) {
          const inAgg = (x: Provider) => set.some((a) => x.aggregates.has(a));
          if (!inAgg(p) && !inAgg(c.anchor)) throw new Error('member_of not honoured');
        }
      }
    }
  }), { numRuns: 300, seed: 42 });
  t.ok(nonEmpty > 50, `the generator finds candidates often enough (${nonEmpty})`);
});

t.test('limit=N keeps the first N of the whole ranking', async (t) => {
  fc.assert(fc.property(fc.array(providerSpec, { minLength: 2, maxLength: 8 }), request, fc.integer({ min: 1, max: 6 }), (specs, req, n) => {
    const m = buildModel(specs);
    const whole = findCandidates(m, parseAllocationCandidatesQuery(queryOf({ ...req, limit: undefined }), 39), { randomize: false });
    const limited = findCandidates(m, parseAllocationCandidatesQuery(queryOf({ ...req, limit: n }), 39), { randomize: false });
    const keys = (r: typeof whole) => r.candidates.map((c) => c.key);
    if (limited.total !== whole.total) throw new Error(`total ${limited.total} vs ${whole.total}`);
    if (JSON.stringify(keys(limited)) !== JSON.stringify(keys(whole).slice(0, n))) throw new Error(`${keys(limited)} vs ${keys(whole)}`);
  }), { numRuns: 200, seed: 7 });
  t.pass();
});
