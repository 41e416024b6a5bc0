// The decision engine on plain column arrays: filter order and early exit, prepare once per request, the trace switch,
// reasons of a miss from the same run, weighing (normalisation, multipliers, fixed bounds), weighers that reject,
// top-N selection against a full sort, ties, narrowing, random samples, tiers and a custom selector.
import t from 'tap';
import {
  Extremes,
  normalize,
  normalized,
  Pipeline,
  type BoundWeigher,
  type CandidateSet,
  type Filter,
  type Weigher,
} from '../../src/pipeline/pipeline.ts';
import { xorshift as rng } from '../random.ts';

/** Candidates as columns, as a dialect's table would hold them. */
class Pools implements CandidateSet {
  readonly name: string[];
  readonly free: Float64Array;
  readonly used: Float64Array;
  readonly zone: string[];
  constructor(rows: Array<[name: string, free: number, used?: number, zone?: string]>) {
    this.name = rows.map((r) => r[0]);
    this.free = Float64Array.from(rows, (r) => r[1]);
    this.used = Float64Array.from(rows, (r) => r[2] ?? 0);
    this.zone = rows.map((r) => r[3] ?? 'a');
  }
  get length(): number {
    return this.name.length;
  }
}
interface Req { size: number; zone?: string }

/** Counts prepare() calls and sentences built, to prove what the engine does not do. */
const calls = { prepare: new Map<string, number>(), reasons: 0 };
function counted(name: string): void {
  calls.prepare.set(name, (calls.prepare.get(name) ?? 0) + 1);
}

const Fits: Filter<Pools, Req> = {
  name: 'Fits',
  prepare(set, req) {
    counted('Fits');
    return {
      check: (i) => (set.free[i]! >= req.size ? null : 'too_small'),
      reason(i) {
        calls.reasons++;
        return `requested ${req.size}, free ${set.free[i]}`;
      },
    };
  },
};
const Zone: Filter<Pools, Req> = {
  name: 'Zone',
  prepare(set, req) {
    counted('Zone');
    if (req.zone === undefined) return null;
    return { check: (i) => (set.zone[i] === req.zone ? null : 'other_zone'), reason: (i) => `zone ${set.zone[i]}` };
  },
};
const NotX: Filter<Pools, Req> = {
  name: 'NotX',
  prepare(set) {
    counted('NotX');
    return { check: (i) => (set.name[i] === 'x' ? 'is_x' : null), reason: () => 'x is excluded' };
  },
};

function columnWeigher(name: string, multiplier: number, column: 'free' | 'used', bounds: { minval?: number; maxval?: number } = {}): Weigher<Pools, Req> {
  return {
    name, multiplier, ...bounds,
    prepare: (set): BoundWeigher => ({
      weigh(at, count, out) {
        for (let k = 0; k < count; k++) out[k] = set[column][at[k]!]!;
        return null;
      },
    }),
  };
}
const ByFree = columnWeigher('Free', 1, 'free');
const ByUsed = columnWeigher('Used', -1, 'used');
/** Rejects every candidate when all of them are free = 0 (as Cinder's weigher cannot weigh all-infinite pools). */
const Picky: Weigher<Pools, Req> = {
  name: 'Picky',
  multiplier: 1,
  prepare: (set) => ({
    weigh(at, count, out) {
      let any = false;
      for (let k = 0; k < count; k++) {
        out[k] = set.free[at[k]!]!;
        if (out[k] !== 0) any = true;
      }
      return any ? null : 'unweighable';
    },
    reason: (i) => `${set.name[i]} has nothing to weigh`,
  }),
};

const names = (set: Pools, indices: ArrayLike<number>) => Array.from(indices, (i) => set.name[i]!);

t.test('normalize and normalized: Cinder\'s min–max, all equal → 0, optional fixed bounds', async (t) => {
  const table: Array<[number[], number[]]> = [
    [[], []], [[5], [0]], [[3, 3, 3], [0, 0, 0]], [[0, 5, 10], [0, 0.5, 1]], [[-10, 0, 10], [0, 0.5, 1]], [[10, 0], [1, 0]],
  ];
  for (const [input, expected] of table) t.same(normalize(input), expected, JSON.stringify(input));
  t.same(normalize([5, 10], 0, 20), [0.25, 0.5], 'explicit bounds');
  t.equal(normalized(7, 7, 0), 0, 'zero range');
  t.equal(normalized(3, 1, 4), 0.5);
});

t.test('filters: order, in/out, early exit, a filter with nothing to check is listed but not run', async (t) => {
  const pools = new Pools([['a', 10, 0, 'a'], ['x', 100, 0, 'a'], ['b', 1, 0, 'b'], ['c', 50, 0, 'b']]);
  const p = new Pipeline<Pools, Req>({ filters: [Fits, Zone, NotX] });
  const cases: Array<{ name: string; req: Req; passed: string[]; stages: Array<[string, number, number]>; prepared: string[] }> = [
    { name: 'no zone asked', req: { size: 5 }, passed: ['a', 'c'], stages: [['Fits', 4, 3], ['Zone', 3, 3], ['NotX', 3, 2]], prepared: ['Fits', 'Zone', 'NotX'] },
    { name: 'zone b', req: { size: 5, zone: 'b' }, passed: ['c'], stages: [['Fits', 4, 3], ['Zone', 3, 1], ['NotX', 1, 1]], prepared: ['Fits', 'Zone', 'NotX'] },
    { name: 'nothing fits: later filters are neither listed nor prepared', req: { size: 1000 }, passed: [], stages: [['Fits', 4, 0]], prepared: ['Fits'] },
  ];
  for (const c of cases) {
    calls.prepare.clear();
    const d = p.decide(pools, c.req);
    t.same(names(pools, d.ranked), c.passed, `${c.name}: passed, in set order (no weighers)`);
    t.equal(d.passed, c.passed.length);
    t.same(d.stages.map((s) => [s.name, s.in, s.out]), c.stages, `${c.name}: stages`);
    t.same([...calls.prepare.keys()], c.prepared, `${c.name}: prepared once each`);
    t.ok([...calls.prepare.values()].every((n) => n === 1));
  }
});

t.test('checking filters run candidate-major with the verdicts, counts and rejection order of one pass per filter', async (t) => {
  const pools = new Pools([['a', 10, 0, 'a'], ['x', 100, 0, 'b'], ['b', 1, 0, 'b'], ['c', 50, 0, 'b'], ['d', 7, 0, 'a'], ['e', 3, 0, 'a']]);
  /** A verdict row between the checks: ends a candidate-major run, which resumes after it. */
  const Small: Filter<Pools, Req> = {
    name: 'Small',
    prepare(set) {
      counted('Small');
      return { row: Uint8Array.from(set.free, (f) => (f > 60 ? 1 : 0)), codes: ['', 'too_big'], reason: () => 'too big' };
    },
  };
  const p = new Pipeline<Pools, Req>({ filters: [Fits, Zone, Small, NotX] });
  // The reference: one pass per filter over the survivors of the previous ones.
  const reference = (req: Req) => {
    let alive = Array.from({ length: pools.length }, (_, i) => i);
    const stages: Array<[string, number, number]> = [];
    const rejected: Array<[string, string, string]> = [];
    for (const f of p.filters) {
      if (alive.length === 0) break;
      const bound = f.prepare(pools, req);
      const verdict = (i: number) => (bound === null ? null : 'row' in bound ? (bound.row[i] === 0 ? null : bound.codes[bound.row[i]!]!) : bound.check(i));
      const before = alive.length;
      alive = alive.filter((i) => {
        const code = verdict(i);
        if (code !== null) rejected.push([pools.name[i]!, f.name, code]);
        return code === null;
      });
      stages.push([f.name, before, alive.length]);
    }
    return { stages, rejected, passed: alive.map((i) => pools.name[i]!) };
  };
  const cases: Array<{ name: string; req: Req; prepared: string[] }> = [
    { name: 'every filter rejects some', req: { size: 5, zone: 'b' }, prepared: ['Fits', 'Zone', 'Small', 'NotX'] },
    { name: 'no zone asked', req: { size: 2 }, prepared: ['Fits', 'Zone', 'Small', 'NotX'] },
    { name: 'the checks leave nothing: the row after them is not prepared', req: { size: 5, zone: 'c' }, prepared: ['Fits', 'Zone'] },
    { name: 'nothing fits', req: { size: 1000 }, prepared: ['Fits'] },
  ];
  for (const c of cases) {
    const want = reference(c.req);
    calls.prepare.clear();
    const d = p.decide(pools, c.req);
    t.same(d.stages.map((s) => [s.name, s.in, s.out]), want.stages, `${c.name}: stages`);
    t.same(d.rejected().map((r) => [pools.name[r.index]!, r.stage, r.code]), want.rejected, `${c.name}: rejections, stage by stage`);
    t.same(names(pools, d.ranked), want.passed, `${c.name}: passed`);
    t.same([...calls.prepare.keys()], c.prepared, `${c.name}: prepared when a candidate reaches the filter`);
    t.ok([...calls.prepare.values()].every((n) => n === 1), `${c.name}: prepared once each`);
  }
});

t.test('trace off: counts and codes only; a miss gets its reasons from the same run', async (t) => {
  const pools = new Pools([['a', 10], ['x', 100], ['b', 1]]);
  const p = new Pipeline<Pools, Req>({ filters: [Fits, NotX], weighers: [ByFree] });
  calls.reasons = 0;
  calls.prepare.clear();
  const hit = p.decide(pools, { size: 5 }, { limit: 1 });
  t.equal(pools.name[hit.chosen], 'a');
  t.equal(hit.trace, null);
  t.same([...hit.rejections()], [['Fits', 1], ['NotX', 1]]);
  t.equal(calls.reasons, 0, 'no sentence was built');

  const miss = p.decide(pools, { size: 500 }, { limit: 1 });
  t.equal(miss.chosen, -1);
  t.same(miss.ranked, new Int32Array(0));
  t.equal(calls.prepare.get('Fits'), 2, 'one run per decision: nothing decided twice');
  const rejected = miss.rejected();
  t.same(rejected, [
    { index: 0, stage: 'Fits', code: 'too_small' }, { index: 1, stage: 'Fits', code: 'too_small' }, { index: 2, stage: 'Fits', code: 'too_small' },
  ]);
  t.equal(calls.reasons, 0);
  t.same(rejected.map((r) => miss.reason(r)), ['requested 500, free 10', 'requested 500, free 100', 'requested 500, free 1']);
  t.equal(calls.reasons, 3, 'sentences only when asked');

  p.decide(pools, { size: 1 });
  t.throws(() => miss.rejected(), /decided again/, 'a stale decision says so instead of answering from reused buffers');
  t.equal(miss.chosen, -1, 'its own results stay readable');
});

t.test('trace on: every stage with sentences, every ranked candidate with raw and normalised weights', async (t) => {
  const pools = new Pools([['a', 10, 50], ['x', 100, 0], ['b', 30, 0], ['c', 20, 100], ['d', 1, 0]]);
  const p = new Pipeline<Pools, Req>({ filters: [Fits, NotX], weighers: [ByFree, ByUsed] });
  const d = p.decide(pools, { size: 5 }, { trace: true });
  t.same(d.trace!.filters.map((f) => [f.name, f.in, f.out, f.rejected.map((r) => [pools.name[r.index], r.code, r.reason])]), [
    ['Fits', 5, 4, [['d', 'too_small', 'requested 5, free 1']]],
    ['NotX', 4, 3, [['x', 'is_x', 'x is excluded']]],
  ]);
  t.same(d.trace!.weighed.map((w) => [pools.name[w.index], w.weight]), [['b', 1], ['a', -0.5], ['c', -0.5]]);
  const a = d.trace!.weighed.find((w) => pools.name[w.index] === 'a')!;
  t.same(a.weighers, { Free: { raw: 10, normalized: 0 }, Used: { raw: 50, normalized: 0.5 } });
  t.same(Array.from(d.weights), [1, -0.5, -0.5]);
  t.equal(d.weight, 1);
});

t.test('traceAs: the trace\'s content in the caller\'s entries, for a decision without trace; stale after the next', async (t) => {
  const pools = new Pools([['a', 10, 50], ['x', 100, 0], ['b', 30, 0], ['c', 20, 100], ['d', 1, 0]]);
  const p = new Pipeline<Pools, Req>({ filters: [Fits, NotX], weighers: [ByFree, ByUsed] });
  const traced = p.decide(pools, { size: 5 }, { trace: true }).trace!;
  const d = p.decide(pools, { size: 5 });
  t.equal(d.trace, null);
  const shaped = d.traceAs({
    rejected: (index, code, reason, stage) => `${stage}:${pools.name[index]}:${code}:${reason}`,
    weighed: (index, weight, weighers) => ({ name: pools.name[index], weight, weighers }),
  });
  t.same(shaped.filters.map((f) => [f.name, f.kind, f.in, f.out, f.rejected]), traced.filters.map((f) =>
    [f.name, f.kind, f.in, f.out, f.rejected.map((r) => `${f.name}:${pools.name[r.index]}:${r.code}:${r.reason}`)]));
  t.same(shaped.weighed, traced.weighed.map((w) => ({ name: pools.name[w.index], weight: w.weight, weighers: w.weighers })));
  p.decide(pools, { size: 5 });
  t.throws(() => d.traceAs({ rejected: () => 0, weighed: () => 0 }), /decided again/);
});

t.test('weighing: Σ multiplier × normalised in weigher order, fixed bounds, no weighers = set order', async (t) => {
  const pools = new Pools([['a', 10, 5], ['b', 30, 5], ['c', 20, 5]]);
  const table: Array<{ name: string; weighers: Array<Weigher<Pools, Req>>; order: string[]; weights: number[] }> = [
    { name: 'spread on free', weighers: [ByFree], order: ['b', 'c', 'a'], weights: [1, 0.5, 0] },
    { name: 'stack on free', weighers: [columnWeigher('Free', -2, 'free')], order: ['a', 'c', 'b'], weights: [0, -1, -2] },
    { name: 'all-equal weigher adds 0', weighers: [ByFree, ByUsed], order: ['b', 'c', 'a'], weights: [1, 0.5, 0] },
    { name: 'fixed bounds (Nova minval/maxval)', weighers: [columnWeigher('Free', 1, 'free', { minval: 0, maxval: 40 })], order: ['b', 'c', 'a'], weights: [0.75, 0.5, 0.25] },
    { name: 'no weighers', weighers: [], order: ['a', 'b', 'c'], weights: [0, 0, 0] },
  ];
  for (const c of table) {
    const d = new Pipeline<Pools, Req>({ filters: [], weighers: c.weighers }).decide(pools, { size: 1 });
    t.same(names(pools, d.ranked), c.order, c.name);
    t.same(Array.from(d.weights), c.weights, `${c.name}: weights`);
  }
});

t.test('a weigher that cannot weigh rejects every candidate under its name', async (t) => {
  const pools = new Pools([['a', 0], ['b', 0], ['c', 9]]);
  const p = new Pipeline<Pools, Req>({ filters: [Fits], weighers: [Picky] });
  const d = p.decide(pools, { size: 0 }, { trace: true });
  t.equal(pools.name[d.chosen], 'c', 'weighable: chosen');
  const none = p.decide(new Pools([['a', 0], ['b', 0]]), { size: 0 }, { trace: true });
  t.equal(none.chosen, -1);
  t.equal(none.passed, 0);
  t.same(none.trace!.filters.map((f) => [f.name, f.kind, f.in, f.out]), [['Fits', 'filter', 2, 2], ['Picky', 'weigher', 2, 0]]);
  t.same(none.trace!.filters[1]!.rejected.map((r) => r.reason), ['a has nothing to weigh', 'b has nothing to weigh']);
  t.same([...none.rejections()], [['Picky', 2]]);
  t.same(none.trace!.weighed, []);
});

t.test('top-N: the first N of the full ranking, ties by set order or tieBreak, for every limit', async (t) => {
  const random = rng(7);
  for (let round = 0; round < 40; round++) {
    const n = 1 + Math.floor(random() * 60);
    // Few distinct values, so that ties are common.
    const pools = new Pools(Array.from({ length: n }, (_, i) => [`p${i}`, Math.floor(random() * 5), Math.floor(random() * 3)] as [string, number, number]));
    const p = new Pipeline<Pools, Req>({ filters: [], weighers: [ByFree, ByUsed] });
    const full = Array.from(p.decide(pools, { size: 0 }).ranked);
    const fullWeights = Array.from(p.decide(pools, { size: 0 }).weights);
    for (let k = 1; k < fullWeights.length; k++) {
      if (fullWeights[k - 1]! === fullWeights[k]!) t.ok(full[k - 1]! < full[k]!, 'ties keep set order');
      else t.ok(fullWeights[k - 1]! > fullWeights[k]!, 'best first');
    }
    for (const limit of [1, 2, 3, Math.ceil(n / 2), n - 1, n, n + 5]) {
      if (limit < 1) continue;
      const d = p.decide(pools, { size: 0 }, { limit });
      t.same(Array.from(d.ranked), full.slice(0, limit), `n=${n} limit=${limit}`);
    }
    // A tie-break by name descending reverses the order among equals.
    const byName = (a: number, b: number) => (pools.name[b]! < pools.name[a]! ? -1 : pools.name[b]! > pools.name[a]! ? 1 : 0);
    const reversed = Array.from(p.decide(pools, { size: 0 }, { tieBreak: byName }).ranked);
    for (const limit of [1, 3, n]) {
      t.same(Array.from(p.decide(pools, { size: 0 }, { limit, tieBreak: byName }).ranked), reversed.slice(0, limit), `tieBreak n=${n} limit=${limit}`);
    }
  }
});

// The full ranking without a tie-break is a radix sort of the totals' bits: it must give the comparator's order
// (highest first, ties by set order) for any totals — negative, zero, tiny, huge, infinite, many equal — and leave
// a set with a NaN total to the comparator sort.
t.test('full ranking: the order of the comparator sort for every kind of total, NaN left to that sort', async (t) => {
  const random = rng(11);
  const Raw = columnWeigher('Raw', 1, 'free', { minval: 0, maxval: 1 }); // normalised = raw, so total = raw
  const p = new Pipeline<Pools, Req>({ filters: [], weighers: [Raw] });
  const kinds = [0, -0, 1, -1, 0.5, -0.5, 1e-300, -1e-300, 5e-324, 1e300, -1e300, Infinity, -Infinity, 3, 3, 3];
  for (let round = 0; round < 60; round++) {
    const n = 1 + Math.floor(random() * 3000);
    const values = Array.from({ length: n }, () => (random() < 0.5 ? kinds[Math.floor(random() * kinds.length)]! : (random() - 0.5) * 10 ** Math.floor(random() * 20 - 10)));
    if (round % 10 === 9) values[Math.floor(random() * n)] = NaN;
    const pools = new Pools(values.map((v, i) => [`p${i}`, v] as [string, number]));
    const d = p.decide(pools, { size: 0 });
    const totals = Float64Array.from(values, (v) => 0 + v);
    const byComparator = Int32Array.from(values, (_, i) => i).sort((a, b) => {
      if (totals[a] !== totals[b]) return totals[a]! > totals[b]! ? -1 : 1;
      return a - b;
    });
    t.same(Array.from(d.ranked), Array.from(byComparator), `round ${round}, n=${n}`);
  }
});

// With a tie order (a number per candidate index, lowest first) the full ranking is a merge sort of a small set
// and two radix sorts of a large one: both must give the comparator's order (highest total, then lowest tie order,
// then set order), and a tie order that is not an integer in [0, 2^53) leaves the set to that sort.
t.test('full ranking with a tie order: the comparator\'s order for small and large sets', async (t) => {
  const random = rng(12);
  const Raw = columnWeigher('Raw', 1, 'free', { minval: 0, maxval: 1 });
  const p = new Pipeline<Pools, Req>({ filters: [], weighers: [Raw] });
  const kinds = [0, -0, 1, -1, 0.5, 3, 3, 3, Infinity, -Infinity];
  const ties = [0, 1, 2, 2 ** 32 - 1, 2 ** 32, 2 ** 32 + 1, 2 ** 53 - 1];
  for (let round = 0; round < 60; round++) {
    // Sizes on both sides of the merge sort's limit.
    const n = 1 + Math.floor(random() * (round % 2 === 0 ? 1100 : 3000));
    const values = Array.from({ length: n }, () => (random() < 0.7 ? kinds[Math.floor(random() * kinds.length)]! : random() * 10));
    const tieOrder = Array.from({ length: n }, () => (random() < 0.5 ? ties[Math.floor(random() * ties.length)]! : Math.floor(random() * 50)));
    if (round % 10 === 9) values[Math.floor(random() * n)] = NaN;
    if (round % 10 === 5) tieOrder[Math.floor(random() * n)] = 2 ** 53;
    if (round % 10 === 7) tieOrder[Math.floor(random() * n)] = 0.5;
    const pools = new Pools(values.map((v, i) => [`p${i}`, v] as [string, number]));
    const d = p.decide(pools, { size: 0 }, { tieOrder });
    const totals = Float64Array.from(values, (v) => 0 + v);
    const byComparator = Int32Array.from(values, (_, i) => i).sort((a, b) => {
      if (totals[a] !== totals[b]) return totals[a]! > totals[b]! ? -1 : 1;
      const c = tieOrder[a]! - tieOrder[b]!;
      return c !== 0 ? c : a - b;
    });
    t.same(Array.from(d.ranked), Array.from(byComparator), `round ${round}, n=${n}`);
  }
});

t.test('rankedInto: the ranking is written into the caller\'s array; unweighed weights read as zeros', async (t) => {
  const pools = new Pools([['a', 10], ['b', 30], ['c', 20], ['d', 1]]);
  const p = new Pipeline<Pools, Req>({ filters: [Fits] });
  const asked: number[] = [];
  const scratch = new Int32Array(16).fill(-7);
  const d = p.decide(pools, { size: 5 }, { rankedInto: (n) => (asked.push(n), scratch.subarray(0, n)) });
  t.same(asked, [3], 'asked once, for the survivors');
  t.equal(d.ranked.buffer, scratch.buffer, 'the caller\'s array');
  t.same(Array.from(d.ranked), [0, 1, 2], 'in set order');
  t.same(Array.from(scratch.subarray(3, 5)), [-7, -7], 'nothing written past n');
  t.same(Array.from(d.weights), [0, 0, 0]);
  t.equal(d.weight, 0);
});

t.test('limit 0 decides feasibility only; among narrows the candidates', async (t) => {
  const pools = new Pools([['a', 10], ['b', 30], ['c', 20], ['d', 1]]);
  const p = new Pipeline<Pools, Req>({ filters: [Fits], weighers: [ByFree] });
  const feasible = p.decide(pools, { size: 5 }, { limit: 0 });
  t.equal(feasible.passed, 3);
  t.equal(feasible.chosen, -1);
  t.same(feasible.ranked, new Int32Array(0));
  const narrowed = p.decide(pools, { size: 5 }, { among: [3, 2, 0], trace: true });
  t.equal(narrowed.candidates, 3);
  t.same(names(pools, narrowed.ranked), ['c', 'a']);
  t.same(narrowed.trace!.filters[0]!.rejected.map((r) => pools.name[r.index]), ['d']);
});

t.test('random: Fisher–Yates over the passed candidates with the given source, then the first limit', async (t) => {
  const pools = new Pools([['a', 10], ['b', 30], ['c', 20], ['d', 1], ['e', 7]]);
  const p = new Pipeline<Pools, Req>({ filters: [Fits], weighers: [ByFree] });
  // The same shuffle written out: passed = [a, b, c, e].
  const source = rng(3);
  const expected = [0, 1, 2, 4];
  const mirror = rng(3);
  for (let i = expected.length - 1; i > 0; i--) {
    const j = Math.floor(mirror() * (i + 1));
    [expected[i], expected[j]] = [expected[j]!, expected[i]!];
  }
  const d = p.decide(pools, { size: 5 }, { random: source, limit: 3, trace: true });
  t.same(Array.from(d.ranked), expected.slice(0, 3));
  t.same(Array.from(d.weights), [0, 0, 0], 'a sample is not weighed');
  t.same(d.trace!.weighed.map((w) => w.weighers), [{}, {}, {}]);
});

t.test('tiers keep the best tier present; a selector replaces weighing', async (t) => {
  const pools = new Pools([['a', 10, 0, 'used'], ['b', 30, 0, 'new'], ['c', 20, 0, 'new'], ['d', 40, 0, 'used'], ['e', 1, 0, 'new']]);
  const tierRank: Record<string, number> = { new: 0, used: 1 };
  const tiers = { name: 'Tiers', prepare: (set: Pools) => (i: number) => tierRank[set.zone[i]!]! };
  const p = new Pipeline<Pools, Req>({ filters: [Fits], tiers, weighers: [ByFree] });
  const d = p.decide(pools, { size: 5 }, { trace: true });
  t.same(names(pools, d.ranked), ['b', 'c'], 'only the new nodes, weighed among themselves');
  t.same(d.trace!.filters.map((f) => [f.name, f.kind, f.in, f.out]), [['Fits', 'filter', 5, 4], ['Tiers', 'tiers', 4, 2]]);
  t.same(d.trace!.weighed.map((w) => w.weighers.Free!.normalized), [1, 0], 'normalised within the tier');
  const onlyUsed = p.decide(new Pools([['a', 10, 0, 'used'], ['e', 1, 0, 'new']]), { size: 5 });
  t.same(onlyUsed.ranked.length, 1, 'the best tier present, even if not the best tier');

  // A selector (e.g. a balance score) picks a position among the survivors; weighers do not run.
  const seen: number[] = [];
  const selector = {
    name: 'LeastFree',
    prepare: (set: Pools) => (at: Int32Array, count: number) => {
      let best = -1;
      for (let k = 0; k < count; k++) {
        seen.push(at[k]!);
        if (best < 0 || set.free[at[k]!]! < set.free[at[best]!]!) best = k;
      }
      return best;
    },
  };
  const s = new Pipeline<Pools, Req>({ filters: [Fits], tiers, selector }).decide(pools, { size: 5 });
  t.same(names(pools, seen), ['b', 'c'], 'the selector sees the best tier');
  t.equal(pools.name[s.chosen], 'c');
  t.equal(s.weight, 0);
});

t.test('stage names are unique within a pipeline', async (t) => {
  t.throws(() => new Pipeline<Pools, Req>({ filters: [Fits, Fits] }), /Fits appears twice/);
});

t.test('Extremes: exact bounds, or stale, under any adds and removals (infinite values counted apart)', async (t) => {
  const random = rng(11);
  let checks = 0;
  for (let round = 0; round < 300; round++) {
    const e = new Extremes();
    const values: number[] = [];
    for (let step = 0; step < 40; step++) {
      if (values.length > 0 && random() < 0.45) {
        const [v] = values.splice(Math.floor(random() * values.length), 1);
        e.remove(v!);
      } else {
        const v = random() < 0.1 ? Infinity : Math.floor(random() * 6);
        values.push(v);
        e.add(v);
      }
      if (e.stale) {
        e.clear();
        for (const v of values) e.add(v);
      }
      const finite = values.filter((v) => v !== Infinity);
      const want = { lo: Math.min(...values), hi: finite.length > 0 ? Math.max(...finite) : -Infinity, infinite: values.length - finite.length };
      if (values.length > 0 && (e.lo !== want.lo || e.hi !== want.hi || e.infinite !== want.infinite)) {
        t.fail(`round ${round} step ${step}: ${JSON.stringify({ lo: e.lo, hi: e.hi, infinite: e.infinite })} ≠ ${JSON.stringify(want)}`);
        return;
      }
      checks++;
    }
  }
  t.ok(checks > 10_000, `${checks} checks`);
});
