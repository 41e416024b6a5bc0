// The writer of a simulation: every commit succeeds at once, is applied to the copy's view as an acknowledged
// commit is applied to the live one, and is forgotten. So a copy of the volumes state schedules, claims and
// releases through the same code as the live service while nothing reaches the store.
import type { FollowedView, WriteDecision } from '../store/follow.ts';
import type { StagedCommit, StoreWrite } from '../store/store.ts';

export class ScratchFollower {
  readonly #view: FollowedView;
  readonly #generations = new Map<string, number>();
  /** The copy's own record versions: never compared with the store's (a copy has no other writer). */
  #seq = 0;

  constructor(view: FollowedView) {
    this.#view = view;
  }

  generation(kind: string, key: string): number {
    return this.#generations.get(`${kind}\u0000${key}`) ?? 0;
  }

  /** Nothing to conflict with: expectations are not checked. */
  async commit(writes: readonly StoreWrite[]): Promise<number[]> {
    return writes.map((w) => {
      const generation = w.value === null ? 0 : ++this.#seq;
      this.#generations.set(`${w.kind}\u0000${w.key}`, generation);
      this.#view.apply(w.kind, w.key, w.value ?? null, generation);
      return generation;
    });
  }

  /** As commit, durable at once (nothing reaches a store). */
  async stage(writes: readonly StoreWrite[]): Promise<StagedCommit> {
    return { generations: await this.commit(writes), durable: Promise.resolve() };
  }

  /** Decides and commits once: a copy has no other writer to conflict with. */
  async write<T>(decide: () => WriteDecision<T>): Promise<T> {
    const d = decide();
    return d.result(await this.commit(d.writes));
  }

  /** A copy serves one request, one step after another. */
  async exclusive<T>(work: () => Promise<T> | T): Promise<T> {
    return work();
  }

  async catchUp(): Promise<void> {}
}
