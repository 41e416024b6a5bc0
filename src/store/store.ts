// The store interface the domains write through to. State is held in memory by each domain; the store makes it
// durable and arbitrates claims. Records are JSON documents addressed by (kind, key), each with a generation
// that increases with every write, so a claim can say which generations its decision read.

export interface StoredRecord<V = unknown> {
  key: string;
  value: V;
  generation: number;
}

/** One write of a commit: `value: null` deletes the record. */
export interface StoreWrite {
  kind: string;
  key: string;
  value: unknown;
}

/** A generation the decision read; 0 means "the record must not exist". */
export interface StoreExpectation {
  kind: string;
  key: string;
  generation: number;
}

export class StoreConflictError extends Error {
  readonly kind: string;
  readonly key: string;
  readonly expected: number;
  readonly actual: number;
  constructor(e: StoreExpectation, actual: number) {
    super(`store conflict on ${e.kind}/${e.key}: expected generation ${e.generation}, found ${actual}`);
    this.name = 'StoreConflictError';
    this.kind = e.kind;
    this.key = e.key;
    this.expected = e.generation;
    this.actual = actual;
  }
}

export interface Store {
  /** Where the data lives (a file path or ":memory:"). */
  readonly location: string;
  /** Every record of a kind, in key order. */
  load<V = unknown>(kind: string): Array<StoredRecord<V>>;
  /** One record, or undefined. */
  get<V = unknown>(kind: string, key: string): StoredRecord<V> | undefined;
  /**
   * Applies the writes atomically and durably, after checking every expectation; on a mismatch nothing is
   * written and StoreConflictError is thrown. Returns the new generation of each written record, in order
   * (0 for deletions).
   */
  commit(writes: readonly StoreWrite[], expect?: readonly StoreExpectation[]): number[];
  /** Flushes and releases the store; further calls throw. */
  close(): void;
}
