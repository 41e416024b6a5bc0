// A dialect's in-memory view of its records, kept equal to the store's: loaded from one snapshot, then moved on
// by the change feed (every instance's commits, this one's included) and by this instance's own commits as they
// are acknowledged. Both paths go through one guard, so whichever arrives first wins and the other is a no-op:
// a record is only ever replaced by a newer generation, and a deletion is remembered (by its seq) so that an
// older write delivered afterwards cannot bring the record back.
//
// Writes of one dialect run one at a time (`exclusive`): a decision and the commit of its claim must not
// interleave with another decision of the same instance reading the memory the first is about to change. Other
// instances are arbitrated by the database (the claim's expectations); on a conflict the writer catches up with
// the feed (`catchUp`) and decides again. With a store that stages commits (the embedded one gathers a turn's
// commits into one transaction), a write's turn ends once its commit is staged and applied to memory, so the next
// decision sees it; the answer waits until it is durable. If that transaction fails, the store makes every
// subscriber reload, which puts memory back to what is durable before any other request runs.
import {
  StoreConflictError, type AsyncStore, type Change, type StagedCommit, type StoredRecord, type StoreExpectation,
  type StoreSnapshot, type StoreWrite, type Subscription,
} from './store.ts';

/**
 * Decisions per write while other instances keep changing what it read, then the dialect's 409: as many as
 * Placement retries an allocation that lost to a concurrent update (10).
 */
export const WRITE_ATTEMPTS = 10;

/** What a write decided on memory: the records to commit, the generations it read, and its answer. */
export interface WriteDecision<T> {
  writes: readonly StoreWrite[];
  expect: readonly StoreExpectation[];
  /** The answer, given the generations the commit gave each write (in order). */
  result: (generations: readonly number[]) => T;
}

/** What a dialect's memory implements to be followed. */
export interface FollowedView {
  /** Replaces the whole view with these records (at start-up, and when the feed was pruned past this instance). */
  reset(records: ReadonlyMap<string, readonly StoredRecord[]>): void;
  /**
   * One record's new value (`null`: deleted), newer than what the view holds. The only way memory changes after
   * the reset, for this instance's commits and every other's alike.
   */
  apply(kind: string, key: string, value: unknown, generation: number): void;
}

/** The durability of a write with nothing to commit. */
const DURABLE: Promise<void> = Promise.resolve();

/** A local deletion whose seq the feed has not told yet: nothing older may resurrect the record meanwhile. */
const PENDING_DELETE = Number.POSITIVE_INFINITY;

export class StoreFollower {
  readonly #store: AsyncStore;
  readonly #kinds: ReadonlySet<string>;
  readonly #view: FollowedView;
  /** kind → key → the generation memory holds (a live record) or the seq of its deletion (a tombstone). */
  readonly #versions = new Map<string, Map<string, { at: number; deleted: boolean }>>();
  #subscription: Subscription | undefined;
  #queue: Promise<unknown> = Promise.resolve();

  constructor(store: AsyncStore, kinds: readonly string[], view: FollowedView) {
    this.#store = store;
    this.#kinds = new Set(kinds);
    this.#view = view;
    for (const kind of kinds) this.#versions.set(kind, new Map());
  }

  /** Loads the view from a snapshot and follows the feed from there. */
  async start(): Promise<void> {
    const snapshot = await this.#store.snapshot([...this.#kinds]);
    this.#reset(snapshot);
    this.#subscription = this.#store.subscribe(snapshot.seq, {
      changes: (batch) => this.#changes(batch),
      reload: async () => {
        const fresh = await this.#store.snapshot([...this.#kinds]);
        this.#reset(fresh);
        return fresh.seq;
      },
    });
  }

  /** The generation memory holds for a record (0: none), for a claim's expectations. */
  generation(kind: string, key: string): number {
    const v = this.#versions.get(kind)?.get(key);
    return v && !v.deleted ? v.at : 0;
  }

  /**
   * Commits the writes (with the expectations the decision read) and applies each to memory unless the feed already
   * brought something newer: as soon as the store has them in place where it stages commits (the embedded store),
   * once committed elsewhere. Resolves then, with the promise of their durability. Rejects as the store does
   * (StoreConflictError, StoreUnavailableError); nothing changes in memory then — an unavailable commit that did
   * land arrives through the feed.
   */
  async stage(writes: readonly StoreWrite[], expect?: Parameters<AsyncStore['commit']>[1]): Promise<StagedCommit> {
    let inPlace!: (generations: number[]) => void;
    const staged = new Promise<number[]>((resolve) => {
      inPlace = resolve;
    });
    const committed = this.#store.commit(writes, expect, inPlace);
    const durable = committed.then(() => undefined);
    // Awaited by the caller after its writer turn; a failure is not unhandled meanwhile.
    durable.catch(() => undefined);
    // Whichever comes first: the store placed them (durable later), or committed them without staging.
    const generations = await Promise.race([staged, committed]);
    writes.forEach((w, i) => {
      if (this.#kinds.has(w.kind)) this.#committed(w.kind, w.key, generations[i]!, w.value ?? null);
    });
    return { generations, durable };
  }

  /** As stage, resolving once the writes are durable. */
  async commit(writes: readonly StoreWrite[], expect?: Parameters<AsyncStore['commit']>[1]): Promise<number[]> {
    const staged = await this.stage(writes, expect);
    await staged.durable;
    return staged.generations;
  }

  /** Runs `work` after every earlier write of this view has finished (one writer at a time per dialect). */
  exclusive<T>(work: () => Promise<T> | T): Promise<T> {
    const run = this.#queue.then(work);
    this.#queue = run.catch(() => undefined);
    return run;
  }

  /**
   * One write of this view, in its writer turn: `decide()` on memory, stage what it decided with the generations
   * it read; the answer once durable. When another instance changed one of them first: catch up with the feed and
   * decide again, WRITE_ATTEMPTS decisions in all, then throw `exhausted()`. A decision with nothing to write
   * answers at once.
   */
  async write<T>(decide: () => WriteDecision<T>, exhausted: () => Error): Promise<T> {
    const done = await this.exclusive(async () => {
      for (let attempt = 1; ; attempt++) {
        const d = decide();
        if (d.writes.length === 0 && d.expect.length === 0) return { answer: d.result([]), durable: DURABLE };
        try {
          const staged = await this.stage(d.writes, d.expect);
          return { answer: d.result(staged.generations), durable: staged.durable };
        } catch (err) {
          if (!(err instanceof StoreConflictError)) throw err;
          if (attempt >= WRITE_ATTEMPTS) throw exhausted();
          await this.catchUp();
        }
      }
    });
    await done.durable;
    return done.answer;
  }

  /** Resolves when every change committed before the call has been applied (after a conflict, before retrying). */
  catchUp(): Promise<void> {
    return this.#store.catchUp();
  }

  close(): void {
    this.#subscription?.close();
    this.#subscription = undefined;
  }

  #reset(snapshot: StoreSnapshot): void {
    for (const [kind, byKey] of this.#versions) {
      byKey.clear();
      for (const r of snapshot.records.get(kind) ?? []) byKey.set(r.key, { at: r.generation, deleted: false });
    }
    this.#view.reset(snapshot.records);
  }

  #changes(batch: readonly Change[]): void {
    for (const c of batch) if (this.#kinds.has(c.kind)) this.#fed(c);
  }

  /** This instance's acknowledged write: newer than anything it deleted itself before (writes are serialised). */
  #committed(kind: string, key: string, generation: number, value: unknown): void {
    const byKey = this.#versions.get(kind)!;
    const held = byKey.get(key);
    if (value === null) {
      // Already gone (the feed was first): keep its seq. Otherwise gone now, its seq still to come.
      if (held?.deleted) return;
      byKey.set(key, { at: PENDING_DELETE, deleted: true });
      if (held) this.#view.apply(kind, key, null, 0);
      return;
    }
    if (held && !held.deleted && generation <= held.at) return;
    if (held?.deleted && held.at !== PENDING_DELETE && generation <= held.at) return;
    byKey.set(key, { at: generation, deleted: false });
    this.#view.apply(kind, key, value, generation);
  }

  /** A change from the feed: applied iff it is newer than what memory holds for the record. */
  #fed(c: Change): void {
    const byKey = this.#versions.get(c.kind)!;
    const held = byKey.get(c.key);
    // By its generation, not its value: a change this instance applied already is skipped without parsing it.
    if (c.generation === 0) {
      if (held?.deleted) {
        // This instance's own deletion, now with its seq: from here on only what came after it counts.
        if (held.at === PENDING_DELETE && c.origin === this.#store.instanceId) held.at = c.seq;
        else if (c.seq > held.at) held.at = c.seq;
        return;
      }
      if (held && c.seq <= held.at) return;
      byKey.set(c.key, { at: c.seq, deleted: true });
      if (held) this.#view.apply(c.kind, c.key, null, 0);
      return;
    }
    if (held && c.generation <= held.at) return;
    byKey.set(c.key, { at: c.generation, deleted: false });
    this.#view.apply(c.kind, c.key, c.value, c.generation);
  }
}
