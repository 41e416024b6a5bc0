// The store interface the domains write through to. State is held in memory by each domain; the store makes it
// durable, arbitrates claims and (with several instances) carries every instance's writes to the others.
// Records are JSON documents addressed by (kind, key), each with a generation, so a claim can say which
// generations its decision read.
//
// Generations are store-wide sequence numbers: a write gives its record the sequence number of that write, so a
// record's generation strictly increases with every write and is never reused, not even after a delete and a
// re-create (an expectation cannot be fooled by a record that was deleted and written again). They are not
// consecutive per record. 0 means "no such record".

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

/** A commit was refused because a record it expected changed; nothing was written. */
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

/**
 * The database cannot be reached or did not answer in time. Nothing was acknowledged; for a commit, the outcome
 * is unknown (the change feed delivers it if it was applied). The HTTP layer answers 503 with Retry-After.
 */
export class StoreUnavailableError extends Error {
  readonly retryAfterSeconds: number;
  constructor(message: string, options: { cause?: unknown; retryAfterSeconds?: number } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'StoreUnavailableError';
    this.retryAfterSeconds = options.retryAfterSeconds ?? 1;
  }
}

/** One write as the change feed carries it. */
export interface Change {
  /** The store-wide sequence number of this write; consecutive, gap-free. */
  seq: number;
  kind: string;
  key: string;
  /** The record's new value, or null when it was deleted. */
  value: unknown;
  /** The record's generation after this write (= seq), 0 for a deletion. */
  generation: number;
  /** The instance id of the store that committed it (compare with `store.instanceId` to skip your own). */
  origin: string;
}

/**
 * Receives the change feed. Calls never overlap: the next call waits until the promise returned by the
 * previous one settles. A listener that throws gets the same changes again at the next wake-up.
 */
export interface ChangeListener {
  /** Changes with seq greater than every change delivered before, in seq order, without gaps. */
  changes(batch: readonly Change[]): void | Promise<void>;
  /**
   * The feed cannot deliver every change after the subscriber's position (they were pruned): rebuild from
   * `store.snapshot()` and return the snapshot's seq; delivery resumes after it.
   */
  reload(): Promise<number>;
}

export interface Subscription {
  /** The seq of the last change delivered (or the position given to subscribe / returned by reload). */
  readonly position: number;
  close(): void;
}

/** Writes in place ahead of their transaction's commit (SqliteStore.stage, StoreFollower.stage). */
export interface StagedCommit {
  /** The new generation of each written record, in order (0 for deletions). */
  generations: number[];
  /** Resolves once the writes are durable; rejects (changing nothing) if their transaction failed. */
  durable: Promise<void>;
}

/** A consistent view of several kinds and the feed position it corresponds to. */
export interface StoreSnapshot {
  seq: number;
  records: Map<string, StoredRecord[]>;
}

export interface StoreStatus {
  backend: 'sqlite' | 'postgres';
  /** The database answers (the last operation did not fail for want of a connection). */
  connected: boolean;
  /** The change feed is live: notifications are listened to and the catch-up since the last (re)connect is done. */
  following: boolean;
  /** The newest seq this store has seen (committed here or read from the feed). */
  seq: number;
  /** The seq every subscriber has been given (the oldest subscription's position; = seq without subscribers). */
  position: number;
  /** Why it is not connected or not following, if so (never contains a password). */
  error?: string;
}

/** The store contract both the embedded SQLite store and the PostgreSQL store implement. */
export interface AsyncStore {
  /** Where the data lives: a file path, ":memory:" or a database URL without its password. */
  readonly location: string;
  /** Identifies this store instance as the origin of its commits in the change feed. */
  readonly instanceId: string;
  /**
   * Other instances may write to it (PostgreSQL). False for the embedded store, locked to one process: records that
   * exist only to make competing instances' claims collide need not be written there.
   */
  readonly shared: boolean;
  /** Every record of a kind, in key order (bytewise). */
  load<V = unknown>(kind: string): Promise<Array<StoredRecord<V>>>;
  /** One record, or undefined. */
  get<V = unknown>(kind: string, key: string): Promise<StoredRecord<V> | undefined>;
  /** Every record of the given kinds plus the feed position, read at one instant. */
  snapshot(kinds: readonly string[]): Promise<StoreSnapshot>;
  /**
   * Applies the writes atomically and durably, after checking every expectation inside the same transaction; on
   * a mismatch nothing is written and StoreConflictError is thrown. Returns the new generation of each written
   * record, in order (0 for deletions). Throws StoreUnavailableError when the database cannot be reached in time.
   * A store that gathers the commits of one turn of the event loop into one transaction (the embedded one) calls
   * `staged` once the writes are checked and in place, visible to its next commits, before they are durable (the
   * promise then resolves when the transaction has committed, or rejects if it failed: subscribers are then made to
   * reload). Other stores never call it.
   */
  commit(writes: readonly StoreWrite[], expect?: readonly StoreExpectation[], staged?: (generations: number[]) => void): Promise<number[]>;
  /** The seq of the newest committed change. */
  sequence(): Promise<number>;
  /** Delivers every change with seq > fromSeq, in order, from every instance (see ChangeListener). */
  subscribe(fromSeq: number, listener: ChangeListener): Subscription;
  /** Resolves when every subscriber has been given every change committed before the call (reads the feed now). */
  catchUp(): Promise<void>;
  status(): StoreStatus;
  /** Ends subscriptions, waits for commits in flight and releases the store; further calls reject. */
  close(): Promise<void>;
}
