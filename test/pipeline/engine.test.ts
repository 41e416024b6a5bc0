// Object-form filters run through the Pipeline (runFilters), as the placement and replicas dialects use them.
import t from 'tap';
import { runFilters } from '../../src/pipeline/engine.ts';
import type { Filter } from '../../src/pipeline/types.ts';

interface Pool { name: string; free: number }
interface Req { size: number }

const fits: Filter<Pool, Req> = {
  name: 'Fits',
  check: (p, r) => (p.free >= r.size ? null : { code: 'too_small', message: `requested ${r.size}, free ${p.free}` }),
};
const notNamedX: Filter<Pool, Req> = {
  name: 'NotX',
  check: (p) => (p.name === 'x' ? { code: 'is_x', message: 'x is excluded' } : null),
};

t.test('filters run in order, record in/out and the rejections they returned, and stop at zero', async (t) => {
  const pools: Pool[] = [{ name: 'a', free: 10 }, { name: 'x', free: 100 }, { name: 'b', free: 1 }];
  const r = runFilters(pools, { size: 5 }, [fits, notNamedX]);
  t.same(r.passed.map((p) => p.name), ['a']);
  t.same(r.trace.map((f) => [f.name, f.in, f.out]), [['Fits', 3, 2], ['NotX', 2, 1]]);
  t.same(r.trace[0]!.rejected.map((x) => [x.candidate.name, x.rejection.message]), [['b', 'requested 5, free 1']]);
  t.same(r.rejected.map((x) => [x.candidate.name, x.filter, x.rejection.code]), [['b', 'Fits', 'too_small'], ['x', 'NotX', 'is_x']]);
  t.equal(r.rejected[0]!.candidate, pools[2], 'the caller\'s own objects come back');

  const none = runFilters(pools, { size: 1000 }, [fits, notNamedX]);
  t.equal(none.passed.length, 0);
  t.equal(none.trace.length, 1, 'the second filter does not run once nothing is left');
  t.same(runFilters([], { size: 1 }, [fits]).trace, [], 'no candidates: no filter runs');
});
