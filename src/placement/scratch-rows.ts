// The arrays a search fills and then drops (its choices' slots, verdict rows, per-slot hit counts, the tie order
// its ranking reads), reused from one search to the next instead of allocated for each. At 100,000 providers a
// Nova-like search took about a megabyte of them off the V8 heap, and V8 answers that much external allocation per
// request with more collections, major ones included, on a heap that holds the whole model. In process, 400 such
// searches alternating with and without reuse (2026-12-05): 18-19 collections against 27-28, 27-36 ms of them
// against 42-56, p99 7.6-10.6 ms against 8.7-14.6.

/** One kind of typed array, handed out in order and taken back all at once. */
class Pool<T extends Uint8Array | Int32Array | Float64Array> {
  readonly #arrays: T[] = [];
  #next = 0;
  constructor(readonly make: (n: number) => T) {}
  begin(): void {
    this.#next = 0;
  }
  take(n: number): T {
    let array = this.#arrays[this.#next];
    if (array === undefined || array.length < n) array = this.#arrays[this.#next] = this.make(n);
    this.#next++;
    const view = array.subarray(0, n) as T;
    view.fill(0);
    return view;
  }
}

/** Zeroed arrays for one search at a time: each stays valid until the next search begins. */
export class ScratchRows {
  readonly #bytes = new Pool((n) => new Uint8Array(n));
  readonly #int32s = new Pool((n) => new Int32Array(n));
  readonly #float64s = new Pool((n) => new Float64Array(n));

  /** A new search: every array handed out before may be handed out again. */
  begin(): void {
    this.#bytes.begin();
    this.#int32s.begin();
    this.#float64s.begin();
  }

  /** `n` zero bytes of their own for this search (no other array of the search shares them). */
  bytes(n: number): Uint8Array {
    return this.#bytes.take(n);
  }

  /** `n` zero 32-bit integers of their own for this search. */
  int32s(n: number): Int32Array {
    return this.#int32s.take(n);
  }

  /** `n` zero doubles of their own for this search. */
  float64s(n: number): Float64Array {
    return this.#float64s.take(n);
  }
}
