// Object-form filters (types.ts) run through the Pipeline: each becomes an indexed filter over the candidate array
// that keeps the Rejection it returned, so callers get their objects back. Pure.
import { Pipeline, type BoundFilter, type Filter as IndexedFilter } from './pipeline.ts';
import type { Filter, FilterTrace, Rejection } from './types.ts';

export { normalize } from './pipeline.ts';

/** Adapts an object-form filter; the rejections it returned are kept by candidate index for the caller. */
function indexed<C, R>(filter: Filter<C, R>, kept: Array<Rejection | undefined>): IndexedFilter<readonly C[], R> {
  return {
    name: filter.name,
    prepare(candidates, request): BoundFilter {
      return {
        check(i) {
          const rejection = filter.check(candidates[i]!, request);
          if (rejection === null) return null;
          kept[i] = rejection;
          return rejection.code;
        },
        reason: (i) => kept[i]!.message,
      };
    },
  };
}

/**
 * Runs the filters in order over the candidates. Like Cinder's filter handler, it stops once no candidate is left:
 * later filters have nothing to say.
 */
export function runFilters<C, R>(
  candidates: readonly C[],
  request: R,
  filters: ReadonlyArray<Filter<C, R>>,
): { passed: C[]; rejected: Array<{ candidate: C; filter: string; rejection: Rejection }>; trace: Array<FilterTrace<C>> } {
  const kept: Array<Rejection | undefined> = [];
  const decision = new Pipeline<readonly C[], R>({ filters: filters.map((f) => indexed(f, kept)) })
    .decide(candidates, request, { limit: 0 });
  const trace: Array<FilterTrace<C>> = decision.stages.map((s) => ({ name: s.name, in: s.in, out: s.out, rejected: [] }));
  const byName = new Map(trace.map((s) => [s.name, s]));
  const rejected: Array<{ candidate: C; filter: string; rejection: Rejection }> = [];
  const out = new Uint8Array(candidates.length);
  for (const r of decision.rejected()) {
    const candidate = candidates[r.index]!;
    const rejection = kept[r.index]!;
    out[r.index] = 1;
    rejected.push({ candidate, filter: r.stage, rejection });
    byName.get(r.stage)!.rejected.push({ candidate, rejection });
  }
  return { passed: candidates.filter((_, i) => out[i] === 0), rejected, trace };
}
