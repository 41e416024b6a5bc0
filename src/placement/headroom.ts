// GET /headroom's count: how many more consumers with one allocation-candidates request fit, each claiming the
// candidate ranked first, until the first empty answer or `max`. Defined by the sequential path (search, claim the
// first, repeat); computed without it when no sharing provider exists: then each claim consumes only the tree it
// lands in, so trees are independent and the total is the sum of what fits in each tree alone (a closed form for a
// tree with one candidate, kept as numbers only, and a local simulation otherwise). Only a truncated answer depends
// on the order the trees are chosen in; it is reproduced from the ranking alone, not the search: read off each
// tree's weights when they never depend on another tree's (one class), else by a priority queue over trees. Pure
// over the in-memory model (the sequential path applies its claims and takes them back before returning).
import { randomUUID } from 'node:crypto';
import { normalized } from '../pipeline/pipeline.ts';
import { eachSummed, type Candidate } from './filters.ts';
import { CAPACITY, grown, SLOT_FIELDS, USED, type PlacementModel, type Provider } from './model.ts';
import type { ParsedQuery } from './query.ts';
import { findCandidates, type SearchOptions } from './scheduler.ts';

export interface HeadroomAnswer {
  fits: number;
  truncated: boolean;
  roots: Array<{ root_provider_uuid: string; fits: number }>;
}

type Search = Pick<SearchOptions, 'randomize' | 'nestedAware' | 'freeCapacityMultiplier'>;

function answer(perRoot: Map<string, number>, fits: number, max: number): HeadroomAnswer {
  const roots = [...perRoot].filter(([, n]) => n > 0).sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([root_provider_uuid, n]) => ({ root_provider_uuid, fits: n }));
  return { fits, truncated: fits === max, roots };
}

/**
 * The definition: search with limit=1, claim the first candidate in the model, repeat until the first empty answer
 * or `max`; then take every claim back (synchronously: no other request sees them; no generation changes).
 */
export function sequentialHeadroom(model: PlacementModel, q: ParsedQuery, search: Search, max: number): HeadroomAnswer {
  const first: ParsedQuery = { ...q, limit: 1 };
  const claimed: string[] = [];
  const perRoot = new Map<string, number>();
  try {
    while (claimed.length < max) {
      const best = findCandidates(model, first, search).candidates[0];
      if (!best) break;
      const allocations: Record<string, Record<string, number>> = {};
      for (const [p, resources] of best.allocations) allocations[p.uuid] = Object.fromEntries(resources);
      const uuid = randomUUID();
      model.applyConsumer(uuid, { uuid, project_id: 'headroom', user_id: 'headroom', consumer_type: null, generation: 0, allocations });
      claimed.push(uuid);
      perRoot.set(best.anchor.uuid, (perRoot.get(best.anchor.uuid) ?? 0) + 1);
    }
  } finally {
    for (const uuid of claimed) model.applyConsumer(uuid, null);
  }
  return answer(perRoot, claimed.length, max);
}

/** No fitting candidate left in the tree. */
const FULL = -1;
/** The tree's next choice depends on how the classes are weighed against each other: only the sequential path knows. */
const UNDECIDED = -2;

/**
 * Every tree with several candidates of one call, in flat arrays shared by all (a Tree object and its arrays per
 * tree made a quarter of a call's time garbage collection), reused from one call to the next (headroom is
 * synchronous). Tree m's candidates are #candFirst[m] … #candFirst[m + 1] − 1 (indices into all of them), its
 * (provider, class) cells #cellFirst[m] … with their capacity and usage over its own copy of it. Each candidate's
 * fit and free capacities per class are kept current (refreshed when its tree's usage changes): the ranking reads
 * them many times per claim.
 */
class TreeStore {
  size = 0;
  #C = 0;
  /** The direction of every weigher (the shared multiplier's sign; 0 when the weights cannot differ). */
  #sign = 0;
  #classes: readonly string[] = [];
  #columns: Array<Float64Array | undefined> = [];
  /** Their keys are read only to break a tie (a merged candidate builds its key when first read). */
  readonly #candidates: Candidate[] = [];
  #candFirst = new Int32Array(64);
  #cellFirst = new Int32Array(64);
  /** Per tree: 1 once its candidates' key ranks were computed. */
  #ranked = new Uint8Array(64);
  /** Per tree: where its trail (the first class's free capacity each claim of its count read, in order) starts. */
  #trailFirst = new Int32Array(64);
  #trail = new Float64Array(256);
  #trailEnd = 0;
  /** Candidate i's [cell, amount] pairs: positions #pairFirst[i] … #pairFirst[i + 1] − 1. */
  #pairFirst = new Int32Array(256);
  #pairCell = new Int32Array(1024);
  #pairAmount = new Float64Array(1024);
  /** Per candidate and class ([i × C + c]): the cells of the providers supplying it, from #classFirst. */
  #classFirst = new Int32Array(1024);
  #classCells = new Int32Array(1024);
  #fit = new Uint8Array(256);
  #free = new Float64Array(1024);
  /** Each candidate's place in key order within its tree, once a tie needed it. */
  #keyRank = new Int32Array(256);
  /** While ranking a tree's keys: candidate i's pieces in keyPieces are #keyStart[i] … #keyStart[i + 1] − 1. */
  #keyStart = new Int32Array(256);
  #cellSlot = new Int32Array(1024);
  #cellClass = new Int32Array(1024);
  #capacity = new Float64Array(1024);
  #initial = new Float64Array(1024);
  #used = new Float64Array(1024);
  #cells = 0;
  #pairs = 0;

  begin(classes: readonly string[], columns: Array<Float64Array | undefined>, sign: number): void {
    this.size = 0;
    this.#C = classes.length;
    this.#classes = classes;
    this.#columns = columns;
    this.#sign = sign;
    this.#candidates.length = 0;
    this.#cells = 0;
    this.#pairs = 0;
    this.#trailEnd = 0;
    this.#pairFirst[0] = 0;
    this.#candFirst[0] = 0;
    this.#cellFirst[0] = 0;
    this.#classFirst[0] = 0;
  }

  /** One (provider, class, summed amount) of the candidate being added: its cell, found among its tree's or new. */
  readonly #visit = (p: Provider, rc: string, amount: number): void => {
    const c = this.#classes.indexOf(rc);
    const slot = p.slot;
    let cell = this.#cellFirst[this.size]!;
    while (cell < this.#cells && (this.#cellSlot[cell] !== slot || this.#cellClass[cell] !== c)) cell++;
    if (cell === this.#cells) {
      const n = ++this.#cells;
      this.#cellSlot = grown(this.#cellSlot, n);
      this.#cellClass = grown(this.#cellClass, n);
      this.#capacity = grown(this.#capacity, n);
      this.#initial = grown(this.#initial, n);
      this.#used = grown(this.#used, n);
      const values = this.#columns[c]!;
      this.#cellSlot[cell] = slot;
      this.#cellClass[cell] = c;
      this.#capacity[cell] = values[slot * SLOT_FIELDS + CAPACITY]!;
      this.#initial[cell] = this.#used[cell] = values[slot * SLOT_FIELDS + USED]!;
    }
    const k = this.#pairs++;
    this.#pairCell = grown(this.#pairCell, k + 1);
    this.#pairAmount = grown(this.#pairAmount, k + 1);
    this.#pairCell[k] = cell;
    this.#pairAmount[k] = amount;
  };

  /** A tree of `n` candidates, the first `first` and the others along `next` (indices into `all`); its index. */
  add(all: readonly Candidate[], first: number, next: Int32Array): number {
    const m = this.size;
    const C = this.#C;
    const from = this.#candidates.length;
    for (let i = first; i !== -1; i = next[i]!) this.#candidates.push(all[i]!);
    const to = this.#candidates.length;
    this.#pairFirst = grown(this.#pairFirst, to + 1);
    this.#fit = grown(this.#fit, to);
    this.#keyRank = grown(this.#keyRank, to);
    this.#free = grown(this.#free, to * C);
    this.#classFirst = grown(this.#classFirst, to * C + 1);
    for (let i = from; i < to; i++) {
      eachSummed(this.#candidates[i]!, this.#visit);
      this.#pairFirst[i + 1] = this.#pairs;
    }
    // Per (candidate, class), its cells in the order visited.
    this.#classCells = grown(this.#classCells, this.#pairs);
    let at = this.#classFirst[from * C]!;
    for (let i = from; i < to; i++) {
      for (let c = 0; c < C; c++) {
        this.#classFirst[i * C + c] = at;
        for (let k = this.#pairFirst[i]!; k < this.#pairFirst[i + 1]!; k++) {
          const cell = this.#pairCell[k]!;
          if (this.#cellClass[cell] === c) this.#classCells[at++] = cell;
        }
      }
    }
    this.#classFirst[to * C] = at;
    this.size = m + 1;
    this.#candFirst = grown(this.#candFirst, m + 2);
    this.#cellFirst = grown(this.#cellFirst, m + 2);
    this.#ranked = grown(this.#ranked, m + 1);
    this.#trailFirst = grown(this.#trailFirst, m + 1);
    this.#candFirst[m + 1] = to;
    this.#cellFirst[m + 1] = this.#cells;
    this.#ranked[m] = 0;
    this.#trailFirst[m] = 0;
    this.#refresh(m);
    return m;
  }

  /** Tree m's usage back to the model's. */
  reset(m: number): void {
    for (let cell = this.#cellFirst[m]!; cell < this.#cellFirst[m + 1]!; cell++) this.#used[cell] = this.#initial[cell]!;
    this.#refresh(m);
  }

  /**
   * Each candidate of tree m: the capacity check (used + amount ≤ capacity, integers, as the SQL check and the
   * merged re-check round) and the free capacity its weigher reads per class.
   */
  #refresh(m: number): void {
    const C = this.#C;
    const used = this.#used;
    const capacity = this.#capacity;
    for (let i = this.#candFirst[m]!; i < this.#candFirst[m + 1]!; i++) {
      let fits = 1;
      for (let k = this.#pairFirst[i]!; k < this.#pairFirst[i + 1]! && fits === 1; k++) {
        const cell = this.#pairCell[k]!;
        if (used[cell]! + this.#pairAmount[k]! > capacity[cell]!) fits = 0;
      }
      this.#fit[i] = fits;
      for (let c = 0; c < C; c++) {
        let sum = 0;
        for (let k = this.#classFirst[i * C + c]!; k < this.#classFirst[i * C + c + 1]!; k++) {
          const cell = this.#classCells[k]!;
          sum += capacity[cell]! - used[cell]!;
        }
        this.#free[i * C + c] = sum;
      }
    }
  }

  /** Tree m's candidates: indices first(m) … end(m) − 1. */
  first(m: number): number {
    return this.#candFirst[m]!;
  }
  end(m: number): number {
    return this.#candFirst[m + 1]!;
  }
  fits(i: number): boolean {
    return this.#fit[i] === 1;
  }
  /** The free capacity candidate i's weigher for class c reads (before this claim). */
  free(i: number, c: number): number {
    return this.#free[i * this.#C + c]!;
  }

  /** True when candidate a ranks before b (both of tree m) whatever the (positive) weights of the classes are. */
  #beats(m: number, a: number, b: number): boolean {
    let ahead = false;
    const C = this.#C;
    const sign = this.#sign;
    for (let c = 0; sign !== 0 && c < C; c++) {
      const d = sign * (this.#free[a * C + c]! - this.#free[b * C + c]!);
      if (d < 0) return false;
      if (d > 0) ahead = true;
    }
    if (ahead) return true;
    // Equal weights: the engine's tie-break (same root) is the candidate key.
    if (this.#ranked[m] === 0) this.#rankKeys(m);
    return this.#keyRank[a]! < this.#keyRank[b]!;
  }

  /**
   * Tree m's candidates' places in key order. From their keys' pieces when they give them (no string built: most
   * trees tie), else from the key strings.
   */
  #rankKeys(m: number): void {
    const from = this.#candFirst[m]!;
    const to = this.#candFirst[m + 1]!;
    const n = to - from;
    const order = rankOrder;
    order.length = n;
    for (let k = 0; k < n; k++) order[k] = from + k;
    let pieces = true;
    for (let i = from; i < to && pieces; i++) pieces = this.#candidates[i]!.keyPieces !== undefined;
    if (pieces) {
      keyPieces.end = 0;
      this.#keyStart = grown(this.#keyStart, to + 1);
      for (let i = from; i < to; i++) {
        this.#keyStart[i] = keyPieces.end;
        this.#candidates[i]!.keyPieces!(keyPieces.write);
      }
      this.#keyStart[to] = keyPieces.end;
    }
    // Insertion sort: a tree has a handful of candidates. (No comparator closure: one per tree was measurable.)
    for (let k = 1; k < n; k++) {
      const x = order[k]!;
      let j = k - 1;
      for (; j >= 0 && this.#keyBefore(pieces, x, order[j]!); j--) order[j + 1] = order[j]!;
      order[j + 1] = x;
    }
    for (let r = 0; r < n; r++) this.#keyRank[order[r]!] = r;
    this.#ranked[m] = 1;
  }

  /** Whether candidate a's key sorts before b's: from their pieces (written by #rankKeys) or their key strings. */
  #keyBefore(pieces: boolean, a: number, b: number): boolean {
    if (!pieces) return this.#candidates[a]!.key < this.#candidates[b]!.key;
    const start = this.#keyStart;
    return keyPieces.compare(start[a]!, start[a + 1]!, start[b]!, start[b + 1]!) < 0;
  }

  /** The candidate a search would rank first among tree m's, FULL, or UNDECIDED when no candidate dominates. */
  best(m: number): number {
    const from = this.#candFirst[m]!;
    const to = this.#candFirst[m + 1]!;
    let best = FULL;
    for (let i = from; i < to; i++) if (this.#fit[i] === 1 && (best === FULL || this.#beats(m, i, best))) best = i;
    if (best === FULL) return FULL;
    for (let i = from; i < to; i++) if (i !== best && this.#fit[i] === 1 && !this.#beats(m, best, i)) return UNDECIDED;
    return best;
  }

  /** Candidate i of tree m claimed. */
  claim(m: number, i: number): void {
    for (let k = this.#pairFirst[i]!; k < this.#pairFirst[i + 1]!; k++) this.#used[this.#pairCell[k]!]! += this.#pairAmount[k]!;
    this.#refresh(m);
  }

  /** How many claims fit in tree m alone, up to `max`; UNDECIDED when a choice along the way is. Keeps its trail. */
  count(m: number, max: number): number {
    let n = 0;
    this.#trailFirst[m] = this.#trailEnd;
    while (n < max) {
      const b = this.best(m);
      if (b === UNDECIDED) return UNDECIDED;
      if (b === FULL) break;
      this.#trail = grown(this.#trail, this.#trailEnd + 1);
      this.#trail[this.#trailEnd++] = this.free(b, 0);
      this.claim(m, b);
      n++;
    }
    this.reset(m);
    return n;
  }

  /** The weight of claim k of tree m's last count (k below it). */
  trail(m: number, k: number): number {
    return this.#trail[this.#trailFirst[m]! + k]!;
  }
}

/**
 * Keys in pieces (references to the candidates' uuids and items, no string built), one key after the other; two
 * compare as their strings would: equal up to the first pieces that differ, which decide when of one length.
 */
class KeyPieces {
  pieces: string[] = [];
  end = 0;
  readonly write = (piece: string): void => {
    this.pieces[this.end++] = piece;
  };
  /** < 0, 0, > 0 as the key of pieces a … aEnd − 1 sorts before, with or after the one of b … bEnd − 1. */
  compare(a: number, aEnd: number, b: number, bEnd: number): number {
    const pieces = this.pieces;
    for (; a < aEnd && b < bEnd; a++, b++) {
      const x = pieces[a]!;
      const y = pieces[b]!;
      if (x === y) continue;
      if (x.length === y.length) return x < y ? -1 : 1;
      // Pieces of different lengths: the rest of the two keys, joined, decide.
      const rx = pieces.slice(a, aEnd).join('');
      const ry = pieces.slice(b, bEnd).join('');
      return rx < ry ? -1 : rx > ry ? 1 : 0;
    }
    // One key's pieces a prefix of the other's: it sorts first unless the rest is empty.
    let rest = 0;
    for (; a < aEnd; a++) rest += pieces[a]!.length;
    for (; b < bEnd; b++) rest -= pieces[b]!.length;
    return rest;
  }
}

/** Reused from one call to the next. */
const store = new TreeStore();
const keyPieces = new KeyPieces();
const rankOrder: number[] = [];

/**
 * The trees the candidates fall into, in root uuid order. A tree with one candidate (most) is only numbers: per
 * class the free capacity its weigher reads before any claim and what a claim takes from it, and how many claims
 * fit; a tree with several is a Tree.
 */
interface Forest {
  roots: Provider[];
  /** Per tree: its index in the store where it has several candidates, else −1. */
  multi: Int32Array;
  /** Per one-candidate tree and class ([t × classes + c]): free capacity, and what one claim takes from it. */
  values: Float64Array;
  drops: Float64Array;
  /** Per one-candidate tree: the whole number of repeats every cell still holds. */
  fit: Float64Array;
}

function forestOf(model: PlacementModel, candidates: readonly Candidate[], q: ParsedQuery, classes: readonly string[], sign: number): Forest {
  const C = classes.length;
  // Per anchor slot, its first candidate; per candidate, the next of its anchor (−1 after the last), in the search's
  // order: no list per tree.
  const first = new Int32Array(model.slotCount).fill(-1);
  const last = new Int32Array(model.slotCount);
  const next = new Int32Array(candidates.length).fill(-1);
  for (let i = 0; i < candidates.length; i++) {
    const s = candidates[i]!.anchor.slot;
    if (first[s] === -1) first[s] = i;
    else next[last[s]!] = i;
    last[s] = i;
  }
  // Root uuid order from the model's uuid ranks: no string comparisons.
  const ranks = model.uuidRanks();
  const byRank = new Int32Array(model.providers.size).fill(-1);
  let T = 0;
  for (let s = 0; s < first.length; s++) {
    if (first[s] === -1) continue;
    byRank[ranks[s]!] = first[s]!;
    T++;
  }
  const forest: Forest = { roots: [], multi: new Int32Array(T), values: new Float64Array(T * C), drops: new Float64Array(T * C), fit: new Float64Array(T) };
  const { multi, values, drops, fit } = forest;
  // (A class no provider has gives no candidates: no column read.)
  const columns = classes.map((rc) => model.column(rc));
  store.begin(classes, columns.map((column) => column?.values), sign);
  // (The column's kept capacity − usage by slot: one number read.)
  const frees = columns.map((column) => column?.free);
  // Every cell of a candidate is a distinct (provider, class): the allocations sum the groups' amounts.
  let t = 0;
  const cell = (slot: number, rc: string, amount: number) => {
    const c = classes.indexOf(rc);
    const free = frees[c]![slot]!;
    values[t * C + c]! += free;
    drops[t * C + c]! += amount;
    fit[t] = Math.min(fit[t]!, Math.floor(free / amount));
  };
  const visit = (p: Provider, rc: string, amount: number) => cell(p.slot, rc, amount);
  for (let r = 0; r < byRank.length; r++) {
    const i = byRank[r]!;
    if (i === -1) continue;
    const c = candidates[i]!;
    t = forest.roots.length;
    forest.roots.push(c.anchor);
    if (next[i] !== -1) {
      multi[t] = store.add(candidates, i, next);
      continue;
    }
    multi[t] = -1;
    fit[t] = Infinity;
    // One group served by one provider: its amounts are the group's (no maps built).
    if (c.single) for (const [rc, amount] of q.groups[0]!.resources) cell(c.single.slot, rc, amount);
    else eachSummed(c, visit);
  }
  return forest;
}

/**
 * The truncated case when a tree's weight never depends on another tree's (one class, or a zero multiplier), from
 * each tree's count and the weights its claims are made at: trees whose weights only fall (drained from the top)
 * take the first `max` of all weights merged, highest first, ties by root uuid: everything above the level the
 * max-th is at, and at that level the trees in root uuid order. Trees whose weights never fall are filled one after
 * the other. Null when the trees' weights move both ways (then the queue replays the ranking).
 */
function drainedClaims(forest: Forest, C: number, counts: Int32Array, sign: number, max: number): Int32Array | null {
  const { multi, values, drops } = forest;
  const T = multi.length;
  // Per tree: its first weight and, with one candidate, the drop per claim (weights sign × (first − k × drop)).
  const first = new Float64Array(T);
  const drop = new Float64Array(T);
  let falling = true;
  let rising = true;
  let lowest = Infinity;
  let highest = -Infinity;
  for (let t = 0; t < T; t++) {
    const m = multi[t]!;
    const n = counts[t]!;
    if (n === 0) continue;
    if (m === -1) {
      first[t] = values[t * C]!;
      drop[t] = drops[t * C]!;
      if (!Number.isInteger(first[t]) || !Number.isInteger(drop[t])) return null;
      if (sign !== 0 && drop[t] !== 0) {
        if (sign > 0) rising = false;
        else falling = false;
      }
      lowest = Math.min(lowest, sign * (first[t]! - (n - 1) * drop[t]!), sign * first[t]!);
      highest = Math.max(highest, sign * (first[t]! - (n - 1) * drop[t]!), sign * first[t]!);
    } else {
      first[t] = store.trail(m, 0);
      for (let k = 0; k < n; k++) {
        const w = sign * store.trail(m, k);
        if (!Number.isInteger(w)) return null;
        if (k > 0 && w > sign * store.trail(m, k - 1)) falling = false;
        if (k > 0 && w < sign * store.trail(m, k - 1)) rising = false;
        lowest = Math.min(lowest, w);
        highest = Math.max(highest, w);
      }
    }
  }
  const claims = new Int32Array(T);
  if (rising) {
    // Each claim only raises the tree's rank: the tree ranked first is filled before the next is chosen.
    const order = [...counts.keys()].filter((t) => counts[t]! > 0)
      .sort((a, b) => sign * (first[b]! - first[a]!) || a - b);
    let left = max;
    for (const t of order) {
      claims[t] = Math.min(counts[t]!, left);
      left -= claims[t]!;
      if (left === 0) break;
    }
  } else if (falling) {
    // How many of tree t's claims are made at a weight of at least `level`.
    const atLeast = (t: number, level: number): number => {
      const n = counts[t]!;
      if (n === 0) return 0;
      const m = multi[t]!;
      if (m === -1) {
        const top = sign * first[t]!;
        const step = sign * drop[t]!;
        if (top < level) return 0;
        return step === 0 ? n : Math.min(n, Math.floor((top - level) / step) + 1);
      }
      // The weights only fall: binary search for the first one below the level.
      let lo = 0;
      let hi = n;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (sign * store.trail(m, mid) >= level) lo = mid + 1;
        else hi = mid;
      }
      return lo;
    };
    const total = (level: number): number => {
      let sum = 0;
      for (let t = 0; t < T; t++) sum += atLeast(t, level);
      return sum;
    };
    // The highest level at which at least max claims are made (integer weights; the lowest one holds them all).
    let lo = lowest;
    let hi = highest;
    while (lo < hi) {
      const mid = Math.floor((lo + hi + 1) / 2);
      if (total(mid) >= max) lo = mid;
      else hi = mid - 1;
    }
    let left = max;
    for (let t = 0; t < T; t++) {
      claims[t] = atLeast(t, lo + 1);
      left -= claims[t]!;
    }
    for (let t = 0; t < T && left > 0; t++) {
      const tied = Math.min(atLeast(t, lo) - claims[t]!, left);
      claims[t] = claims[t]! + tied;
      left -= tied;
    }
  } else {
    return null;
  }
  return claims;
}

/**
 * The bounds of a multiset of free capacities, as Extremes (pipeline.ts) keeps them, each value added or taken away
 * `k` times at once: the lowest and highest, and how many are at each (none left: stale, found again from scratch).
 */
class Spread {
  lo = Infinity;
  hi = -Infinity;
  #atLo = 0;
  #atHi = 0;

  add(v: number, k = 1): void {
    if (k === 0) return;
    if (v < this.lo) {
      this.lo = v;
      this.#atLo = k;
    } else if (v === this.lo) {
      this.#atLo += k;
    }
    if (v === Infinity) return;
    if (v > this.hi) {
      this.hi = v;
      this.#atHi = k;
    } else if (v === this.hi) {
      this.#atHi += k;
    }
  }

  remove(v: number, k = 1): void {
    if (v === this.lo) this.#atLo -= k;
    if (v === this.hi) this.#atHi -= k;
  }

  get stale(): boolean {
    return this.#atLo === 0 || (this.#atHi === 0 && this.lo !== Infinity);
  }

  clear(): void {
    this.lo = Infinity;
    this.hi = -Infinity;
    this.#atLo = 0;
    this.#atHi = 0;
  }
}

/**
 * The truncated case: which trees (in root uuid order) the first `max` claims land in. Each tree offers its best candidate; the search
 * would pick the one with the highest weight (Σ multiplier × min–max normalised free capacity per class, bounds over
 * every fitting candidate), ties by root uuid then candidate key. One class (or a zero multiplier) orders by free
 * capacity alone; several classes are scored exactly as the engine scores them, re-scoring every tree only when a
 * claim moved some class's bounds.
 *
 * One-candidate trees with the same figures (free capacities, drops, count) are one entry of the queue: they are
 * weighed alike at the same number of claims, so the next claim among them lands in the first (root uuid order) of
 * those with the fewest claims, as long as a claim lowers their weight; a group where it does not splits in two
 * (those claimed once more, the others). Most claims then leave the top entry on top (no sifting through a queue of
 * every tree).
 */
function rankedClaims(forest: Forest, counts: Int32Array, classes: readonly string[], multiplier: number, max: number): Int32Array | null {
  const { multi, drops } = forest;
  const T = multi.length;
  for (let m = 0; m < store.size; m++) store.reset(m);
  const C = classes.length;
  const scored = C > 1 && multiplier !== 0;
  const sign = Math.sign(multiplier);
  const extremes = scored ? classes.map(() => new Spread()) : [];

  // Entries (never more than trees): a tree with several candidates (tree[e] = its index), or a group (−1) of
  // one-candidate trees, members[from[e] … to[e] − 1] in root uuid order, `level` claims each and one more for the
  // first `pos`, at most `cnt` each.
  const tree = new Int32Array(T);
  /** The tree the entry's next claim lands in: the tie-break between entries of equal weight. */
  const at = new Int32Array(T);
  const weight = new Float64Array(T);
  /** Per entry and class: the free capacity its next claim's weigher reads; a group's one claim further on. */
  const values = new Float64Array(T * C);
  const further = new Float64Array(T * C);
  /** A tree entry's best candidate (in the store); a group's first member (its drops). */
  const best = new Int32Array(T);
  const from = new Int32Array(T);
  const to = new Int32Array(T);
  const pos = new Int32Array(T);
  const level = new Int32Array(T);
  const cnt = new Int32Array(T);
  const members = new Int32Array(T);
  let E = 0;

  // Groups by figures: hashed, equal ones compared exactly.
  const groupOf = new Int32Array(T).fill(-1);
  const buckets = new Map<number, number>();
  const chain = new Int32Array(T);
  const bits = new Float64Array(1);
  const words = new Int32Array(bits.buffer);
  const mix = (h: number, x: number) => {
    bits[0] = x;
    return Math.imul(Math.imul(h ^ words[0]!, 0x9e3779b1) ^ words[1]!, 0x85ebca6b);
  };
  const same = (t: number, u: number) => {
    if (counts[t] !== counts[u]) return false;
    for (let c = 0; c < C; c++) {
      if (forest.values[t * C + c] !== forest.values[u * C + c] || drops[t * C + c] !== drops[u * C + c]) return false;
    }
    return true;
  };
  for (let t = 0; t < T; t++) {
    if (multi[t] !== -1 || counts[t] === 0) continue;
    let h = counts[t]!;
    for (let c = 0; c < C; c++) h = mix(mix(h, forest.values[t * C + c]!), drops[t * C + c]!);
    const head = buckets.get(h) ?? -1;
    let g = head;
    while (g !== -1 && !same(best[g]!, t)) g = chain[g]!;
    if (g === -1) {
      g = E++;
      tree[g] = -1;
      best[g] = t;
      cnt[g] = counts[t]!;
      chain[g] = head;
      buckets.set(h, g);
      for (let c = 0; c < C; c++) values[g * C + c] = forest.values[t * C + c]!;
    }
    groupOf[t] = g;
    to[g]!++;
  }
  let filled = 0;
  for (let g = 0; g < E; g++) {
    from[g] = filled;
    filled += to[g]!;
    to[g] = from[g]!;
  }
  for (let t = 0; t < T; t++) if (groupOf[t] !== -1) members[to[groupOf[t]!]!++] = t;

  // Every fitting candidate of store tree m.
  const add = (m: number, only?: Spread) => {
    for (let i = store.first(m); i < store.end(m); i++) {
      if (!store.fits(i)) continue;
      for (let c = 0; c < C; c++) if (only === undefined || only === extremes[c]) extremes[c]!.add(store.free(i, c));
    }
  };
  const remove = (m: number) => {
    for (let i = store.first(m); i < store.end(m); i++) if (store.fits(i)) for (let c = 0; c < C; c++) extremes[c]!.remove(store.free(i, c));
  };
  /** A group's members into one class's bounds (or every class's): each one's free capacity. */
  const addGroup = (g: number, only?: Spread) => {
    const ahead = pos[g]!;
    const behind = to[g]! - from[g]! - ahead;
    const stays = level[g]! + 1 < cnt[g]!;
    for (let c = 0; c < C; c++) {
      const e = extremes[c]!;
      if (only !== undefined && only !== e) continue;
      e.add(values[g * C + c]!, behind);
      if (stays) e.add(further[g * C + c]!, ahead);
    }
  };
  const lo = new Float64Array(C);
  const range = new Float64Array(C);
  const bounds = (): boolean => {
    let moved = false;
    for (let c = 0; c < extremes.length; c++) {
      const e = extremes[c]!;
      const r = e.lo === e.hi ? 0 : e.hi - e.lo;
      if (e.lo !== lo[c] || r !== range[c]) moved = true;
      lo[c] = e.lo;
      range[c] = r;
    }
    return moved;
  };
  const weightOf = (free: Float64Array, e: number): number => {
    if (!scored) return C === 1 ? sign * free[e]! : 0;
    let total = 0;
    for (let c = 0; c < C; c++) total += multiplier * normalized(free[e * C + c]!, lo[c]!, range[c]!);
    return total;
  };
  const weigh = (e: number): void => {
    weight[e] = weightOf(values, e);
  };
  const look = (e: number): void => {
    for (let c = 0; c < C; c++) values[e * C + c] = store.free(best[e]!, c);
  };

  // A binary heap of entries, best first: the higher weight, then the lower tree (the trees are in root uuid
  // order, the engine's tie-break; two entries never share one). The order is total, so the top is the same
  // whatever the layout.
  const heap = new Int32Array(T);
  let size = 0;
  const before = (a: number, b: number) => weight[a]! > weight[b]! || (weight[a] === weight[b] && at[a]! < at[b]!);
  /** Sifts heap[k] down: along the better children to a leaf, then back up to its place (a claimed tree mostly sinks far). */
  const down = (k: number) => {
    const e = heap[k]!;
    const start = k;
    for (;;) {
      let child = 2 * k + 1;
      if (child >= size) break;
      let c = heap[child]!;
      if (child + 1 < size && before(heap[child + 1]!, c)) c = heap[++child]!;
      heap[k] = c;
      k = child;
    }
    up(k, e, start);
  };
  /** Entry e into heap position k, moved up as far as `top` while it ranks before its parent. */
  const up = (k: number, e: number, top: number) => {
    while (k > top) {
      const parent = (k - 1) >> 1;
      const u = heap[parent]!;
      if (!before(e, u)) break;
      heap[k] = u;
      k = parent;
    }
    heap[k] = e;
  };
  const heapify = () => {
    for (let k = (size >> 1) - 1; k >= 0; k--) down(k);
  };
  /** Group g's first pos members (claimed once more) apart from the others: a new entry, at the heap's end (unsifted). */
  const split = (g: number): number => {
    const a = E++;
    tree[a] = -1;
    best[a] = best[g]!;
    cnt[a] = cnt[g]!;
    from[a] = from[g]!;
    to[a] = from[a]! + pos[g]!;
    level[a] = level[g]! + 1;
    pos[a] = 0;
    at[a] = members[from[a]!]!;
    for (let c = 0; c < C; c++) values[a * C + c] = further[g * C + c]!;
    weigh(a);
    from[g] = to[a]!;
    pos[g] = 0;
    heap[size++] = a;
    return a;
  };
  /** Whether group g's members claimed once more still rank after its others (else it must split). */
  const sinks = (g: number) => pos[g] === 0 || level[g]! + 1 >= cnt[g]! || weightOf(further, g) < weight[g]!;

  for (let g = 0; g < E; g++) {
    at[g] = members[from[g]!]!;
    if (scored) addGroup(g);
    heap[size++] = g;
  }
  for (let t = 0; t < T; t++) {
    const m = multi[t]!;
    if (m === -1) continue;
    const b = store.best(m);
    if (b === UNDECIDED) return null;
    if (b === FULL) continue;
    const e = E++;
    tree[e] = t;
    at[e] = t;
    best[e] = b;
    look(e);
    if (scored) add(m);
    heap[size++] = e;
  }
  bounds();
  for (let k = 0; k < size; k++) weigh(heap[k]!);
  heapify();

  const claims = new Int32Array(T);
  let n = 0;
  while (n < max && size > 0) {
    const e = heap[0]!;
    const t = tree[e]!;
    if (t === -1 && pos[e]! > 0) {
      // Claims within a level that leave one of its members unclaimed move no bound (every value present stays
      // so) nor any weight: the group keeps the top for as long as it ranks before the better child, at once.
      const first = from[e]! + pos[e]!;
      let k = Math.min(to[e]! - first - 1, max - n);
      if (k > 0 && size > 1) {
        const child = size > 2 && before(heap[2]!, heap[1]!) ? heap[2]! : heap[1]!;
        if (weight[e] === weight[child]) {
          // Equal weights: the members before the child's tree (in root uuid order).
          let lo = first;
          let hi = first + k;
          while (lo < hi) {
            const mid = (lo + hi) >> 1;
            if (members[mid]! < at[child]!) lo = mid + 1;
            else hi = mid;
          }
          k = lo - first;
        } else if (!(weight[e]! > weight[child]!)) {
          k = 0;
        }
      }
      if (k > 0) {
        const stays = level[e]! + 1 < cnt[e]!;
        for (let c = 0; c < extremes.length; c++) {
          extremes[c]!.remove(values[e * C + c]!, k);
          if (stays) extremes[c]!.add(further[e * C + c]!, k);
        }
        pos[e]! += k;
        n += k;
        at[e] = members[from[e]! + pos[e]!]!;
        if ((size > 1 && before(heap[1]!, e)) || (size > 2 && before(heap[2]!, e))) down(0);
        continue;
      }
    }
    n++;
    let full: boolean;
    if (t !== -1) {
      const m = multi[t]!;
      claims[t]!++;
      if (scored) remove(m);
      store.claim(m, best[e]!);
      const b = store.best(m);
      if (b === UNDECIDED) return null;
      full = b === FULL;
      if (!full) {
        best[e] = b;
        look(e);
        if (scored) add(m);
      }
    } else {
      // The group's next member (its tree at[e]) claims once more.
      if (scored) for (let c = 0; c < C; c++) extremes[c]!.remove(values[e * C + c]!);
      if (pos[e]!++ === 0) for (let c = 0; c < C; c++) further[e * C + c] = values[e * C + c]! - drops[best[e]! * C + c]!;
      const stays = level[e]! + 1 < cnt[e]!;
      if (scored && stays) for (let c = 0; c < C; c++) extremes[c]!.add(further[e * C + c]!);
      full = false;
      if (from[e]! + pos[e]! === to[e]!) {
        // Every member claimed once more.
        level[e]!++;
        pos[e] = 0;
        full = !stays;
        for (let c = 0; c < C; c++) values[e * C + c] = further[e * C + c]!;
      }
      at[e] = members[from[e]! + pos[e]!]!;
    }
    if (full) {
      // Out of the heap: the last entry takes its place.
      const last = heap[--size]!;
      if (last !== e) {
        heap[0] = last;
        down(0);
      }
    }
    for (let c = 0; c < extremes.length; c++) {
      const x = extremes[c]!;
      if (!x.stale) continue;
      // The last value at a bound went: the bound is found again over every tree still offering a candidate.
      x.clear();
      for (let k = 0; k < size; k++) {
        const u = heap[k]!;
        if (tree[u] === -1) addGroup(u, x);
        else add(multi[tree[u]!]!, x);
      }
    }
    if (scored && bounds()) {
      // Every weight moved with the bounds (and a group's order within may have).
      const entries = size;
      for (let k = 0; k < entries; k++) weigh(heap[k]!);
      for (let k = 0; k < entries; k++) if (tree[heap[k]!] === -1 && !sinks(heap[k]!)) split(heap[k]!);
      heapify();
    } else if (!full) {
      // The claimed entry is the top: under fixed bounds it can only sink (most often it stays: the next member of
      // its group). A group whose members claimed once more would not sink splits, those members a new entry.
      if (t !== -1 || pos[e] === 0) weigh(e);
      if ((size > 1 && before(heap[1]!, e)) || (size > 2 && before(heap[2]!, e))) down(0);
      if (t === -1 && !sinks(e)) {
        const a = split(e);
        up(size - 1, a, 0);
      }
    }
  }
  for (let g = 0; g < E; g++) {
    if (tree[g] !== -1) continue;
    for (let k = from[g]!; k < to[g]!; k++) claims[members[k]!] = level[g]! + (k - from[g]! < pos[g]! ? 1 : 0);
  }
  return claims;
}

/** The answer from each tree's claims, the trees in root uuid order. */
function listed(roots: readonly Provider[], claims: ArrayLike<number>, fits: number, max: number): HeadroomAnswer {
  const out: HeadroomAnswer['roots'] = [];
  for (let t = 0; t < roots.length; t++) if (claims[t]! > 0) out.push({ root_provider_uuid: roots[t]!.uuid, fits: claims[t]! });
  return { fits, truncated: fits === max, roots: out };
}

/**
 * The per-tree computation, or null where only the sequential path can answer: a sharing provider (consumed from
 * every tree it serves), a random order (cannot be replayed), or a tree whose next choice depends on how the
 * classes are weighed against each other.
 */
export function treeHeadroom(model: PlacementModel, q: ParsedQuery, search: Search, max: number): HeadroomAnswer | null {
  if (search.randomize || model.sharingProviders().size > 0) return null;
  // Every candidate, unranked: the trees are read in root uuid order and ranked here.
  const { candidates } = findCandidates(model, { ...q, limit: null }, { ...search, unranked: true });
  const classes = [...new Set(q.groups.flatMap((g) => [...g.resources.keys()]))];
  const multiplier = search.freeCapacityMultiplier ?? 1;
  const sign = classes.length === 0 ? 0 : Math.sign(multiplier);
  const forest = forestOf(model, candidates, q, classes, sign);
  const T = forest.roots.length;
  const counts = new Int32Array(T);
  let total = 0;
  for (let t = 0; t < T; t++) {
    if (forest.multi[t] !== -1) continue;
    counts[t] = Math.max(0, Math.min(max, forest.fit[t]!));
    total += counts[t]!;
  }
  // The queue (several classes weighed) reads only one-candidate trees' counts and decides every other tree's
  // claims as it goes: trees with several candidates are simulated alone only until max is known to be reached.
  const replayed = classes.length > 1 && multiplier !== 0;
  for (let t = 0; t < T; t++) {
    const m = forest.multi[t]!;
    if (m === -1 || (replayed && total >= max)) continue;
    const n = store.count(m, max);
    if (n === UNDECIDED) return null;
    counts[t] = n;
    total += n;
  }
  // Below max every tree is filled, in whatever order: the split is each tree's own count.
  if (total < max) return listed(forest.roots, counts, total, max);
  const claims = (classes.length === 1 || multiplier === 0 ? drainedClaims(forest, classes.length, counts, Math.sign(multiplier), max) : null)
    ?? rankedClaims(forest, counts, classes, multiplier, max);
  return claims === null ? null : listed(forest.roots, claims, max, max);
}

/** GET /headroom: the sequential definition's answer, per tree where that is exact. */
export function headroom(model: PlacementModel, q: ParsedQuery, search: Search, max: number): HeadroomAnswer {
  return treeHeadroom(model, q, search, max) ?? sequentialHeadroom(model, q, search, max);
}
