// The store as the dialects see it, measured: every commit's duration and every failed operation by reason. A thin
// wrapper that delegates everything else.
import {
  StoreConflictError, StoreUnavailableError, type AsyncStore, type ChangeListener, type StoredRecord,
  type StoreExpectation, type StoreSnapshot, type StoreStatus, type StoreWrite, type Subscription,
} from '../store/store.ts';
import type { Metrics, StoreErrorReason } from './metrics.ts';

function storeErrorReason(err: unknown): StoreErrorReason {
  if (err instanceof StoreConflictError) return 'conflict';
  if (err instanceof StoreUnavailableError) return 'unavailable';
  return 'failed';
}

class InstrumentedAsyncStore implements AsyncStore {
  readonly #store: AsyncStore;
  readonly #metrics: Metrics;
  constructor(store: AsyncStore, metrics: Metrics) {
    this.#store = store;
    this.#metrics = metrics;
  }

  get location(): string {
    return this.#store.location;
  }

  get instanceId(): string {
    return this.#store.instanceId;
  }

  get shared(): boolean {
    return this.#store.shared;
  }

  async #counted<T>(work: Promise<T>): Promise<T> {
    try {
      return await work;
    } catch (err) {
      this.#metrics.storeErrors.inc({ reason: storeErrorReason(err) });
      throw err;
    }
  }

  load<V = unknown>(kind: string): Promise<Array<StoredRecord<V>>> {
    return this.#counted(this.#store.load<V>(kind));
  }

  get<V = unknown>(kind: string, key: string): Promise<StoredRecord<V> | undefined> {
    return this.#counted(this.#store.get<V>(kind, key));
  }

  snapshot(kinds: readonly string[]): Promise<StoreSnapshot> {
    return this.#counted(this.#store.snapshot(kinds));
  }

  /** One settlement on the store's promise, not two nested async frames: every claim waits on this. */
  commit(writes: readonly StoreWrite[], expect?: readonly StoreExpectation[], staged?: (generations: number[]) => void): Promise<number[]> {
    const stop = this.#metrics.storeCommitDuration.startTimer();
    let committed: Promise<number[]>;
    try {
      committed = this.#store.commit(writes, expect, staged);
    } catch (err) {
      committed = Promise.reject(err as Error);
    }
    return committed.then((generations) => {
      stop();
      return generations;
    }, (err: unknown) => {
      stop();
      this.#metrics.storeErrors.inc({ reason: storeErrorReason(err) });
      throw err;
    });
  }

  sequence(): Promise<number> {
    return this.#counted(this.#store.sequence());
  }

  subscribe(fromSeq: number, listener: ChangeListener): Subscription {
    return this.#store.subscribe(fromSeq, listener);
  }

  catchUp(): Promise<void> {
    return this.#store.catchUp();
  }

  status(): StoreStatus {
    return this.#store.status();
  }

  close(): Promise<void> {
    return this.#store.close();
  }
}

/** The AsyncStore with its commits timed and its failures counted (berth_store_*). */
export function instrumentStore(store: AsyncStore, metrics: Metrics): AsyncStore {
  return new InstrumentedAsyncStore(store, metrics);
}
