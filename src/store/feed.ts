// The change-feed subscription both stores share: a cursor, a source that reads the changes after it, and a pump
// that delivers them in order, one listener call at a time. The stores only decide when to wake it (after a
// local commit, on NOTIFY, on reconnect, on the safety poll) and where the changes come from.
import type { Change, ChangeListener, Subscription } from './store.ts';

/** What a source answers for "the changes after seq N": up to `limit` of them in order, or `gap`. */
export type FeedRead = readonly Change[] | 'gap';

export interface FeedSource {
  /**
   * The changes with seq > after, in order, at most `limit`; an empty list when there are none yet; 'gap' when
   * the change right after `after` no longer exists (pruned) or `after` is ahead of the store.
   */
  read(after: number, limit: number): Promise<FeedRead>;
}

const FEED_BATCH = 500;

/** The position every subscription has reached (StoreStatus.position): the oldest, or `seq` when there is none. */
export function feedPosition(subscriptions: Iterable<FeedSubscription>, seq: number): number {
  let position = seq;
  for (const s of subscriptions) if (s.position < position) position = s.position;
  return position;
}

export class FeedSubscription implements Subscription {
  readonly #source: FeedSource;
  readonly #listener: ChangeListener;
  readonly #onError: (err: unknown) => void;
  readonly #onClose: (s: FeedSubscription) => void;
  #position: number;
  #running: Promise<void> | undefined;
  #again = false;
  #closed = false;

  constructor(
    source: FeedSource,
    fromSeq: number,
    listener: ChangeListener,
    hooks: { onError: (err: unknown) => void; onClose: (s: FeedSubscription) => void },
  ) {
    this.#source = source;
    this.#position = fromSeq;
    this.#listener = listener;
    this.#onError = hooks.onError;
    this.#onClose = hooks.onClose;
  }

  get position(): number {
    return this.#position;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /**
   * Reads and delivers what is new. `upTo`, when known (a NOTIFY payload), skips the read if already delivered.
   * Resolves when this wake-up's pass is over (successfully or not: errors go to onError).
   */
  wake(upTo?: number): Promise<void> {
    if (this.#closed || (upTo !== undefined && upTo <= this.#position)) return this.#running ?? Promise.resolve();
    if (this.#running) {
      this.#again = true;
      return this.#running;
    }
    this.#running = this.#pump().finally(() => {
      this.#running = undefined;
      // A wake-up that arrived during a pass that failed has not been served yet.
      if (this.#again && !this.#closed) void this.wake();
    });
    return this.#running;
  }

  async #pump(): Promise<void> {
    try {
      do {
        this.#again = false;
        for (;;) {
          if (this.#closed) return;
          const read = await this.#source.read(this.#position, FEED_BATCH);
          if (this.#closed) return;
          if (read === 'gap') {
            this.#position = await this.#listener.reload();
            continue;
          }
          if (read.length === 0) break;
          await this.#listener.changes(read);
          this.#position = read[read.length - 1]!.seq;
          if (read.length < FEED_BATCH) break;
        }
      } while (this.#again && !this.#closed);
    } catch (err) {
      this.#onError(err);
    }
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#onClose(this);
  }
}
