// Object-form filters: a filter that judges a candidate object with a request and answers a Rejection. The placement
// and replicas dialects still declare theirs this way; runFilters (engine.ts) runs them through the Pipeline, so
// there is one filter loop. New filters declare the indexed form of pipeline.ts (prepare once, check by index).

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

export interface FilterTrace<C> {
  name: string;
  in: number;
  out: number;
  rejected: Array<{ candidate: C; rejection: Rejection }>;
}
