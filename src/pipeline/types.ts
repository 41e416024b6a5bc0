// The vocabulary of the filter → weigher pipeline shared by every dialect.

/** Why a filter turned a candidate away: a stable code (for metrics and clients) and a sentence with the numbers. */
export interface Rejection {
  /** Stable reason constant, e.g. "insufficient_virtual_free". */
  readonly code: string;
  /** Human sentence, e.g. "requested 120 GiB, virtual free 80.5 GiB". */
  readonly message: string;
}

/** A filter returns null when the candidate passes, or the rejection. */
export interface Filter<C, R> {
  readonly name: string;
  check(candidate: C, request: R): Rejection | null;
}

/**
 * A weigher gives each candidate a raw weight; the engine normalises per weigher.
 * `weighAll`, when present, replaces per-candidate weighing (Cinder's CapacityWeigher rewrites infinite
 * weights relative to the others, which needs the whole list).
 */
export interface Weigher<C, R> {
  readonly name: string;
  readonly multiplier: number;
  weigh(candidate: C, request: R): number;
  weighAll?(candidates: readonly C[], request: R): number[];
}

export interface FilterTrace<C> {
  name: string;
  in: number;
  out: number;
  rejected: Array<{ candidate: C; rejection: Rejection }>;
}

export interface WeigherScore {
  raw: number;
  normalized: number;
}

export interface Weighed<C> {
  candidate: C;
  /** Σ multiplier × normalised weight. */
  weight: number;
  /** Per weigher name. */
  weighers: Record<string, WeigherScore>;
}

export interface Decision<C> {
  /** The best candidate, or null when every candidate was filtered out. */
  chosen: Weighed<C> | null;
  /** Candidates that passed every filter, best first (stable for ties). */
  ranked: Array<Weighed<C>>;
  /** Every rejected candidate with the filter that rejected it. */
  rejected: Array<{ candidate: C; filter: string; rejection: Rejection }>;
  trace: { filters: Array<FilterTrace<C>> };
}
