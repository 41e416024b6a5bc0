// The store of a simulation: commits succeed and are forgotten, so a copy of the volumes state can schedule, claim
// and release exactly as the live service does while nothing reaches the real store.
import type { Store, StoredRecord, StoreWrite } from '../store/store.ts';

export class ScratchStore implements Store {
  readonly location = 'scratch';
  #generation = 0;

  load<V = unknown>(_kind: string): Array<StoredRecord<V>> {
    return [];
  }

  get<V = unknown>(_kind: string, _key: string): StoredRecord<V> | undefined {
    return undefined;
  }

  /** A copy has no other writer, so there is nothing to conflict with. */
  commit(writes: readonly StoreWrite[]): number[] {
    return writes.map((w) => (w.value === null ? 0 : ++this.#generation));
  }

  close(): void {}
}
