// Headroom per tree (src/placement/headroom.ts) against its definition, the sequential path (search, claim the
// first, repeat), on generated fleets: nested trees (NUMA-like children, so a tree offers several candidates),
// traits, aggregates, granular groups with either group_policy, reserved space, ratios, min/max/step, every sign of
// the weighers' multiplier, and a max small enough to truncate (the per-root split then follows the ranking).
import fc from 'fast-check';
import t from 'tap';
import { capacity, type Inventory } from '../../src/placement/capacity.ts';
import { headroom, sequentialHeadroom, treeHeadroom } from '../../src/placement/headroom.ts';
import { PlacementModel, type Provider, type ProviderRecord } from '../../src/placement/model.ts';
import { parseAllocationCandidatesQuery } from '../../src/placement/query.ts';
import { findCandidates } from '../../src/placement/scheduler.ts';

const RCS = ['VCPU', 'MEMORY_MB', 'DISK_GB'] as const;
const TRAITS = ['CUSTOM_A', 'CUSTOM_B'];
const AGGS = ['11111111-1111-4111-8111-111111111111', '22222222-2222-4222-8222-222222222222'];

const inventory = fc.record({
  total: fc.integer({ min: 1, max: 40 }),
  reserved: fc.integer({ min: 0, max: 3 }),
  min_unit: fc.constantFrom(1, 1, 1, 2),
  max_unit: fc.integer({ min: 2, max: 40 }),
  step_size: fc.constantFrom(1, 1, 1, 2),
  allocation_ratio: fc.constantFrom(1, 1, 1.5, 2, 0.9),
}).map((i) => ({ ...i, reserved: Math.min(i.reserved, i.total), max_unit: Math.max(i.max_unit, i.min_unit) }));

const node = fc.record({
  inventories: fc.dictionary(fc.constantFrom(...RCS), inventory, { minKeys: 1, maxKeys: 3 }),
  traits: fc.subarray(TRAITS),
  aggregates: fc.subarray(AGGS),
  usedFraction: fc.constantFrom(0, 0, 0.3, 0.6),
});
const tree = fc.record({ root: node, children: fc.array(node, { maxLength: 3 }) });

type Node = typeof node extends fc.Arbitrary<infer T> ? T : never;
type TreeSpec = typeof tree extends fc.Arbitrary<infer T> ? T : never;

/**
 * With a `salt`, uuids are scrambled (uuid order is not creation order) and as many providers as trees are created
 * and removed first (their slots are reused last freed first: slot order is neither).
 */
function buildModel(trees: TreeSpec[], salt?: number): PlacementModel {
  const m = new PlacementModel();
  for (const tr of TRAITS) m.traits.add(tr);
  let n = 0;
  // Multiplying by an odd number is a bijection modulo 2^32: distinct uuids.
  const uuidOf = (k: number) => `00000000-0000-4000-8000-${(salt === undefined ? k : (Math.imul(k, 2654435761) + salt) >>> 0).toString().padStart(12, '0')}`;
  const add = (spec: Node, parent: string | null) => {
    const uuid = uuidOf(++n);
    const rec: ProviderRecord = {
      uuid, name: `rp${n}`, parent_provider_uuid: parent, generation: 0,
      inventories: spec.inventories as Record<string, Inventory>, traits: spec.traits, aggregates: spec.aggregates,
    };
    m.applyProvider(rec);
    const allocations: Record<string, number> = {};
    for (const [rc, inv] of Object.entries(spec.inventories)) {
      const used = Math.floor(capacity(inv as Inventory) * spec.usedFraction);
      if (used > 0) allocations[rc] = used;
    }
    if (Object.keys(allocations).length > 0) {
      m.applyConsumer(`c-${uuid}`, { uuid: `c-${uuid}`, project_id: 'p', user_id: 'u', consumer_type: null, generation: 1, allocations: { [uuid]: allocations } });
    }
    return uuid;
  };
  if (salt !== undefined) {
    const spare: Node = { inventories: { VCPU: { total: 1, reserved: 0, min_unit: 1, max_unit: 1, step_size: 1, allocation_ratio: 1 } }, traits: [], aggregates: [], usedFraction: 0 };
    for (const uuid of trees.map(() => add(spare, null))) m.removeProvider(uuid);
  }
  for (const tr of trees) {
    const root = add(tr.root, null);
    for (const child of tr.children) add(child, root);
  }
  return m;
}

const request = fc.record({
  resources: fc.dictionary(fc.constantFrom(...RCS), fc.integer({ min: 1, max: 4 }), { minKeys: 1, maxKeys: 3 }),
  required: fc.option(fc.constantFrom(...TRAITS), { nil: undefined }),
  forbidden: fc.option(fc.constantFrom(...TRAITS), { nil: undefined }),
  memberOf: fc.option(fc.constantFrom(...AGGS), { nil: undefined }),
  granular: fc.option(fc.record({
    resources: fc.dictionary(fc.constantFrom(...RCS), fc.integer({ min: 1, max: 3 }), { minKeys: 1, maxKeys: 2 }),
    policy: fc.constantFrom('none', 'isolate'),
  }), { nil: undefined }),
  mv: fc.constantFrom(39, 39, 28),
  multiplier: fc.constantFrom(1, 1, -1, 0, 2.5),
  max: fc.constantFrom(1, 3, 7, 100_000),
});

type Req = typeof request extends fc.Arbitrary<infer T> ? T : never;

function queryOf(r: Omit<Req, 'max'>): Array<[string, string]> {
  const list = (res: Record<string, number>) => Object.entries(res).map(([rc, n]) => `${rc}:${n}`).join(',');
  const pairs: Array<[string, string]> = [['resources', list(r.resources)]];
  if (r.required) pairs.push(['required', r.required]);
  if (r.forbidden && r.forbidden !== r.required) pairs.push(['required', `!${r.forbidden}`]);
  if (r.memberOf) pairs.push(['member_of', r.memberOf]);
  if (r.granular && r.mv >= 29) pairs.push(['resources1', list(r.granular.resources)], ['group_policy', r.granular.policy]);
  return pairs;
}

const usage = (m: PlacementModel) => [...m.providers.values()].map((p) => [p.uuid, [...p.used]]);

t.test('per tree equals the sequential claims, truncated or not, and changes nothing', async (t) => {
  let computed = 0;
  let truncated = 0;
  let drained = 0;
  let claims = 0;
  let nested = 0;
  fc.assert(fc.property(fc.array(tree, { minLength: 1, maxLength: 6 }), request, (trees, req) => {
    const m = buildModel(trees);
    const q = parseAllocationCandidatesQuery(queryOf(req), req.mv);
    const search = { randomize: false, nestedAware: req.mv >= 29, freeCapacityMultiplier: req.multiplier };
    const before = usage(m);
    const fast = treeHeadroom(m, q, search, req.max);
    if (JSON.stringify(usage(m)) !== JSON.stringify(before)) throw new Error('usage changed');
    const reference = sequentialHeadroom(m, q, search, req.max);
    const why = (got: unknown) => `${JSON.stringify(queryOf(req))} ×${req.multiplier} max ${req.max}: ${JSON.stringify(got)} ≠ ${JSON.stringify(reference)}`;
    if (fast !== null) {
      computed++;
      if (fast.truncated) truncated++;
      // One class or a zero multiplier: the truncated split is read off each tree's weights, without the queue.
      const classes = new Set([...Object.keys(req.resources), ...(req.granular && req.mv >= 29 ? Object.keys(req.granular.resources) : [])]);
      if (fast.truncated && (classes.size === 1 || req.multiplier === 0)) drained++;
      claims += fast.fits;
      if (fast.fits > 0 && trees.some((tr) => tr.children.length > 1)) nested++;
      if (JSON.stringify(fast) !== JSON.stringify(reference)) throw new Error(why(fast));
    }
    const served = headroom(m, q, search, req.max);
    if (JSON.stringify(served) !== JSON.stringify(reference)) throw new Error(why(served));
  }), { numRuns: 1000, seed: 14 });
  t.ok(computed > 900, `computed per tree in ${computed} of 1000 runs`);
  t.ok(truncated > 150, `truncated in ${truncated}`);
  t.ok(drained > 50, `truncated with one class or a zero multiplier in ${drained}`);
  t.ok(nested > 250, `claims on fleets with nested trees: ${nested}`);
  t.ok(claims > 1500, `${claims} claims counted`);
});

t.test('per tree equals the sequential claims with uuid order unlike creation and slot order, and repeated trees', async (t) => {
  let mixed = 0;
  let truncated = 0;
  // Each tree repeated up to three times: ties between trees, broken by root uuid.
  const fleet = fc.array(fc.tuple(tree, fc.constantFrom(1, 1, 2, 3)), { minLength: 1, maxLength: 8 })
    .map((list) => list.flatMap(([tr, k]) => Array.from({ length: k }, () => tr)));
  fc.assert(fc.property(fleet, request, fc.integer({ min: 0, max: 2 ** 31 }), (trees, req, salt) => {
    const m = buildModel(trees, salt);
    const q = parseAllocationCandidatesQuery(queryOf(req), req.mv);
    const search = { randomize: false, nestedAware: req.mv >= 29, freeCapacityMultiplier: req.multiplier };
    const fast = treeHeadroom(m, q, search, req.max);
    const reference = sequentialHeadroom(m, q, search, req.max);
    if (fast === null) return;
    if (fast.truncated) truncated++;
    // Trees with one candidate and trees with several in one answer.
    if (fast.roots.length > 1 && trees.some((tr) => tr.children.length > 1) && trees.some((tr) => tr.children.length === 0)) mixed++;
    if (JSON.stringify(fast) !== JSON.stringify(reference)) {
      throw new Error(`${JSON.stringify(queryOf(req))} ×${req.multiplier} max ${req.max}: ${JSON.stringify(fast)} ≠ ${JSON.stringify(reference)}`);
    }
  }), { numRuns: 400, seed: 15 });
  t.ok(truncated > 60, `truncated in ${truncated}`);
  t.ok(mixed > 30, `claims on several trees of a fleet mixing flat and nested trees: ${mixed}`);
});

t.test('per tree equals the sequential claims on fleets of many identical trees, flat and nested (grouped by their figures)', async (t) => {
  let truncated = 0;
  let scoredTruncated = 0;
  let split = 0;
  // A few tree specs, each cloned many times, in an order mixing them: claims interleave among clones of equal
  // weight (root uuid order), and a group splits where a claim does not lower its weight (a negative multiplier).
  const fleet = fc.array(fc.tuple(tree, fc.integer({ min: 2, max: 12 })), { minLength: 1, maxLength: 3 })
    .chain((specs) => fc.shuffledSubarray(specs.flatMap(([tr, k]) => Array.from({ length: k }, () => tr)), { minLength: 1 }));
  const bigRequest = fc.tuple(request, fc.constantFrom(2, 5, 5, 13, 40)).map(([r, max]) => ({ ...r, max }));
  fc.assert(fc.property(fleet, bigRequest, fc.integer({ min: 0, max: 2 ** 31 }), (trees, req, salt) => {
    const m = buildModel(trees, salt);
    const q = parseAllocationCandidatesQuery(queryOf(req), req.mv);
    const search = { randomize: false, nestedAware: req.mv >= 29, freeCapacityMultiplier: req.multiplier };
    const fast = treeHeadroom(m, q, search, req.max);
    if (fast === null) return;
    const reference = sequentialHeadroom(m, q, search, req.max);
    if (fast.truncated) {
      truncated++;
      if (q.groups.flatMap((g) => [...g.resources.keys()]).length > 1 && req.multiplier !== 0) {
        scoredTruncated++;
        if (req.multiplier < 0) split++;
      }
    }
    if (JSON.stringify(fast) !== JSON.stringify(reference)) {
      throw new Error(`${JSON.stringify(queryOf(req))} ×${req.multiplier} max ${req.max}: ${JSON.stringify(fast)} ≠ ${JSON.stringify(reference)}`);
    }
  }), { numRuns: 500, seed: 17 });
  t.ok(truncated > 60, `truncated in ${truncated}`);
  t.ok(scoredTruncated > 30, `truncated with several classes weighed in ${scoredTruncated}`);
  t.ok(split > 5, `truncated with a negative multiplier (groups split) in ${split}`);
});

t.test('clones of two trees weighed alike (mirrored capacities) take their claims in root uuid order, interleaved', async (t) => {
  const inv = (total: number) => ({ total, reserved: 0, min_unit: 1 as const, max_unit: total, step_size: 1 as const, allocation_ratio: 1 as const });
  const spec = (vcpu: number, memory: number, children = 0): TreeSpec => ({
    root: { inventories: { VCPU: inv(vcpu), MEMORY_MB: inv(memory) }, traits: [], aggregates: [], usedFraction: 0 },
    children: Array.from({ length: children }, () => ({ inventories: { DISK_GB: inv(6) }, traits: [], aggregates: [], usedFraction: 0 })),
  });
  // (8, 4) and (4, 8) normalise to the same weight; the nested ones (two candidates each) join when DISK_GB is asked.
  const trees = Array.from({ length: 18 }, (_, i) => (i % 3 === 0 ? spec(8, 4) : i % 3 === 1 ? spec(4, 8) : spec(8, 4, 2)));
  let compared = 0;
  for (const salt of [undefined, 7, 123456]) {
    const m = buildModel(trees, salt);
    for (const query of ['VCPU:1,MEMORY_MB:1', 'VCPU:1,MEMORY_MB:1,DISK_GB:1', 'VCPU:2,MEMORY_MB:1']) {
      for (const multiplier of [1, 2.5, -1]) {
        for (const max of [1, 2, 5, 11, 17, 30, 47, 80]) {
          const q = parseAllocationCandidatesQuery([['resources', query]], 39);
          const search = { randomize: false, nestedAware: true, freeCapacityMultiplier: multiplier };
          const fast = treeHeadroom(m, q, search, max);
          if (fast === null) continue;
          t.same(fast, sequentialHeadroom(m, q, search, max), `${query} ×${multiplier} max ${max} salt ${salt}`);
          compared++;
        }
      }
    }
  }
  t.ok(compared > 150, `${compared} compared`);
});

t.test('a sharing provider or a random order leaves it to the sequential path', async (t) => {
  const m = new PlacementModel();
  const root = m.applyProvider({
    uuid: '00000000-0000-4000-8000-000000000001', name: 'cn', parent_provider_uuid: null, generation: 0,
    inventories: { VCPU: { total: 4, reserved: 0, min_unit: 1, max_unit: 4, step_size: 1, allocation_ratio: 1 } }, traits: [], aggregates: [AGGS[0]!],
  });
  const q = parseAllocationCandidatesQuery([['resources', 'VCPU:1']], 39);
  t.same(treeHeadroom(m, q, { randomize: false }, 10), { fits: 4, truncated: false, roots: [{ root_provider_uuid: root.uuid, fits: 4 }] });
  t.equal(treeHeadroom(m, q, { randomize: true }, 10), null);
  t.same(headroom(m, q, { randomize: true }, 10), { fits: 4, truncated: false, roots: [{ root_provider_uuid: root.uuid, fits: 4 }] });
  m.applyProvider({
    uuid: '00000000-0000-4000-8000-000000000002', name: 'ss', parent_provider_uuid: null, generation: 0,
    inventories: { DISK_GB: { total: 100, reserved: 0, min_unit: 1, max_unit: 100, step_size: 1, allocation_ratio: 1 } },
    traits: ['MISC_SHARES_VIA_AGGREGATE'], aggregates: [AGGS[0]!],
  });
  t.equal(treeHeadroom(m, q, { randomize: false }, 10), null);
});

/** A merged candidate's key as spelt from its maps (the formula the search's key, built without them, must equal). */
function keyFromMaps(allocations: Map<Provider, Map<string, number>>, mappings: Map<string, Provider[]>): string {
  const parts: string[] = [];
  for (const p of [...allocations.keys()].sort((a, b) => (a.uuid < b.uuid ? -1 : 1))) {
    parts.push(p.uuid + '=' + [...allocations.get(p)!].sort().map(([rc, n]) => `${rc}:${n}`).join(','));
  }
  parts.push('|');
  for (const s of [...mappings.keys()].sort()) parts.push(s + '=' + mappings.get(s)!.map((p) => p.uuid).sort().join(','));
  return parts.join(';');
}

t.test("headroom's unranked search finds the ranked search's candidates, each key as its maps spell it", async (t) => {
  let merged = 0;
  let several = 0;
  fc.assert(fc.property(fc.array(tree, { minLength: 1, maxLength: 6 }), request, fc.integer({ min: 0, max: 2 ** 31 }), (trees, req, salt) => {
    const m = buildModel(trees, salt);
    const q = { ...parseAllocationCandidatesQuery(queryOf(req), req.mv), limit: null };
    const search = { randomize: false, nestedAware: req.mv >= 29, freeCapacityMultiplier: req.multiplier };
    const ranked = findCandidates(m, q, search);
    const unranked = findCandidates(m, q, { ...search, unranked: true });
    // The key first, before anything builds the maps it must agree with.
    const view = (r: typeof ranked) => r.candidates.map((c) => {
      const key = c.key;
      if (key !== keyFromMaps(c.allocations, c.mappings)) throw new Error(`key ${key} ≠ ${keyFromMaps(c.allocations, c.mappings)}`);
      return JSON.stringify([c.anchor.uuid, key, [...c.allocations].map(([p, res]) => [p.uuid, [...res]]), [...c.mappings].map(([s, ps]) => [s, ps.map((p) => p.uuid)])]);
    }).sort();
    const a = view(ranked);
    const b = view(unranked);
    if (unranked.total !== ranked.total || JSON.stringify(a) !== JSON.stringify(b)) {
      throw new Error(`${JSON.stringify(queryOf(req))}: ${JSON.stringify(b)} ≠ ${JSON.stringify(a)}`);
    }
    if (ranked.candidates.some((c) => c.single === undefined)) merged++;
    if (new Set(ranked.candidates.map((c) => c.anchor)).size < ranked.candidates.length) several++;
  }), { numRuns: 500, seed: 16 });
  t.ok(merged > 150, `merged candidates (multi-provider path or several groups) in ${merged} runs`);
  t.ok(several > 100, `trees with several candidates in ${several} runs`);
});
