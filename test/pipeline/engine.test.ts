import t from 'tap';
import { decide, normalize, rejectionsByFilter, runFilters, stableSortByWeight, weigh } from '../../src/pipeline/engine.ts';
import type { Filter, Weigher } from '../../src/pipeline/types.ts';

interface Pool { name: string; free: number; allocated: number }
interface Req { size: number }

const fits: Filter<Pool, Req> = {
  name: 'Fits',
  check: (p, r) => (p.free >= r.size ? null : { code: 'too_small', message: `requested ${r.size}, free ${p.free}` }),
};
const notNamedX: Filter<Pool, Req> = {
  name: 'NotX',
  check: (p) => (p.name === 'x' ? { code: 'is_x', message: 'x is excluded' } : null),
};
const byFree: Weigher<Pool, Req> = { name: 'Free', multiplier: 1, weigh: (p) => p.free };
const byAllocated: Weigher<Pool, Req> = { name: 'Allocated', multiplier: -1, weigh: (p) => p.allocated };

t.test('normalize is Cinder\'s min–max', async (t) => {
  const cases: Array<[number[], number[]]> = [
    [[], []],
    [[5], [0]],
    [[3, 3, 3], [0, 0, 0]],
    [[0, 5, 10], [0, 0.5, 1]],
    [[-10, 0, 10], [0, 0.5, 1]],
    [[10, 0], [1, 0]],
  ];
  for (const [input, expected] of cases) t.same(normalize(input), expected, JSON.stringify(input));
  t.same(normalize([5, 10], 0, 20), [0.25, 0.5], 'explicit bounds');
});

t.test('filters run in order, record in/out and reasons, and stop at zero', async (t) => {
  const pools: Pool[] = [
    { name: 'a', free: 10, allocated: 0 },
    { name: 'x', free: 100, allocated: 0 },
    { name: 'b', free: 1, allocated: 0 },
  ];
  const r = runFilters(pools, { size: 5 }, [fits, notNamedX]);
  t.same(r.passed.map((p) => p.name), ['a']);
  t.same(r.trace.map((f) => [f.name, f.in, f.out]), [['Fits', 3, 2], ['NotX', 2, 1]]);
  t.same(r.trace[0]!.rejected.map((x) => [x.candidate.name, x.rejection.message]), [['b', 'requested 5, free 1']]);
  t.same(r.rejected.map((x) => [x.candidate.name, x.filter, x.rejection.code]), [['b', 'Fits', 'too_small'], ['x', 'NotX', 'is_x']]);
  t.same([...rejectionsByFilter(r)], [['Fits', 1], ['NotX', 1]]);

  const none = runFilters(pools, { size: 1000 }, [fits, notNamedX]);
  t.equal(none.passed.length, 0);
  t.equal(none.trace.length, 1, 'the second filter does not run once nothing is left');
});

t.test('weigh: normalised per weigher, times multiplier, summed, best first', async (t) => {
  const pools: Pool[] = [
    { name: 'a', free: 10, allocated: 50 },
    { name: 'b', free: 30, allocated: 0 },
    { name: 'c', free: 20, allocated: 100 },
  ];
  const ranked = weigh(pools, { size: 1 }, [byFree, byAllocated]);
  t.same(ranked.map((w) => w.candidate.name), ['b', 'a', 'c']);
  const a = ranked.find((w) => w.candidate.name === 'a')!;
  t.same(a.weighers, { Free: { raw: 10, normalized: 0 }, Allocated: { raw: 50, normalized: 0.5 } });
  t.equal(a.weight, -0.5);
  t.equal(ranked[0]!.weight, 1);
  t.equal(ranked[2]!.weight, 0.5 - 1);
});

t.test('ties keep input order (stable sort)', async (t) => {
  const pools: Pool[] = ['p', 'q', 'r', 's'].map((name) => ({ name, free: 7, allocated: 0 }));
  t.same(weigh(pools, { size: 1 }, [byFree]).map((w) => w.candidate.name), ['p', 'q', 'r', 's']);
  const items = [{ id: 1, weight: 1 }, { id: 2, weight: 2 }, { id: 3, weight: 1 }, { id: 4, weight: 2 }];
  t.same(stableSortByWeight(items).map((i) => i.id), [2, 4, 1, 3]);
});

t.test('weighAll replaces per-candidate weighing', async (t) => {
  const batch: Weigher<Pool, Req> = {
    name: 'Batch',
    multiplier: 2,
    weigh: () => { throw new Error('must not be called'); },
    weighAll: (cs) => cs.map((_, i) => i),
  };
  const ranked = weigh([{ name: 'a', free: 0, allocated: 0 }, { name: 'b', free: 0, allocated: 0 }], { size: 1 }, [batch]);
  t.same(ranked.map((w) => [w.candidate.name, w.weight]), [['b', 2], ['a', 0]]);
});

t.test('decide picks the best or null', async (t) => {
  const pools: Pool[] = [
    { name: 'a', free: 10, allocated: 0 },
    { name: 'b', free: 30, allocated: 0 },
  ];
  const d = decide(pools, { size: 5 }, [fits], [byFree]);
  t.equal(d.chosen?.candidate.name, 'b');
  t.equal(d.ranked.length, 2);
  t.equal(d.trace.filters.length, 1);
  const none = decide(pools, { size: 500 }, [fits], [byFree]);
  t.equal(none.chosen, null);
  t.equal(none.rejected.length, 2);
  t.same(none.ranked, []);
  const noWeighers = decide(pools, { size: 5 }, [], []);
  t.equal(noWeighers.chosen?.candidate.name, 'a', 'no weighers: input order');
});
