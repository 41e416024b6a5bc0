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
 * For every i with values[i] ≥ size: the balance score of the set where only values[i] is reduced by size;
 * null for the others (Longhorn skips them). O(n): the extremes of "all but i" come from the two largest and two
 * smallest values.
 */
export function scoresAfterPlacing(values: readonly number[], size: number): Array<number | null> {
  const n = values.length;
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
  const out: Array<number | null> = new Array(n);
  for (let i = 0; i < n; i++) {
    const v = values[i]!;
    if (v < size) { out[i] = null; continue; }
    if (mean <= 0) { out[i] = DEGENERATE_SCORE; continue; }
    const reduced = v - size;
    const max = Math.max(i === maxAt ? max2 : max1, reduced);
    const min = Math.min(i === minAt ? min2 : min1, reduced);
    out[i] = (max - min) / mean;
  }
  return out;
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

/** Index of the largest usable among `indexes` (first wins a tie, i.e. node then disk name). */
function mostUsable(candidates: readonly BalanceDisk[], indexes: readonly number[]): number {
  let best = indexes[0]!;
  for (const i of indexes) if (candidates[i]!.usable > candidates[best]!.usable) best = i;
  return best;
}

/**
 * Picks one disk. `candidates` must be sorted by node name, then disk name, and be non-empty.
 * Longhorn's random fallbacks are made deterministic by taking the disk with the most usable space, one of the
 * outcomes Longhorn itself can produce.
 */
export function selectByBalance(candidates: readonly BalanceDisk[], size: number): BalanceResult {
  if (candidates.length === 1) {
    return { chosen: 0, how: 'single_candidate', nodeScores: [], chosenNode: candidates[0]!.node, diskScores: [] };
  }
  // Node totals over candidate disks only; candidates are grouped by node.
  const nodeNames: string[] = [];
  const nodeUsable: number[] = [];
  const nodeDisks: number[][] = [];
  for (let i = 0; i < candidates.length; i++) {
    const c = candidates[i]!;
    if (nodeNames.length === 0 || nodeNames[nodeNames.length - 1] !== c.node) {
      nodeNames.push(c.node);
      nodeUsable.push(0);
      nodeDisks.push([]);
    }
    nodeUsable[nodeUsable.length - 1]! += c.usable;
    nodeDisks[nodeDisks.length - 1]!.push(i);
  }
  const nodeScoreList = scoresAfterPlacing(nodeUsable, size);
  const nodeScores = nodeNames.map((node, i) => ({ node, usable: nodeUsable[i]!, score: nodeScoreList[i]! }));
  let bestNode = -1;
  let best = DEGENERATE_SCORE;
  for (let i = 0; i < nodeScoreList.length; i++) {
    const s = nodeScoreList[i];
    if (s !== null && s !== undefined && s < best) { best = s; bestNode = i; }
  }
  if (bestNode < 0) {
    const all = candidates.map((_, i) => i);
    return { chosen: mostUsable(candidates, all), how: 'most_usable_no_node_fits', nodeScores, chosenNode: null, diskScores: [] };
  }

  const onNode = nodeDisks[bestNode]!;
  const diskValues = onNode.map((i) => candidates[i]!.usable);
  const diskScoreList = scoresAfterPlacing(diskValues, size);
  const diskScores = onNode.map((i, k) => ({ disk: candidates[i]!.disk, usable: diskValues[k]!, score: diskScoreList[k]! }));
  let bestDisk = -1;
  best = DEGENERATE_SCORE;
  for (let k = 0; k < diskScoreList.length; k++) {
    const s = diskScoreList[k];
    if (s !== null && s !== undefined && s < best) { best = s; bestDisk = k; }
  }
  const chosenNode = nodeNames[bestNode]!;
  if (bestDisk >= 0) return { chosen: onNode[bestDisk]!, how: 'balance', nodeScores, chosenNode, diskScores };
  const fitting = onNode.filter((_, k) => diskScoreList[k] !== null);
  if (fitting.length > 0) {
    return { chosen: mostUsable(candidates, fitting), how: 'most_usable_degenerate_node', nodeScores, chosenNode, diskScores };
  }
  return { chosen: mostUsable(candidates, onNode), how: 'most_usable_no_fitting_disk', nodeScores, chosenNode, diskScores };
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
      const candidates: BalanceDisk[] = [];
      for (let k = 0; k < count; k++) candidates.push(table.balance[at[k]!]!);
      result = selectByBalance(candidates, size);
    }
    request.selection = result;
    return result.chosen;
  },
};
