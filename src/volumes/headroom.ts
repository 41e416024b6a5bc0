// Headroom: how many more identical volumes fit, one after another, if each were scheduled and claimed exactly as
// POST /volumes/schedule schedules and claims it now — computed without claiming anything.
//
// Why a closed form per pool works: a claim changes only its own pool, every filter but CapacityFilter judges what
// claims do not change (zone, capabilities, report age), and CapacityFilter's verdict is monotone in the number k of
// volumes a pool took (provisioned grows, free shrinks, the ratio stays as at the report). So pool i takes at most
// c_i volumes (the first k it refuses), and the sequence ends once every pool has taken its c_i — unless one never
// refuses (infinite or unknown free space): then the order decides where the volumes go, and it is followed step by
// step (a heap over the pools' next weights when one weigher ranks them, the engine itself on a copy otherwise).
// Pure: the pool table, the engine and the request in, numbers and the filters' own sentences out.
import { Extremes, normalized, type Decision } from '../pipeline/pipeline.ts';
import {
  capacityCode, capacityRejectionMessage, capacityWeight, CapacityFigures, CapacityWeightsAfter, isCapacityPass,
  replaceInfiniteWeights,
  type CapacityRejectCode, type OverProvisioningCalculation,
} from './capacity.ts';
import { consumedFigures, consumedFree, consumedProvisioned, type PoolTable, type VolumeRequest } from './model.ts';
import type { VolumesPipeline } from './scheduler.ts';
import { ALL_WEIGHTS_INFINITE } from './weighers.ts';

export interface HeadroomPool {
  pool: string;
  /** How many of the volumes counted this pool takes. */
  fits: number;
  /** The sentence of the stage that would refuse the next one here; null when `max` stopped the count first. */
  limit: string | null;
}

export interface HeadroomAnswer {
  fits: number;
  truncated: boolean;
  pools: HeadroomPool[];
}

export interface HeadroomInput {
  table: PoolTable;
  pipeline: VolumesPipeline;
  request: VolumeRequest;
  calculation: OverProvisioningCalculation;
  max: number;
}

/** One pool's CapacityFilter figures after k more claims of `size` (a one-row table, reused). */
class PoolAfter {
  readonly figures = new CapacityFigures(1);
  readonly #table: PoolTable;
  readonly #size: number;

  constructor(table: PoolTable, size: number) {
    this.#table = table;
    this.#size = size;
  }

  /** Sets the row to pool i after k claims; returns the row's figures. */
  at(i: number, k: number): CapacityFigures {
    const pool = this.#table.pools[i]!;
    const { provisioned, free } = consumedFigures(pool, pool.allocated + k * this.#size, pool.consumed + k * this.#size);
    this.figures.set(0, {
      total: pool.total, free, provisioned, reservedPercentage: pool.reservedPercentage, thinSupport: pool.thinSupport, mosr: pool.mosr,
    });
    return this.figures;
  }
}

export function headroom(input: HeadroomInput): HeadroomAnswer {
  const { table, pipeline, request, calculation, max } = input;
  const n = table.length;
  const fits = new Float64Array(n);
  const limits: Array<string | null> = new Array<string | null>(n).fill(null);
  const after = new PoolAfter(table, request.size);
  const capacityChecked = pipeline.filters.some((f) => f.name === 'CapacityFilter');

  // What the first request meets: the pools no filter refuses now; the others never take one (their sentence now).
  const first: Decision = pipeline.decide(table, request, { limit: 0 });
  for (const r of first.rejected()) limits[r.index] = first.reason(r);
  const open: number[] = [];
  for (let i = 0; i < n; i++) if (limits[i] === null) open.push(i);

  const refuses = (i: number, k: number): boolean =>
    capacityChecked && !isCapacityPass(capacityCode(after.at(i, k), 0, request.size, request.thin, calculation));
  const capacitySentence = (i: number, k: number): string => {
    const f = after.at(i, k);
    const code = capacityCode(f, 0, request.size, request.thin, calculation) as CapacityRejectCode;
    return capacityRejectionMessage(f, 0, request.size, calculation, code);
  };

  // c_i, capped at max + 1 (more than max: the order decides).
  const cap = new Float64Array(n);
  let total = 0;
  for (const i of open) {
    cap[i] = firstRefusal(i, estimate(after, i, request, calculation), max + 1, refuses);
    total += cap[i]!;
  }

  if (total <= max) {
    // Every pool takes exactly its c_i, whatever the order.
    for (const i of open) {
      fits[i] = cap[i]!;
      limits[i] = capacitySentence(i, cap[i]!);
    }
    return answer(table, fits, limits, total, false);
  }

  const followed = pipeline.weighers.length <= 1
    ? followByHeap(input, open, cap, fits, limits)
    : followByWeights(input, open, cap, fits, limits) ?? followByEngine(input, open, cap, fits, limits);
  for (const i of open) if (limits[i] === null && fits[i] === cap[i] && cap[i]! <= max) limits[i] = capacitySentence(i, cap[i]!);
  return answer(table, fits, limits, followed.placed, followed.truncated);
}

/** How far following the order got: `truncated` when max was reached and one more would still fit. */
interface Followed {
  placed: number;
  truncated: boolean;
}

function answer(table: PoolTable, fits: Float64Array, limits: Array<string | null>, placed: number, truncated: boolean): HeadroomAnswer {
  const pools = table.pools.map((p, i) => ({ pool: p.name, fits: fits[i]!, limit: limits[i]! }));
  return { fits: placed, truncated, pools };
}

/** Where to start looking for c_i: the room the request's capacity figure leaves, in volumes. */
function estimate(after: PoolAfter, i: number, request: VolumeRequest, calculation: OverProvisioningCalculation): number {
  const room = capacityWeight(after.at(i, 0), 0, request.thin, 1, calculation);
  return room > 0 && Number.isFinite(room) ? Math.floor(room / request.size) : 0;
}

/**
 * The least k in [0, cap] with refuses(i, k), or cap when none below it refuses: refuses is monotone in k. Starts at
 * the estimate and gallops outward, then bisects, so an exact estimate costs two checks.
 */
function firstRefusal(i: number, guess: number, cap: number, refuses: (i: number, k: number) => boolean): number {
  const k = Math.min(Math.max(guess, 0), cap);
  let pass = -1; // greatest k known to pass
  let fail = cap; // least k known to refuse (or the cap)
  if (k < cap && refuses(i, k)) {
    fail = k;
    for (let step = 1; ; step *= 2) {
      const below = fail - step;
      if (below < 0) break;
      if (!refuses(i, below)) {
        pass = below;
        break;
      }
      fail = below;
    }
  } else if (k < cap) {
    pass = k;
    for (let step = 1; ; step *= 2) {
      const above = Math.min(pass + step, cap);
      if (above >= cap) break;
      if (refuses(i, above)) {
        fail = above;
        break;
      }
      pass = above;
    }
  } else if (!refuses(i, cap - 1)) {
    return cap;
  } else {
    fail = cap - 1;
    pass = -1;
  }
  while (fail - pass > 1) {
    const mid = pass + Math.floor((fail - pass) / 2);
    if (refuses(i, mid)) fail = mid;
    else pass = mid;
  }
  return fail;
}

/**
 * One weigher (or none): pool i's next weight depends only on its own k, so each step's winner is the best of the
 * pools' next scores (min–max normalisation keeps the order of raw weights; the first pool wins ties, as the engine's
 * stable ranking). Either every claim improves its pool's score (stacking: a negative CapacityWeigher multiplier, a
 * positive AllocatedCapacityWeigher one, or no ranking at all), and then the best pool takes its whole c_i before
 * the next one; or every claim lowers it (spreading), and the volumes go out in the order of all pools' scores merged:
 * everything above a threshold score first (counted per pool in closed form), the rest from a heap.
 */
function followByHeap(input: HeadroomInput, open: readonly number[], cap: Float64Array, fits: Float64Array,
  limits: Array<string | null>): Followed {
  const { table, pipeline, request, calculation, max } = input;
  const weigher = pipeline.weighers[0];
  const multiplier = weigher?.multiplier ?? 0;
  const sign = multiplier > 0 ? 1 : multiplier < 0 ? -1 : 0;
  const byCapacity = weigher?.name === 'CapacityWeigher';
  const weights = byCapacity ? new CapacityWeightsAfter(table.pools, request.thin, multiplier, calculation) : null;
  const scoreAt = (i: number, k: number): number => {
    if (sign === 0) return 0;
    let raw = table.allocated[i]! + k * request.size;
    if (weights) {
      const pool = table.pools[i]!;
      const consumed = pool.consumed + k * request.size;
      raw = weights.weight(i, consumedProvisioned(pool.reportedProvisioned ?? NaN, pool.allocated + k * request.size, consumed),
        consumedFree(pool, consumed) as number);
    }
    // An infinite weight (multiplier < 0) is placed above every finite one, so it ranks last.
    return raw === Infinity ? -Infinity : sign * raw;
  };
  const score = new Float64Array(table.length);
  const taking = open.filter((i) => cap[i]! > 0);
  for (const i of taking) score[i] = scoreAt(i, 0);
  const spreading = byCapacity ? sign > 0 : sign < 0;
  if (!spreading) return stack(input, taking, score, cap, fits, limits);

  // Spreading: every item scoring above T goes first. T is found on the straight-line estimate (each claim lowers a
  // finite pool's score by the size), low enough that the exact counts cannot exceed max; a heap places the rest.
  const size = request.size;
  const infinite = (i: number) => table.figures.infiniteOrUnknown(i);
  const estimateAbove = (i: number, t: number): number => {
    const s0 = score[i]!;
    if (!(s0 > t)) return 0;
    if (infinite(i)) return cap[i]!;
    return Math.min(cap[i]!, Math.ceil((s0 - t) / size));
  };
  const target = max - taking.length;
  let placed = 0;
  if (target > 0) {
    let hi = -Infinity;
    let lo = Infinity;
    for (const i of taking) {
      hi = Math.max(hi, score[i]!);
      lo = Math.min(lo, infinite(i) ? score[i]! - 1 : score[i]! - cap[i]! * size - 1);
    }
    const estimatedTotal = (t: number) => {
      let sum = 0;
      for (const i of taking) sum += estimateAbove(i, t);
      return sum;
    };
    if (estimatedTotal(lo) > target) {
      for (let round = 0; round < 64 && hi - lo > 0; round++) {
        const mid = lo + (hi - lo) / 2;
        if (mid === lo || mid === hi) break;
        if (estimatedTotal(mid) > target) lo = mid;
        else hi = mid;
      }
      const threshold = hi;
      for (const i of taking) {
        fits[i] = firstRefusal(i, estimateAbove(i, threshold), cap[i]!, (j, k) => scoreAt(j, k) <= threshold);
        placed += fits[i]!;
      }
      if (placed > max) {
        placed = 0;
        for (const i of taking) fits[i] = 0;
      }
    }
  }
  const heap = new PoolHeap(score);
  for (const i of taking) {
    if (fits[i]! >= cap[i]!) continue;
    score[i] = scoreAt(i, fits[i]!);
    heap.push(i);
  }
  while (heap.size > 0) {
    if (placed === max) return { placed, truncated: true };
    const i = heap.pop();
    fits[i]!++;
    placed++;
    if (fits[i]! < cap[i]!) {
      score[i] = scoreAt(i, fits[i]!);
      heap.push(i);
    }
  }
  return { placed, truncated: false };
}

/**
 * Stacking: the best pool (by score, then candidate order) keeps winning until it refuses, then the next. A
 * CapacityWeigher with a multiplier ≤ 0 cannot weigh pools that are all infinite/unknown (Cinder's ValueError): once
 * only those are left, the next request is refused with its sentence.
 */
function stack(input: HeadroomInput, taking: readonly number[], score: Float64Array, cap: Float64Array, fits: Float64Array,
  limits: Array<string | null>): Followed {
  const { table, pipeline, request, max } = input;
  const weigher = pipeline.weighers[0];
  const refusesAllInfinite = weigher?.name === 'CapacityWeigher' && weigher.multiplier <= 0;
  const order = taking.slice().sort((a, b) => (score[a] !== score[b] ? score[b]! - score[a]! : a - b));
  let finiteLeft = order.filter((i) => !table.figures.infiniteOrUnknown(i)).length;
  let placed = 0;
  for (let o = 0; o < order.length; o++) {
    if (refusesAllInfinite && finiteLeft === 0) {
      const bound = weigher.prepare(table, request);
      for (const i of order.slice(o)) limits[i] = bound.reason ? bound.reason(i, ALL_WEIGHTS_INFINITE) : ALL_WEIGHTS_INFINITE;
      return { placed, truncated: false };
    }
    if (placed === max) return { placed, truncated: true };
    const i = order[o]!;
    fits[i] = Math.min(cap[i]!, max - placed);
    placed += fits[i]!;
    // max came first: this pool, still the best, takes the next one too.
    if (fits[i]! < cap[i]!) return { placed, truncated: true };
    if (!table.figures.infiniteOrUnknown(i)) finiteLeft--;
  }
  return { placed, truncated: false };
}

/** One more volume on pool i of the copy, as a claim consumes it (allocated and provisioned grow by its size). */
function take(copy: PoolTable, i: number, size: number, fits: Float64Array): void {
  const pool = copy.pools[i]!;
  pool.allocated += size;
  pool.consumed += size;
  copy.refresh(i);
  fits[i]!++;
}

/**
 * Two weighers or more, both Cinder's: min–max normalisation couples the pools, but a claim changes one pool's raw
 * weights only. Each weigher's bounds are kept with the counts at the extremes (they move only when the claimed
 * pool was the last one at an extreme, or goes past one, or leaves the candidates at its c_i); while they stay,
 * every other pool's total weight stays too, and only the claimed pool's is recomputed in a tree of totals whose
 * root is the winner (the highest, the first pool on a tie, as the engine's stable ranking). When a bound moves,
 * the totals are recomputed, each with the engine's own expression (Σ multiplier × (w − min) / (max − min),
 * infinite capacity weights replaced as Cinder replaces them), so the winner is the engine's to the last bit. A
 * claim is kept as sums per pool (allocated and consumed grow by the size, as a claim adds them) and the claimed
 * pool's raw weights are computed from them, as the table's row would give them. Null for a weigher with fixed
 * bounds or of another kind: then the engine follows.
 */
function followByWeights(input: HeadroomInput, open: readonly number[], cap: Float64Array, fits: Float64Array,
  limits: Array<string | null>): Followed | null {
  const { table, pipeline, request, calculation, max } = input;
  const weighers = pipeline.weighers;
  const known = (name: string) => name === 'CapacityWeigher' || name === 'AllocatedCapacityWeigher';
  if (weighers.some((w) => !known(w.name) || w.minval !== undefined || w.maxval !== undefined)) return null;
  const among = Int32Array.from(open.filter((i) => cap[i]! > 0));
  const m = among.length;
  const nw = weighers.length;
  const size = request.size;
  const multiplier = Float64Array.from(weighers, (w) => w.multiplier);
  // Per position, side by side (a claim reads one pool's figures, and the pools it claims are scattered): its
  // allocated and consumed sums with the claims so far, its reported provisioned and free (NaN: none, or infinite or
  // unknown) and, in `raw`, its raw weights.
  const figures = new Float64Array(4 * m);
  const gone = new Uint8Array(m);
  for (let p = 0; p < m; p++) {
    const pool = table.pools[among[p]!]!;
    figures[4 * p] = pool.allocated;
    figures[4 * p + 1] = pool.consumed;
    figures[4 * p + 2] = pool.reportedProvisioned ?? NaN;
    figures[4 * p + 3] = typeof pool.reportedFree === 'number' ? pool.reportedFree : NaN;
  }
  // A claimed pool's raw weights as its row would give them after those claims (an infinite pool's free is not read).
  const capacityWeights = weighers.map((w) => w.name === 'CapacityWeigher'
    ? new CapacityWeightsAfter(Array.from(among, (i) => table.pools[i]!), request.thin, w.multiplier, calculation)
    : null);
  const rawOf = (w: number, p: number): number => {
    const weights = capacityWeights[w];
    const allocated = figures[4 * p]!;
    if (!weights) return allocated;
    const consumed = figures[4 * p + 1]!;
    return weights.weight(p, consumedProvisioned(figures[4 * p + 2]!, allocated, consumed), figures[4 * p + 3]! - consumed);
  };
  const raw = new Float64Array(nw * m);
  const extremes = weighers.map(() => new Extremes());
  for (let w = 0; w < nw; w++) {
    for (let p = 0; p < m; p++) {
      raw[p * nw + w] = rawOf(w, p);
      extremes[w]!.add(raw[p * nw + w]!);
    }
  }
  const totals = new WinnerTree(m);

  // The bounds the totals were computed with: per weigher lo, range, and what an infinite weight becomes.
  const lo = new Float64Array(nw);
  const range = new Float64Array(nw);
  const replacement = new Float64Array(nw);
  const next = new Float64Array(3 * nw);
  const tiny = new Float64Array(3);
  /**
   * The bounds over the candidates now, into `next`; false when a CapacityWeigher sees only infinite weights (it
   * cannot weigh them: Cinder's ValueError).
   */
  const bounds = (): boolean => {
    for (let w = 0; w < nw; w++) {
      const e = extremes[w]!;
      if (e.stale) {
        e.clear();
        for (let p = 0; p < m; p++) if (gone[p] === 0) e.add(raw[p * nw + w]!);
      }
      let l = e.lo;
      let h = e.hi;
      let r = Infinity;
      if (e.infinite > 0) {
        if (h === -Infinity) return false;
        // replaceInfiniteWeights over the extremes alone gives the one replacement value of every infinite weight.
        tiny[0] = l; tiny[1] = h; tiny[2] = Infinity;
        replaceInfiniteWeights(tiny, 3);
        r = tiny[2]!;
        h = r;
      }
      if (l === Infinity) l = h;
      next[3 * w] = l;
      next[3 * w + 1] = l === h ? 0 : h - l;
      next[3 * w + 2] = r;
    }
    return true;
  };
  const totalOf = (p: number): number => {
    let total = 0;
    for (let w = 0; w < nw; w++) {
      let v = raw[p * nw + w]!;
      if (v === Infinity) v = replacement[w]!;
      total += multiplier[w]! * normalized(v, lo[w]!, range[w]!);
    }
    return total;
  };
  const adopt = (): boolean => {
    let changed = false;
    for (let w = 0; w < nw; w++) {
      if (lo[w] !== next[3 * w] || range[w] !== next[3 * w + 1] || replacement[w] !== next[3 * w + 2]) changed = true;
      lo[w] = next[3 * w]!;
      range[w] = next[3 * w + 1]!;
      replacement[w] = next[3 * w + 2]!;
    }
    return changed;
  };
  /** The table with the claims so far, for the engine to go on from. */
  const claimed = (): PoolTable => {
    const copy = table.copy();
    for (let p = 0; p < m; p++) {
      const i = among[p]!;
      if (fits[i] === 0) continue;
      copy.pools[i]!.allocated = figures[4 * p]!;
      copy.pools[i]!.consumed = figures[4 * p + 1]!;
      copy.refresh(i);
    }
    return copy;
  };

  let alive = m;
  let placed = 0;
  let stale = true;
  for (;;) {
    if (stale) {
      // No candidate left (or none weighable): the engine's own refusal of the next one, on the copy the claims
      // reached, gives every candidate's sentence (and, were it to place one after all, it goes on from there).
      if (alive === 0 || !bounds()) return followByEngine(input, open, cap, fits, limits, claimed(), placed);
      adopt();
      for (let p = 0; p < m; p++) totals.set(p, gone[p] === 1 ? null : totalOf(p));
      totals.build();
      stale = false;
    }
    if (placed === max) return { placed, truncated: true };
    const p = totals.winner();
    const i = among[p]!;
    figures[4 * p]! += size;
    figures[4 * p + 1]! += size;
    fits[i]!++;
    placed++;
    const leaves = fits[i]! >= cap[i]!;
    if (leaves) {
      alive--;
      gone[p] = 1;
    }
    let moved = false;
    for (let w = 0; w < nw; w++) {
      const e = extremes[w]!;
      const { lo: l, hi: h, infinite } = e;
      e.remove(raw[p * nw + w]!);
      if (!leaves) {
        const v = rawOf(w, p);
        raw[p * nw + w] = v;
        e.add(v);
      }
      if (e.stale || e.lo !== l || e.hi !== h || e.infinite !== infinite) moved = true;
    }
    // Bounds unchanged (the extremes they come from did not move): only this pool's total moved.
    if (alive > 0 && (!moved || (bounds() && !adopt()))) totals.change(p, leaves ? null : totalOf(p));
    else stale = true;
  }
}

/** The leaves of a tree over n positions: the least power of two ≥ n (node a's children are 2a, 2a + 1). */
const leafWidth = (n: number): number => (n <= 1 ? 1 : 2 ** Math.ceil(Math.log2(n)));

/**
 * The highest total over positions (absent: null), the lowest position on a tie, as a tournament tree: each node
 * holds the position winning its half and its total (leaves their own). Totals are finite, so an absent position
 * weighs −∞ and never wins while one is present.
 */
class WinnerTree {
  readonly #width: number;
  readonly #value: Float64Array;
  readonly #win: Int32Array;

  constructor(n: number) {
    const width = (this.#width = leafWidth(n));
    this.#value = new Float64Array(2 * width).fill(-Infinity);
    this.#win = new Int32Array(2 * width);
    for (let p = 0; p < width; p++) this.#win[width + p] = p;
  }

  set(p: number, v: number | null): void {
    this.#value[this.#width + p] = v === null ? -Infinity : v;
  }

  /** Node a from its children: the left half holds the lower positions, so it wins a tie. False if nothing changed. */
  #pull(a: number): boolean {
    const value = this.#value;
    const win = this.#win;
    const c = value[2 * a + 1]! > value[2 * a]! ? 2 * a + 1 : 2 * a;
    if (win[a] === win[c] && value[a] === value[c]) return false;
    win[a] = win[c]!;
    value[a] = value[c]!;
    return true;
  }

  build(): void {
    for (let a = this.#width - 1; a >= 1; a--) this.#pull(a);
  }

  change(p: number, v: number | null): void {
    this.set(p, v);
    // Where a node keeps its winner and total, nothing above it changes.
    for (let a = (this.#width + p) >> 1; a >= 1 && this.#pull(a); a >>= 1);
  }

  winner(): number {
    return this.#win[1]!;
  }
}

/** The engine step by step on a copy: the reference ordering, for weighers followByWeights does not know. */
function followByEngine(input: HeadroomInput, open: readonly number[], cap: Float64Array, fits: Float64Array,
  limits: Array<string | null>, copy = input.table.copy(), placed = 0): Followed {
  const { pipeline, request, max } = input;
  const among = Int32Array.from(open.filter((i) => cap[i]! > 0));
  for (;;) {
    const decision = pipeline.decide(copy, request, { limit: 1, among });
    if (decision.chosen < 0) {
      for (const r of decision.rejected()) limits[r.index] = decision.reason(r);
      return { placed, truncated: false };
    }
    if (placed === max) return { placed, truncated: true };
    const i = decision.chosen;
    take(copy, i, request.size, fits);
    placed++;
  }
}

/** A binary heap of pool indices: higher score first, then the lower index (the engine's stable order). */
class PoolHeap {
  readonly #score: Float64Array;
  readonly #items: number[] = [];

  constructor(score: Float64Array) {
    this.#score = score;
  }

  get size(): number {
    return this.#items.length;
  }

  at(h: number): number {
    return this.#items[h]!;
  }

  #before(a: number, b: number): boolean {
    const sa = this.#score[a]!;
    const sb = this.#score[b]!;
    return sa !== sb ? sa > sb : a < b;
  }

  push(i: number): void {
    const items = this.#items;
    let h = items.push(i) - 1;
    while (h > 0) {
      const parent = (h - 1) >> 1;
      if (!this.#before(items[h]!, items[parent]!)) break;
      [items[h], items[parent]] = [items[parent]!, items[h]!];
      h = parent;
    }
  }

  pop(): number {
    const items = this.#items;
    const top = items[0]!;
    const last = items.pop()!;
    if (items.length > 0) {
      items[0] = last;
      let h = 0;
      for (;;) {
        const l = 2 * h + 1;
        const r = l + 1;
        let m = h;
        if (l < items.length && this.#before(items[l]!, items[m]!)) m = l;
        if (r < items.length && this.#before(items[r]!, items[m]!)) m = r;
        if (m === h) break;
        [items[h], items[m]] = [items[m]!, items[h]!];
        h = m;
      }
    }
    return top;
  }
}
