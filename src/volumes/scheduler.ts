// One decision over the pools: filters → (weighability) → weighers → best pool.
// Two equivalent routes: the traced one through the pipeline engine (explain, 409 reasons, GET /pools?size=) and an
// allocation-light one for the hot path that only finds the winner. A property test keeps them in agreement.
import { runFilters, weigh } from '../pipeline/engine.ts';
import type { FilterTrace, Rejection, Weighed } from '../pipeline/types.ts';
import type { VolumesFilter } from './filters.ts';
import { REASON } from './filters.ts';
import type { PoolState, VolumeRequest } from './model.ts';
import type { VolumesWeigher } from './weighers.ts';
import { capacityCodeOf, capacityWeightOf, isCapacityPass } from './capacity.ts';
import type { PoolTable } from './pool-table.ts';

export interface TracedDecision {
  chosen: Weighed<PoolState> | null;
  ranked: Array<Weighed<PoolState>>;
  rejected: Array<{ candidate: PoolState; filter: string; rejection: Rejection }>;
  filters: Array<FilterTrace<PoolState>>;
}

/**
 * Where Cinder's CapacityWeigher would raise (every candidate infinite with a multiplier ≤ 0), Berth rejects those
 * pools under the weigher's name and carries on (with nothing left).
 */
function unweighableStage(
  passed: PoolState[],
  req: VolumeRequest,
  weighers: readonly VolumesWeigher[],
): FilterTrace<PoolState> | null {
  for (const w of weighers) {
    if (w.unweighable?.(passed, req)) {
      const rejection: Rejection = {
        code: REASON.ALL_WEIGHTS_INFINITE,
        message: `every candidate's capacity is infinite or unknown and ${w.name}'s multiplier is ${w.multiplier} ≤ 0: ` +
          'no weight can be computed (Cinder raises ValueError)',
      };
      return { name: w.name, in: passed.length, out: 0, rejected: passed.map((candidate) => ({ candidate, rejection })) };
    }
  }
  return null;
}

export function decideTraced(
  candidates: readonly PoolState[],
  req: VolumeRequest,
  filters: readonly VolumesFilter[],
  weighers: readonly VolumesWeigher[],
): TracedDecision {
  const run = runFilters(candidates, req, filters);
  let passed = run.passed;
  const stage = passed.length > 0 ? unweighableStage(passed, req, weighers) : null;
  if (stage) {
    run.trace.push(stage);
    for (const r of stage.rejected) run.rejected.push({ candidate: r.candidate, filter: stage.name, rejection: r.rejection });
    passed = [];
  }
  const ranked = weigh(passed, req, weighers);
  return { chosen: ranked[0] ?? null, ranked, rejected: run.rejected, filters: run.trace };
}

/** Reusable buffers for decideFast (one per service; decisions are synchronous). */
export class Scratch {
  passed = new Int32Array(0);
  weights = new Float64Array(0);
  ensure(candidates: number, weighers: number): void {
    if (this.passed.length < candidates) this.passed = new Int32Array(Math.max(candidates, 16) * 2);
    const need = candidates * Math.max(weighers, 1);
    if (this.weights.length < need) this.weights = new Float64Array(need * 2);
  }
}

export interface FastDecision {
  /** Index into candidates, or −1 when nothing is left. */
  chosen: number;
  weight: number;
  passed: number;
  /** Rejections per filter index (same order as the filters). */
  rejections: Int32Array;
  /** True when the pools that passed were all unweighable (see unweighableStage). */
  unweighable: boolean;
}

const K_GENERIC = 0;
const K_STALE = 1;
const K_ZONE = 2;
const K_CAPACITY = 3;
const K_CAPABILITIES = 4;
const FILTER_KIND: Record<string, number> = { stale: K_STALE, availability_zone: K_ZONE, capacity: K_CAPACITY, capabilities: K_CAPABILITIES };

/** The same winner as decideTraced, from the pool table, without building traces or weighed objects. */
export function decideFast(
  table: PoolTable,
  req: VolumeRequest,
  filters: readonly VolumesFilter[],
  weighers: readonly VolumesWeigher[],
  scratch: Scratch,
): FastDecision {
  const candidates = table.pools;
  const n = candidates.length;
  const nw = weighers.length;
  const nf = filters.length;
  scratch.ensure(n, nw);
  const passedIdx = scratch.passed;
  const rejections = new Int32Array(nf);
  const kinds = new Int32Array(nf);
  for (let f = 0; f < nf; f++) kinds[f] = FILTER_KIND[filters[f]!.kind ?? ''] ?? K_GENERIC;
  const wantZone = req.availabilityZone === undefined ? -2 : table.zoneId(req.availabilityZone);
  const capabilityRow = req.specs.length > 0 && kinds.includes(K_CAPABILITIES) ? table.capabilityMatches(req.specs) : null;
  const { size, thin, now } = req;
  const { flags, reservedPercentage, total, mosr, provisioned, thinTotalAvailable, thinVirtualFree, thickVirtualFree, standardFree, reportedAt, zone } = table;
  let count = 0;
  outer: for (let i = 0; i < n; i++) {
    for (let f = 0; f < nf; f++) {
      let rejected: boolean;
      switch (kinds[f]) {
        case K_STALE:
          rejected = now - reportedAt[i]! > filters[f]!.limitMs!;
          break;
        case K_ZONE:
          rejected = wantZone !== -2 && zone[i] !== wantZone;
          break;
        case K_CAPACITY: {
          const fl = flags[i]!;
          rejected = !isCapacityPass(capacityCodeOf(
            (fl & 1) !== 0, (fl & 2) !== 0, reservedPercentage[i]!, total[i]!, (fl & 4) !== 0, mosr[i]!, provisioned[i]!,
            thinTotalAvailable[i]!, thinVirtualFree[i]!, thickVirtualFree[i]!, standardFree[i]!, size, thin,
            filters[f]!.calculation === 'standard',
          ));
          break;
        }
        case K_CAPABILITIES:
          rejected = capabilityRow !== null && capabilityRow[i] === 0;
          break;
        default:
          rejected = filters[f]!.check(candidates[i]!, req) !== null;
      }
      if (rejected) {
        rejections[f]!++;
        continue outer;
      }
    }
    passedIdx[count++] = i;
  }
  const result: FastDecision = { chosen: -1, weight: 0, passed: count, rejections, unweighable: false };
  if (count === 0) return result;

  const weights = scratch.weights;
  for (let w = 0; w < nw; w++) {
    const weigher = weighers[w]!;
    const base = w * count;
    if (weigher.kind === 'capacity') {
      const multiplier = weigher.multiplier;
      const standard = weigher.calculation === 'standard';
      let allInfinite = multiplier <= 0;
      for (let k = 0; k < count; k++) {
        const i = passedIdx[k]!;
        const fl = flags[i]!;
        const value = capacityWeightOf((fl & 3) !== 0, (fl & 4) !== 0, thinVirtualFree[i]!, thickVirtualFree[i]!, standardFree[i]!, thin, multiplier, standard);
        weights[base + k] = value;
        if (value !== Infinity) allInfinite = false;
      }
      if (allInfinite) {
        result.unweighable = true;
        return result;
      }
    } else if (weigher.kind === 'allocated') {
      for (let k = 0; k < count; k++) weights[base + k] = table.allocated[passedIdx[k]!]!;
    } else {
      if (weigher.unweighable?.(Array.from(passedIdx.subarray(0, count), (i) => candidates[i]!), req)) {
        result.unweighable = true;
        return result;
      }
      for (let k = 0; k < count; k++) weights[base + k] = weigher.weigh(candidates[passedIdx[k]!]!, req);
    }
    if (weigher.adjust) weigher.adjust(weights.subarray(base, base + count), count);
  }
  // Cinder's min–max normalisation per weigher, multiplier × normalised summed in weigher order (as the engine does),
  // then the first highest weight wins (the engine's stable sort).
  let best = -1;
  let bestWeight = -Infinity;
  const lo = new Float64Array(nw);
  const range = new Float64Array(nw);
  for (let w = 0; w < nw; w++) {
    const base = w * count;
    let min = weights[base]!;
    let max = min;
    for (let k = 1; k < count; k++) {
      const v = weights[base + k]!;
      if (v < min) min = v;
      if (v > max) max = v;
    }
    lo[w] = min;
    range[w] = min === max ? 0 : max - min;
  }
  for (let k = 0; k < count; k++) {
    let total = 0;
    for (let w = 0; w < nw; w++) {
      const r = range[w]!;
      const normalized = r === 0 ? 0 : (weights[w * count + k]! - lo[w]!) / r;
      total += weighers[w]!.multiplier * normalized;
    }
    if (best === -1 || total > bestWeight) {
      best = k;
      bestWeight = total;
    }
  }
  result.chosen = passedIdx[best]!;
  result.weight = bestWeight;
  return result;
}
