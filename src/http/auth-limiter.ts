// Brute force: failed authentications per client address in a fixed one-minute window that opens with the
// address's first failure. Above the limit the address is refused (429) until its window closes. Only failures
// count, which @fastify/rate-limit cannot do (it counts every request before the handler runs). Pure: the clock
// is passed in.

const WINDOW_MS = 60_000;

export class FailureLimiter {
  readonly limit: number;
  readonly #maxClients: number;
  /** Address → window start and failures in it; insertion order is window-start order (oldest first). */
  readonly #windows = new Map<string, { start: number; failures: number }>();

  constructor(limit: number, maxClients = 100_000) {
    this.limit = limit;
    this.#maxClients = maxClients;
  }

  /** Seconds until the address may try again (0: it may now). */
  retryAfterSeconds(client: string, now: number): number {
    const w = this.#windows.get(client);
    if (!w) return 0;
    if (now >= w.start + WINDOW_MS) {
      this.#windows.delete(client);
      return 0;
    }
    return w.failures >= this.limit ? Math.max(1, Math.ceil((w.start + WINDOW_MS - now) / 1000)) : 0;
  }

  fail(client: string, now: number): void {
    const w = this.#windows.get(client);
    if (w && now < w.start + WINDOW_MS) {
      w.failures++;
      return;
    }
    this.#windows.delete(client);
    this.#evict(now);
    this.#windows.set(client, { start: now, failures: 1 });
  }

  get tracked(): number {
    return this.#windows.size;
  }

  /** Drops closed windows (the oldest come first), and the oldest open ones beyond the bound on memory. */
  #evict(now: number): void {
    for (const [client, w] of this.#windows) {
      if (now < w.start + WINDOW_MS && this.#windows.size < this.#maxClients) break;
      this.#windows.delete(client);
    }
  }
}
