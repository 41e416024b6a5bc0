// Work that follows an answer but need not hold up the next one: a GET decision's log line, metrics and console
// entry, and every answer's request metrics. A client that asks again as soon as it has its answer (Nova's
// scheduler, one request after another) sends its next request while the server is still writing down the last one:
// on this VM kind the GET's report ran for about 0.22 ms between the answer's write and the next connection's accept
// (issue 16; the README's Performance section, 2026-12-05 late evening, has the A/B figures). Deferred, it runs once
// the server has had a few milliseconds to take the next request, or at once when something reads what it writes
// (flush), or at close.

/** How long deferred work waits for the next request to come and go. */
const DEFER_MS = 5;
/** Queued tasks run at once past this many (a server that never pauses still writes down what it did). */
const MAX_DEFERRED = 256;

export class Deferred {
  #tasks: Array<() => void> = [];
  #timer: NodeJS.Timeout | null = null;
  readonly #onError: (err: unknown) => void;

  /** `onError`: what a task's failure is told to (it stops no other task). */
  constructor(onError: (err: unknown) => void, readonly delayMs = DEFER_MS, readonly maxQueued = MAX_DEFERRED) {
    this.#onError = onError;
  }

  /** Runs `task` later: within delayMs, or sooner on flush. */
  defer(task: () => void): void {
    this.#tasks.push(task);
    if (this.#tasks.length >= this.maxQueued) this.flush();
    else this.#timer ??= setTimeout(() => this.flush(), this.delayMs);
  }

  /** How many tasks wait. */
  get pending(): number {
    return this.#tasks.length;
  }

  /** Runs every waiting task now, in the order they were deferred (call before reading what they write). */
  flush(): void {
    if (this.#timer !== null) {
      clearTimeout(this.#timer);
      this.#timer = null;
    }
    // A task that defers another (none does today) adds to the next batch, not to this loop.
    const tasks = this.#tasks;
    this.#tasks = [];
    for (const task of tasks) {
      try {
        task();
      } catch (err) {
        this.#onError(err);
      }
    }
  }
}
