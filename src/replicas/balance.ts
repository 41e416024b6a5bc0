// Longhorn v1.11's balance selection (reference/longhorn.md §3.6) with Berth's two documented choices
// (DESIGN.md): the disk stage scores the chosen node's candidate disks only (as the user's document says), and a
// node whose every disk score is degenerate gives its fitting disk with the most usable space. Ties break by node
// name, then disk name (candidates arrive in that order and only a strictly lower score replaces the best).
// Pure: float64 arithmetic on byte counts, as Longhorn computes it. `balanceSelector` is this choice as the engine's
// selector over the winning tier's disks.
import type { Selector } from '../pipeline/pipeline.ts';
import type { DiskRequest, DiskTable, DiskView } from './model.ts';

/** Longhorn's score for a set whose mean is ≤ 0 (math.MaxFloat64): it can never win against `best < MaxFloat64`. */
export const DEGENERATE_SCORE = Number.MAX_VALUE;

/** BalanceScore(X) = (max(X) − min(X)) / mean(X); mean ≤ 0 (or an empty set) gives DEGENERATE_SCORE. */
export function balanceScore(values: readonly number[]): number {
  if (values.length === 0) return DEGENERATE_SCORE;
  let max = -Infinity;
  let min = Infinity;
  let sum = 0;
  for (const v of values) {
    if (v > max) max = v;
    if (v < min) min = v;
    sum += v;
  }
  const mean = sum / values.length;
  if (mean <= 0) return DEGENERATE_SCORE;
  return (max - min) / mean;
}

/**
 * For every i < n with values[i] ≥ size: the balance score of the set where only values[i] is reduced by size, into
 * out[i]; NaN for the others (Longhorn skips them; NaN is never below a best score). O(n): the extremes of "all but
 * i" come from the two largest and two smallest values. Returns the first i with the lowest score below
 * DEGENERATE_SCORE (Longhorn's pick: only a strictly lower score replaces the best), or −1.
 */
export function scoresInto(values: ArrayLike<number>, n: number, size: number, out: Float64Array): number {
  let max1 = -Infinity, max2 = -Infinity, maxAt = -1;
  let min1 = Infinity, min2 = Infinity, minAt = -1;
  let sum = 0;
  for (let i = 0; i < n; i++) {
    const v = values[i]!;
    sum += v;
    if (v > max1) { max2 = max1; max1 = v; maxAt = i; } else if (v > max2) max2 = v;
    if (v < min1) { min2 = min1; min1 = v; minAt = i; } else if (v < min2) min2 = v;
  }
  const mean = (sum - size) / n;
  let best = DEGENERATE_SCORE;
  let bestAt = -1;
  for (let i = 0; i < n; i++) {
    const v = values[i]!;
    if (v < size) { out[i] = NaN; continue; }
    if (mean <= 0) { out[i] = DEGENERATE_SCORE; continue; }
    const reduced = v - size;
    const max = Math.max(i === maxAt ? max2 : max1, reduced);
    const min = Math.min(i === minAt ? min2 : min1, reduced);
    const score = (out[i] = (max - min) / mean);
    if (score < best) { best = score; bestAt = i; }
  }
  return bestAt;
}

/** scoresInto as a list, null for the values Longhorn skips. */
export function scoresAfterPlacing(values: readonly number[], size: number): Array<number | null> {
  const out = new Float64Array(values.length);
  scoresInto(values, values.length, size, out);
  return Array.from(out, (s) => (Number.isNaN(s) ? null : s));
}

export interface BalanceDisk {
  node: string;
  disk: string;
  /** max(storageAvailable − storageReserved − storageScheduled, 0), status figures (no in-pass additions). */
  usable: number;
}

export type BalanceHow =
  | 'single_candidate'
  | 'balance'
  | 'most_usable_degenerate_node'
  | 'most_usable_no_fitting_disk'
  | 'most_usable_no_node_fits'
  /** Longhorn ≤ v1.10 (getDiskWithMostUsableStorage), used by the bench for comparison. */
  | 'legacy_most_usable';

export interface BalanceResult {
  /** Index into the candidates. */
  chosen: number;
  how: BalanceHow;
  /** Node stage: every candidate node, its usable total over its candidate disks and its score (null = skipped). */
  nodeScores: Array<{ node: string; usable: number; score: number | null }>;
  chosenNode: string | null;
  /** Disk stage within the chosen node. */
  diskScores: Array<{ disk: string; usable: number; score: number | null }>;
}

/**
 * The balance selection over candidate positions 0 … count − 1, candidate p being disk at[p] with usable[at[p]] on
 * node nodeOf[at[p]] (positions grouped by node, in node then disk name order). Its working arrays are reused from
 * one selection to the next (selections are synchronous), so choosing allocates nothing; what it found stays
 * readable until the next one, for the scores of a trace.
 */
class BalanceSelection {
  /** Per candidate node g (in candidate order): its first position, its usable total, its node-stage score. */
  start = new Int32Array(16);
  total = new Float64Array(16);
  nodeScore = new Float64Array(16);
  /** The disk stage: the usable figures and scores of the chosen node's candidates. */
  diskUsable = new Float64Array(16);
  diskScore = new Float64Array(16);
  /** Candidate nodes of the last selection, and the chosen one (−1: none; no node stage for a single candidate). */
  nodes = 0;
  bestNode = -1;
  how: BalanceHow = 'single_candidate';

  /** The position chosen. */
  choose(at: ArrayLike<number>, count: number, usable: ArrayLike<number>, nodeOf: ArrayLike<number>, size: number): number {
    this.nodes = 0;
    this.bestNode = -1;
    if (count === 1) {
      this.how = 'single_candidate';
      return 0;
    }
    if (this.start.length <= count) {
      const n = 2 * count;
      this.start = new Int32Array(n);
      this.total = new Float64Array(n);
      this.nodeScore = new Float64Array(n);
      this.diskUsable = new Float64Array(n);
      this.diskScore = new Float64Array(n);
    }
    // Node totals over candidate disks only.
    const { start, total, nodeScore, diskUsable, diskScore } = this;
    // The same additions in the same order as a running total per node (float64 sums must not be regrouped).
    let nodes = 0;
    let last = nodeOf[at[0]!]!;
    let sum = 0;
    start[0] = 0;
    for (let p = 0; p < count; p++) {
      const i = at[p]!;
      const k = nodeOf[i]!;
      if (k !== last) {
        total[nodes++] = sum;
        start[nodes] = p;
        sum = 0;
        last = k;
      }
      sum += usable[i]!;
    }
    total[nodes++] = sum;
    start[nodes] = count;
    this.nodes = nodes;
    const bestNode = scoresInto(total, nodes, size, nodeScore);
    if (bestNode < 0) {
      this.how = 'most_usable_no_node_fits';
      return mostUsable(at, usable, 0, count, null);
    }
    this.bestNode = bestNode;

    const from = start[bestNode]!;
    const m = start[bestNode + 1]! - from;
    for (let k = 0; k < m; k++) diskUsable[k] = usable[at[from + k]!]!;
    const bestDisk = scoresInto(diskUsable, m, size, diskScore);
    if (bestDisk >= 0) {
      this.how = 'balance';
      return from + bestDisk;
    }
    let fitting = false;
    for (let k = 0; k < m && !fitting; k++) fitting = !Number.isNaN(diskScore[k]!);
    this.how = fitting ? 'most_usable_degenerate_node' : 'most_usable_no_fitting_disk';
    return mostUsable(at, usable, from, from + m, fitting ? diskScore : null);
  }

  /**
   * The last selection as a result, `chosen` its position, `names` naming a position's disk; with `scores`, the
   * node and disk stages' scores too (else left empty: only a trace or explain_target reads them).
   */
  result(chosen: number, names: (p: number) => { node: string; disk: string }, scores: boolean): BalanceResult {
    const { how, bestNode, nodes, start } = this;
    const chosenNode = how === 'single_candidate' ? names(0).node : bestNode >= 0 ? names(start[bestNode]!).node : null;
    const nodeScores: BalanceResult['nodeScores'] = [];
    const diskScores: BalanceResult['diskScores'] = [];
    if (scores) {
      for (let g = 0; g < nodes; g++) nodeScores.push({ node: names(start[g]!).node, usable: this.total[g]!, score: orNull(this.nodeScore[g]!) });
      if (bestNode >= 0) {
        const from = start[bestNode]!;
        for (let k = 0; k < start[bestNode + 1]! - from; k++) {
          diskScores.push({ disk: names(from + k).disk, usable: this.diskUsable[k]!, score: orNull(this.diskScore[k]!) });
        }
      }
    }
    return { chosen, how, nodeScores, chosenNode, diskScores };
  }
}

const orNull = (score: number): number | null => (Number.isNaN(score) ? null : score);

/**
 * The position p in [from, to) whose usable[at[p]] is largest (the first on a tie, i.e. node then disk name), among
 * those with a score (not NaN in `scores`, indexed from `from`) when `scores` is given.
 */
function mostUsable(at: ArrayLike<number>, usable: ArrayLike<number>, from: number, to: number, scores: Float64Array | null): number {
  let best = -1;
  for (let p = from; p < to; p++) {
    if (scores && Number.isNaN(scores[p - from]!)) continue;
    if (best < 0 || usable[at[p]!]! > usable[at[best]!]!) best = p;
  }
  return best;
}

const selection = new BalanceSelection();

/**
 * Picks one disk. `candidates` must be sorted by node name, then disk name, and be non-empty.
 * Longhorn's random fallbacks are made deterministic by taking the disk with the most usable space, one of the
 * outcomes Longhorn itself can produce.
 */
export function selectByBalance(candidates: readonly BalanceDisk[], size: number): BalanceResult {
  const n = candidates.length;
  const usable = Float64Array.from(candidates, (c) => c.usable);
  // Consecutive candidates of one node share its number.
  const nodeOf = new Int32Array(n);
  for (let p = 1; p < n; p++) nodeOf[p] = nodeOf[p - 1]! + (candidates[p]!.node === candidates[p - 1]!.node ? 0 : 1);
  const at = Int32Array.from({ length: n }, (_, p) => p);
  const chosen = selection.choose(at, n, usable, nodeOf, size);
  return selection.result(chosen, (p) => candidates[p]!, true);
}

/**
 * Longhorn ≤ v1.10's final choice: the candidate with the largest storageAvailable − storageReserved (storageScheduled
 * not subtracted, no node stage). Longhorn breaks ties by Go map order (random); this takes the first.
 */
export function selectMostUsableLegacy(candidates: ReadonlyArray<{ node: string; storageAvailable: number; storageReserved: number }>): BalanceResult {
  let best = 0;
  for (let i = 1; i < candidates.length; i++) {
    const c = candidates[i]!;
    const b = candidates[best]!;
    if (c.storageAvailable - c.storageReserved > b.storageAvailable - b.storageReserved) best = i;
  }
  return { chosen: best, how: 'legacy_most_usable', nodeScores: [], chosenNode: candidates[best]!.node, diskScores: [] };
}

/**
 * The engine's final choice among the disks of the winning tier (positions 0 … count − 1 of `at`, which keep the
 * table's node-then-disk order): the request's `select` when given, else the balance selection. The whole result is
 * left on the request for the placement and the trace.
 */
export const balanceSelector: Selector<DiskTable, DiskRequest> = {
  name: 'BalanceSelection',
  prepare: (table, request) => (at, count) => {
    const size = request.volume.size;
    let result: BalanceResult;
    if (request.select) {
      const candidates: DiskView[] = [];
      for (let k = 0; k < count; k++) candidates.push(table.disks[at[k]!]!);
      result = request.select(candidates, size);
    } else {
      const chosen = selection.choose(at, count, table.usable, table.nodeOf, size);
      result = selection.result(chosen, (p) => ({ node: table.disks[at[p]!]!.node, disk: table.disks[at[p]!]!.name }), request.scores);
    }
    request.selection = result;
    return result.chosen;
  },
};
