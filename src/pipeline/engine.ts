// The generic pipeline: filters, then weighers, Cinder's min–max normalisation, weighted sum, stable sort, pick.
// Pure: no I/O, no clock, no framework.
import type { Decision, Filter, FilterTrace, Rejection, Weighed, Weigher } from './types.ts';

/**
 * Cinder's `normalize` (cinder/scheduler/base_weight.py): min–max to 0..1; when every weight is equal, all 0.
 * minval/maxval default to the list's own extremes.
 */
export function normalize(weights: readonly number[], minval?: number, maxval?: number): number[] {
  if (weights.length === 0) return [];
  let lo = minval ?? weights[0]!;
  let hi = maxval ?? weights[0]!;
  if (minval === undefined || maxval === undefined) {
    for (const w of weights) {
      if (minval === undefined && w < lo) lo = w;
      if (maxval === undefined && w > hi) hi = w;
    }
  }
  if (lo === hi) return weights.map(() => 0);
  const range = hi - lo;
  return weights.map((w) => (w - lo) / range);
}

/**
 * Runs the filters in order. Like Cinder's filter handler, it stops once no candidate is left:
 * later filters have nothing to say.
 */
export function runFilters<C, R>(
  candidates: readonly C[],
  request: R,
  filters: ReadonlyArray<Filter<C, R>>,
): { passed: C[]; rejected: Decision<C>['rejected']; trace: Array<FilterTrace<C>> } {
  let current: C[] = candidates.slice();
  const rejected: Decision<C>['rejected'] = [];
  const trace: Array<FilterTrace<C>> = [];
  for (const filter of filters) {
    if (current.length === 0) break;
    const kept: C[] = [];
    const out: Array<{ candidate: C; rejection: Rejection }> = [];
    for (const candidate of current) {
      const rejection = filter.check(candidate, request);
      if (rejection === null) kept.push(candidate);
      else {
        out.push({ candidate, rejection });
        rejected.push({ candidate, filter: filter.name, rejection });
      }
    }
    trace.push({ name: filter.name, in: current.length, out: kept.length, rejected: out });
    current = kept;
  }
  return { passed: current, rejected, trace };
}

/**
 * Weighs the candidates: each weigher's raw weights are normalised over the candidates, multiplied by the
 * weigher's multiplier and summed. The sort is stable, so ties keep the candidates' input order (as Cinder's
 * `sorted(..., reverse=True)` does).
 */
export function weigh<C, R>(
  candidates: readonly C[],
  request: R,
  weighers: ReadonlyArray<Weigher<C, R>>,
): Array<Weighed<C>> {
  const weighed: Array<Weighed<C>> = candidates.map((candidate) => ({ candidate, weight: 0, weighers: {} }));
  if (candidates.length === 0) return weighed;
  for (const weigher of weighers) {
    const raw = weigher.weighAll
      ? weigher.weighAll(candidates, request)
      : candidates.map((c) => weigher.weigh(c, request));
    const normalized = normalize(raw);
    for (let i = 0; i < weighed.length; i++) {
      const entry = weighed[i]!;
      const n = normalized[i]!;
      entry.weighers[weigher.name] = { raw: raw[i]!, normalized: n };
      entry.weight += weigher.multiplier * n;
    }
  }
  return stableSortByWeight(weighed);
}

/** Highest weight first; equal weights keep their order (Array.prototype.sort is stable). */
export function stableSortByWeight<T extends { weight: number }>(items: T[]): T[] {
  return items.sort((a, b) => b.weight - a.weight);
}

/** Filters, weighs and picks the best candidate. */
export function decide<C, R>(
  candidates: readonly C[],
  request: R,
  filters: ReadonlyArray<Filter<C, R>>,
  weighers: ReadonlyArray<Weigher<C, R>>,
): Decision<C> {
  const { passed, rejected, trace } = runFilters(candidates, request, filters);
  const ranked = weigh(passed, request, weighers);
  return { chosen: ranked[0] ?? null, ranked, rejected, trace: { filters: trace } };
}

/** Counts rejections per filter name, for metrics. */
export function rejectionsByFilter<C>(decision: Pick<Decision<C>, 'rejected'>): Map<string, number> {
  const counts = new Map<string, number>();
  for (const r of decision.rejected) counts.set(r.filter, (counts.get(r.filter) ?? 0) + 1);
  return counts;
}
