// The shared store: PostgreSQL 15+ via node-postgres (`pg`), for several Berth instances on one database.
// PostgreSQL is the source of truth and arbitrates claims (berth_commit checks the expectations inside the
// transaction); a change feed (the changes table + NOTIFY, followed on a dedicated LISTEN connection, with a
// catch-up read after every reconnect and a slow safety poll) carries every instance's writes to the others.
// An unreachable or silent database surfaces as StoreUnavailableError within the configured timeouts.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { databaseUrlPassword, redactDatabaseUrl } from './database-url.ts';
import { FeedSubscription, feedPosition, type FeedRead } from './feed.ts';
import { CHANNEL, CONFLICT_SQLSTATE, migrate } from './postgres-schema.ts';
import {
  StoreConflictError, StoreUnavailableError, type AsyncStore, type Change, type ChangeListener, type StoredRecord,
  type StoreExpectation, type StoreSnapshot, type StoreStatus, type StoreWrite, type Subscription,
} from './store.ts';

/** The subset of a pino logger the store writes to. */
export interface StoreLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

export interface PostgresStoreOptions {
  /** postgres://USER[:PASSWORD]@HOST[:PORT]/DB[?…] */
  url: string;
  /** Connections in the pool (default 10), plus one for LISTEN. */
  poolSize?: number;
  /** Server-side statement_timeout, ms (default 5000); the client gives up 500 ms later (query_timeout). */
  statementTimeoutMs?: number;
  /** Connecting, or waiting for a free pooled connection, ms (default 5000). */
  connectTimeoutMs?: number;
  /** Changes kept in the feed; older ones are pruned, and a subscriber that far behind reloads (default 100000). */
  feedRetention?: number;
  /** The safety poll (and pruning) interval, ms (default 5000). */
  pollIntervalMs?: number;
  /** LISTEN reconnection back-off, ms (default 100 doubling up to 5000). */
  reconnectMinMs?: number;
  reconnectMaxMs?: number;
  /** Attempts for a commit that PostgreSQL aborted with a serialization failure or deadlock (default 3). */
  commitAttempts?: number;
  /** The origin of this store's commits in the feed (default: a random UUID). */
  instanceId?: string;
  log?: StoreLog;
}

const DEFAULTS = {
  poolSize: 10,
  statementTimeoutMs: 5000,
  connectTimeoutMs: 5000,
  feedRetention: 100_000,
  pollIntervalMs: 5000,
  reconnectMinMs: 100,
  reconnectMaxMs: 5000,
  commitAttempts: 3,
};

/** Never dies silently: a timeout or a lost connection answers, the process never waits past these. */
const QUERY_TIMEOUT_MARGIN_MS = 500;
/** Start-up may wait for another instance's migrations. */
const MIGRATION_TIMEOUT_MS = 60_000;

const CONNECTION_CODES = new Set([
  'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN',
  'ECONNABORTED',
  '57P01', // admin_shutdown (pg_terminate_backend, a fast shutdown)
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now (starting up, shutting down)
  '53300', // too_many_connections
  '25P03', // idle_in_transaction_session_timeout
  '55000', // object_not_in_prerequisite_state: "database … is not currently accepting connections"
]);
const CONNECTION_MESSAGES = [
  'Connection terminated', 'timeout exceeded when trying to connect', 'Query read timeout', 'not queryable',
  'connection timeout', 'Client was closed and is not queryable',
];
const RETRY_CODES = new Set(['40001', '40P01']);

type Failure = 'connection' | 'timeout' | 'retry' | 'conflict' | 'other';

function classify(err: unknown): Failure {
  const e = err as { code?: unknown; message?: unknown };
  const code = typeof e.code === 'string' ? e.code : '';
  if (code === CONFLICT_SQLSTATE) return 'conflict';
  if (RETRY_CODES.has(code)) return 'retry';
  if (code === '57014') return 'timeout'; // query_canceled: statement_timeout
  if (CONNECTION_CODES.has(code) || code.startsWith('08')) return 'connection';
  const message = typeof e.message === 'string' ? e.message : '';
  if (CONNECTION_MESSAGES.some((m) => message.includes(m))) return 'connection';
  return 'other';
}

interface ChangeRow {
  head: string;
  seq: string | null;
  kind: string;
  key: string;
  value: string | null;
  generation: string;
  origin: string;
}

export class PostgresStore implements AsyncStore {
  readonly location: string;
  readonly instanceId: string;
  readonly shared = true;
  readonly #options: typeof DEFAULTS;
  readonly #clientConfig: pg.ClientConfig;
  readonly #pool: pg.Pool;
  readonly #password: string | undefined;
  readonly #log: StoreLog | undefined;
  readonly #subscriptions = new Set<FeedSubscription>();
  #listener: pg.Client | undefined;
  #reconnectTimer: NodeJS.Timeout | undefined;
  #reconnectDelay: number;
  #pollTimer: NodeJS.Timeout | undefined;
  #seq = 0;
  #connected = false;
  #following = false;
  #error: string | undefined;
  #closed = false;

  /** Use openPostgresStore: it migrates and starts following before handing the store out. */
  constructor(options: PostgresStoreOptions) {
    this.#options = { ...DEFAULTS, ...definedOnly(options) };
    this.instanceId = options.instanceId ?? randomUUID();
    this.location = redactDatabaseUrl(options.url);
    this.#password = databaseUrlPassword(options.url);
    this.#log = options.log;
    this.#reconnectDelay = this.#options.reconnectMinMs;
    this.#clientConfig = {
      connectionString: options.url,
      application_name: `berth ${this.instanceId}`,
      connectionTimeoutMillis: this.#options.connectTimeoutMs,
      statement_timeout: this.#options.statementTimeoutMs,
      query_timeout: this.#options.statementTimeoutMs + QUERY_TIMEOUT_MARGIN_MS,
      idle_in_transaction_session_timeout: this.#options.statementTimeoutMs * 2,
      keepAlive: true,
    };
    this.#pool = new pg.Pool({ ...this.#clientConfig, max: this.#options.poolSize, idleTimeoutMillis: 30_000 });
    // An idle pooled connection that dies (server restart, pg_terminate_backend) is dropped by the pool; the
    // next query opens a new one. Without a listener the error would crash the process.
    this.#pool.on('error', (err) => this.#log?.warn({ err: this.#scrub(err) }, 'store: an idle database connection failed'));
  }

  /** Migrates, reads the feed head and starts listening. Rejects with StoreUnavailableError when unreachable. */
  async start(): Promise<void> {
    const client = new pg.Client({
      ...this.#clientConfig,
      statement_timeout: MIGRATION_TIMEOUT_MS,
      query_timeout: MIGRATION_TIMEOUT_MS + QUERY_TIMEOUT_MARGIN_MS,
    });
    client.on('error', () => undefined);
    try {
      await client.connect();
      const applied = await migrate(client);
      if (applied.length > 0) this.#log?.info({ store: this.location, applied }, 'store: schema migrated');
    } catch (err) {
      throw this.#failure(err, 'cannot prepare the database');
    } finally {
      await client.end().catch(() => undefined);
    }
    this.#seq = await this.sequence();
    await this.#connectListener();
    this.#pollTimer = setInterval(() => void this.#poll(), this.#options.pollIntervalMs);
    this.#pollTimer.unref();
  }

  // ---- reads and commits ----------------------------------------------------------------------------------

  async load<V = unknown>(kind: string): Promise<Array<StoredRecord<V>>> {
    const { rows } = await this.#query<{ key: string; value: string; generation: string }>(
      'load', 'SELECT key, value, generation FROM records WHERE kind = $1 ORDER BY key', [kind]);
    return rows.map((r) => ({ key: r.key, value: JSON.parse(r.value) as V, generation: Number(r.generation) }));
  }

  async get<V = unknown>(kind: string, key: string): Promise<StoredRecord<V> | undefined> {
    const { rows } = await this.#query<{ value: string; generation: string }>(
      'get', 'SELECT value, generation FROM records WHERE kind = $1 AND key = $2', [kind, key]);
    const r = rows[0];
    return r ? { key, value: JSON.parse(r.value) as V, generation: Number(r.generation) } : undefined;
  }

  async snapshot(kinds: readonly string[]): Promise<StoreSnapshot> {
    return this.#withClient('snapshot', async (client) => {
      await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
      try {
        const head = await client.query<{ seq: string }>('SELECT seq FROM feed WHERE id = 1');
        const { rows } = await client.query<{ kind: string; key: string; value: string; generation: string }>(
          'SELECT kind, key, value, generation FROM records WHERE kind = ANY($1) ORDER BY kind, key', [kinds]);
        await client.query('COMMIT');
        const records = new Map<string, StoredRecord[]>(kinds.map((k) => [k, []]));
        for (const r of rows) {
          records.get(r.kind)!.push({ key: r.key, value: JSON.parse(r.value), generation: Number(r.generation) });
        }
        const seq = Number(head.rows[0]!.seq);
        this.#saw(seq);
        return { seq, records };
      } catch (err) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw err;
      }
    });
  }

  async commit(writes: readonly StoreWrite[], expect: readonly StoreExpectation[] = []): Promise<number[]> {
    if (writes.length === 0 && expect.length === 0) {
      this.#assertOpen();
      return [];
    }
    const values = writes.map((w) => (w.value === null || w.value === undefined ? null : JSON.stringify(w.value)));
    const params = [
      writes.map((w) => w.kind), writes.map((w) => w.key), values,
      expect.map((e) => e.kind), expect.map((e) => e.key), expect.map((e) => e.generation),
      this.instanceId,
    ];
    for (let attempt = 1; ; attempt++) {
      try {
        const { rows } = await this.#query<{ seqs: string[] }>(
          'commit', 'SELECT berth_commit($1, $2, $3, $4, $5, $6, $7) AS seqs', params);
        const seqs = rows[0]!.seqs.map(Number);
        if (seqs.length > 0) this.#saw(seqs[seqs.length - 1]!);
        return seqs.map((seq, i) => (values[i] === null ? 0 : seq));
      } catch (err) {
        if (classify(err) === 'conflict') throw conflictFrom(err, expect);
        if (classify(err) !== 'retry') throw err;
        if (attempt >= this.#options.commitAttempts) {
          throw new StoreUnavailableError(
            `the database aborted the commit ${attempt} times (serialization failure or deadlock)`, { cause: err });
        }
      }
    }
  }

  async sequence(): Promise<number> {
    const { rows } = await this.#query<{ seq: string }>('sequence', 'SELECT seq FROM feed WHERE id = 1', []);
    const seq = Number(rows[0]!.seq);
    this.#saw(seq);
    return seq;
  }

  /** One statement on a pooled connection, errors mapped (StoreUnavailableError for outages and timeouts). */
  async #query<R extends pg.QueryResultRow>(name: string, text: string, values: unknown[]): Promise<pg.QueryResult<R>> {
    return this.#withClient(name, (client) => client.query<R>({ name: `berth_${name}`, text, values }));
  }

  async #withClient<T>(what: string, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    this.#assertOpen();
    let client: pg.PoolClient;
    try {
      client = await this.#pool.connect();
    } catch (err) {
      throw this.#failure(err, `${what}: cannot get a database connection`);
    }
    // A socket error while checked out also reaches the query that is running; without a listener here it would
    // be an uncaught exception (the pool only listens while the client is idle).
    const ignore = () => undefined;
    client.on('error', ignore);
    try {
      const result = await fn(client);
      client.removeListener('error', ignore);
      client.release();
      this.#up();
      return result;
    } catch (err) {
      client.removeListener('error', ignore);
      const failure = classify(err);
      // A connection that failed or timed out on the client side is in an unknown state: drop it.
      client.release(failure === 'connection' ? (err as Error) : undefined);
      if (failure === 'connection' || failure === 'timeout') throw this.#failure(err, what);
      throw err;
    }
  }

  /** Maps an outage or timeout to StoreUnavailableError (anything else passes through) and records it. */
  #failure(err: unknown, what: string): Error {
    const failure = classify(err);
    if (failure !== 'connection' && failure !== 'timeout') return err as Error;
    const detail = this.#scrub(err).message;
    const message = failure === 'timeout'
      ? `${what}: the database did not answer within ${this.#options.statementTimeoutMs} ms (${detail})`
      : `${what}: database ${this.location} unavailable (${detail})`;
    if (failure === 'connection') this.#down(message);
    return new StoreUnavailableError(message, { cause: err });
  }

  #assertOpen(): void {
    if (this.#closed) throw new Error('the store is closed');
  }

  // ---- the change feed ------------------------------------------------------------------------------------

  subscribe(fromSeq: number, listener: ChangeListener): Subscription {
    this.#assertOpen();
    const subscription = new FeedSubscription({ read: (after, limit) => this.#read(after, limit) }, fromSeq, listener, {
      onError: (err) => {
        if (!(err instanceof StoreUnavailableError)) {
          this.#log?.warn({ err: this.#scrub(err) }, 'store: a change-feed listener failed; retrying at the next wake-up');
        }
      },
      onClose: (s) => this.#subscriptions.delete(s),
    });
    this.#subscriptions.add(subscription);
    void subscription.wake();
    return subscription;
  }

  async #read(after: number, limit: number): Promise<FeedRead> {
    // The head and the changes in one statement (one snapshot), so "nothing after N" and "N is behind the head"
    // cannot disagree about a commit that lands in between.
    const { rows } = await this.#query<ChangeRow>('read',
      `SELECT f.seq AS head, c.seq, c.kind, c.key, c.value, c.generation, c.origin
         FROM feed f
         LEFT JOIN LATERAL (SELECT * FROM changes WHERE seq > $1 ORDER BY seq LIMIT $2) c ON true
        WHERE f.id = 1
        ORDER BY c.seq`, [after, limit]);
    const head = Number(rows[0]!.head);
    this.#saw(head);
    if (after > head) return 'gap';
    if (rows[0]!.seq === null) return head > after ? 'gap' : [];
    if (Number(rows[0]!.seq) !== after + 1) return 'gap';
    return rows.map((r): Change => ({
      seq: Number(r.seq),
      kind: r.kind,
      key: r.key,
      value: r.value === null ? null : JSON.parse(r.value),
      generation: Number(r.generation),
      origin: r.origin,
    }));
  }

  /** Wakes every subscriber; resolves when each has delivered what it read. */
  #wakeAll(upTo?: number): Promise<void> {
    return Promise.all([...this.#subscriptions].map((s) => s.wake(upTo))).then(() => undefined);
  }

  async #connectListener(): Promise<void> {
    const client = new pg.Client(this.#clientConfig);
    const lost = (err: Error) => this.#listenerLost(client, err);
    client.on('error', lost);
    client.on('end', () => lost(new Error('connection ended')));
    client.on('notification', (msg) => {
      if (msg.channel !== CHANNEL) return;
      const seq = Number(msg.payload);
      if (Number.isSafeInteger(seq)) this.#saw(seq);
      void this.#wakeAll(Number.isSafeInteger(seq) ? seq : undefined);
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${CHANNEL}`);
    } catch (err) {
      client.removeAllListeners('end');
      await client.end().catch(() => undefined);
      throw this.#failure(err, 'listen for changes');
    }
    if (this.#closed) {
      await client.end().catch(() => undefined);
      return;
    }
    this.#listener = client;
    this.#reconnectDelay = this.#options.reconnectMinMs;
    // Anything committed while we were not listening is read now.
    await this.#wakeAll();
    if (this.#listener === client) {
      this.#following = true;
      this.#up();
    }
  }

  #listenerLost(client: pg.Client, err: Error): void {
    if (this.#listener !== client) return;
    this.#listener = undefined;
    this.#following = false;
    this.#down(`change feed connection lost (${this.#scrub(err).message})`);
    this.#log?.warn({ err: this.#scrub(err) }, 'store: change feed connection lost; reconnecting');
    client.removeAllListeners('end');
    void client.end().catch(() => undefined);
    this.#scheduleReconnect();
  }

  #scheduleReconnect(): void {
    if (this.#closed || this.#reconnectTimer) return;
    const delay = this.#reconnectDelay;
    this.#reconnectDelay = Math.min(this.#options.reconnectMaxMs, delay * 2);
    this.#reconnectTimer = setTimeout(() => {
      this.#reconnectTimer = undefined;
      this.#connectListener().then(
        () => this.#log?.info({ store: this.location, seq: this.#seq }, 'store: following the change feed again'),
        () => this.#scheduleReconnect(),
      );
    }, delay);
    this.#reconnectTimer.unref();
  }

  /** The slow safety poll: catches up on notifications that never came, and prunes the feed. */
  async #poll(): Promise<void> {
    if (this.#closed) return;
    const listener = this.#listener;
    if (!listener) {
      this.#scheduleReconnect();
      return;
    }
    try {
      // A connection can die silently (a partition, a frozen server): ask it something, within query_timeout.
      await listener.query('SELECT 1');
    } catch (err) {
      this.#listenerLost(listener, err as Error);
      return;
    }
    try {
      await this.#wakeAll();
      await this.prune();
    } catch {
      // Recorded by #failure; the next poll or the reconnect tries again.
    }
  }

  /** Deletes changes older than the retention bound. Returns how many were deleted. */
  async prune(): Promise<number> {
    const result = await this.#query('prune',
      'DELETE FROM changes WHERE seq <= (SELECT seq FROM feed WHERE id = 1) - $1', [this.#options.feedRetention]);
    return result.rowCount ?? 0;
  }

  /** Reads the feed now for every subscriber (what a notification does); resolves when delivered. */
  catchUp(): Promise<void> {
    return this.#wakeAll();
  }

  // ---- readiness ------------------------------------------------------------------------------------------

  status(): StoreStatus {
    const s: StoreStatus = {
      backend: 'postgres', connected: this.#connected, following: this.#following, seq: this.#seq,
      position: feedPosition(this.#subscriptions, this.#seq),
    };
    if (this.#error !== undefined && !(this.#connected && this.#following)) s.error = this.#error;
    return s;
  }

  #saw(seq: number): void {
    if (seq > this.#seq) this.#seq = seq;
  }

  #up(): void {
    this.#connected = true;
    if (this.#following) this.#error = undefined;
  }

  #down(message: string): void {
    this.#connected = false;
    this.#error = message;
  }

  /** The error with the password scrubbed from its message, should a driver ever quote it. */
  #scrub(err: unknown): Error {
    const e = err instanceof Error ? err : new Error(String(err));
    if (this.#password === undefined || !e.message.includes(this.#password)) return e;
    const clean = new Error(e.message.split(this.#password).join('***'));
    clean.name = e.name;
    return clean;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#following = false;
    this.#connected = false;
    clearInterval(this.#pollTimer);
    clearTimeout(this.#reconnectTimer);
    for (const s of [...this.#subscriptions]) s.close();
    const listener = this.#listener;
    this.#listener = undefined;
    if (listener) {
      listener.removeAllListeners('end');
      await listener.end().catch(() => undefined);
    }
    await this.#pool.end();
  }
}

function conflictFrom(err: unknown, expect: readonly StoreExpectation[]): StoreConflictError {
  const detail = String((err as { detail?: unknown }).detail ?? '');
  const [index, actual] = detail.split(' ').map(Number);
  const e = expect[index ?? -1];
  if (e === undefined || actual === undefined || !Number.isFinite(actual)) {
    return new StoreConflictError(expect[0] ?? { kind: '', key: '', generation: 0 }, -1);
  }
  return new StoreConflictError(e, actual);
}

function definedOnly<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/** Opens, migrates and starts following; the store is ready to use when this resolves. */
export async function openPostgresStore(options: PostgresStoreOptions): Promise<PostgresStore> {
  const store = new PostgresStore(options);
  try {
    await store.start();
  } catch (err) {
    await store.close().catch(() => undefined);
    throw err;
  }
  return store;
}
