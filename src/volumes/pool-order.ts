// The pools of a table sorted by a per-pool key (ascending, ties by row), kept sorted as claims change single rows:
// what lets a decision walk the pools best-first, or only the few whose bound a request exceeds, instead of all.

export class PoolOrder {
  /** Rows by (key, row). */
  readonly order: Int32Array;
  /** Per row: its key (a NaN key is kept as +∞ and counted in `nonFinite`). */
  readonly key: Float64Array;
  /** Rows whose key is not a finite number (±∞ or NaN as computed). */
  nonFinite = 0;
  readonly #position: Int32Array;
  readonly #keyOf: (i: number) => number;

  constructor(length: number, keyOf: (i: number) => number) {
    this.#keyOf = keyOf;
    this.key = new Float64Array(length);
    this.order = new Int32Array(length);
    this.#position = new Int32Array(length);
    for (let i = 0; i < length; i++) {
      this.key[i] = this.#keyed(keyOf(i));
      this.order[i] = i;
    }
    const key = this.key;
    this.order.sort((a, b) => (key[a]! < key[b]! ? -1 : key[a]! > key[b]! ? 1 : a - b));
    for (let p = 0; p < length; p++) this.#position[this.order[p]!] = p;
  }

  #keyed(raw: number): number {
    if (!Number.isFinite(raw)) this.nonFinite++;
    return Number.isNaN(raw) ? Infinity : raw;
  }

  /** How many rows have a key below `value`: the position of the first one that does not (binary search). */
  countBelow(value: number): number {
    const { order, key } = this;
    let lo = 0;
    let hi = order.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (key[order[mid]!]! < value) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** Row i's key changed (a claim or release): it moves to its new place, the rows it passes shift by one. */
  update(i: number): void {
    const { key, order } = this;
    const position = this.#position;
    if (!Number.isFinite(key[i]!)) this.nonFinite--;
    const k = this.#keyed(this.#keyOf(i));
    key[i] = k;
    let p = position[i]!;
    while (p > 0) {
      const j = order[p - 1]!;
      if (!(k < key[j]! || (k === key[j]! && i < j))) break;
      order[p] = j;
      position[j] = p--;
    }
    while (p < order.length - 1) {
      const j = order[p + 1]!;
      if (!(k > key[j]! || (k === key[j]! && i > j))) break;
      order[p] = j;
      position[j] = p++;
    }
    order[p] = i;
    position[i] = p;
  }
}
