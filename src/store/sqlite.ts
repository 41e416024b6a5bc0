// The embedded store: one SQLite file (WAL) under the data directory, via better-sqlite3, held by one process.
// The engine's own commits are synchronous transactions. The asynchronous interface (AsyncSqliteStore), which Berth
// runs on, commits in groups: the first commit of a turn of the event loop opens a transaction, every commit staged
// in that turn joins it (a savepoint each, so a conflict undoes only its own writes), and the transaction commits
// once the turn is over; each commit is acknowledged then. The claims decided in one turn so share their page
// writes and, with synchronous=FULL, one fsync. The change feed of a single process is its own commits, kept in a
// bounded in-memory ring, and a staged write enters it only once durable.
import { randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { Checkpointer, RESTART_FRAMES, type CheckpointStats } from './checkpointer.ts';
import { FeedSubscription, feedPosition, type FeedRead } from './feed.ts';
import {
  StoreConflictError, type AsyncStore, type Change, type ChangeListener, type StoredRecord,
  type StagedCommit, type StoreExpectation, type StoreSnapshot, type StoreStatus, type StoreWrite, type Subscription,
} from './store.ts';

export const DB_FILE = 'berth.sqlite';
/** Held locked by the process that owns the data directory (see lockDataDir). */
const LOCK_FILE = 'berth.lock';
/** The pid of that process, for the message a second process prints. */
export const PID_FILE = 'berth.pid';

/** Schema migrations, applied in order at start-up; the index + 1 is the schema version (PRAGMA user_version). */
const MIGRATIONS: readonly string[] = [
  `CREATE TABLE records (
     kind       TEXT    NOT NULL,
     key        TEXT    NOT NULL,
     value      TEXT    NOT NULL,
     generation INTEGER NOT NULL,
     PRIMARY KEY (kind, key)
   ) WITHOUT ROWID`,
  // The store-wide sequence generations are drawn from. Its value is max(feed.seq, max(records.generation)):
  // a write stores its seq as its record's generation, so only a commit that deletes needs to record the
  // sequence here (which keeps a claim's commit to the pages of its records). Version 1 counted generations
  // per record; the sequence starts above all of them.
  `CREATE TABLE feed (id INTEGER PRIMARY KEY CHECK (id = 1), seq INTEGER NOT NULL);
   INSERT INTO feed (id, seq) VALUES (1, 0)`,
];

/** How many recent changes the in-process feed keeps for subscribers that start behind. */
const DEFAULT_FEED_RETENTION = 1024;
/** SQLite's own automatic checkpoint (pages), while the checkpoint thread is not running. */
const AUTOCHECKPOINT_PAGES = 1000;
/** Commits before the checkpoint thread starts: a store written a few times never needs one. */
const CHECKPOINTER_AFTER = 100;
/** Commits between two looks at the log's size while the thread checkpoints (see #bounded). */
const WAL_CHECK_EVERY = 16;
/** The page cache of a file store, in KiB as cache_size takes it (negative): SQLite's default (see the constructor). */
const FILE_CACHE_KIB = -2000;
/** WAL frame header bytes (each page in the log carries one). */
const WAL_FRAME_HEADER = 24;

export interface SqliteStoreOptions {
  /** "full" survives power loss; "normal" (with WAL) survives a killed process. */
  synchronous?: 'full' | 'normal';
  /** Changes kept in memory for subscribe(fromSeq) with fromSeq behind the newest (default 1024). */
  feedRetention?: number;
  /** The origin of this store's commits in the feed (default: a random UUID). */
  instanceId?: string;
}

/** A second process tried to open a data directory that a running Berth holds. */
export class DataDirLockedError extends Error {
  readonly dataDir: string;
  readonly pid: number | undefined;
  constructor(dataDir: string, pid: number | undefined) {
    const holder = pid === undefined ? 'pid unknown' : pid === process.pid ? `pid ${pid}, this process` : `pid ${pid}`;
    super(`data_dir ${dataDir} is in use by another Berth process (${holder}); ` +
      'stop it or choose another data_dir');
    this.name = 'DataDirLockedError';
    this.dataDir = dataDir;
    this.pid = pid;
  }
}

/**
 * Takes the data directory for this process. The lock is SQLite's own (an fcntl lock held by an open connection
 * in EXCLUSIVE locking mode), so the kernel releases it however the process ends: no stale lock to detect, and a
 * reused pid cannot keep a directory locked. It sits on a separate file so that the data file itself stays
 * readable by sqlite3 for inspection and backups. The pid file only serves the message.
 */
function lockDataDir(dir: string): { release(): void } {
  const lock = new Database(join(dir, LOCK_FILE), { timeout: 0 });
  try {
    lock.pragma('locking_mode = EXCLUSIVE');
    lock.exec('BEGIN EXCLUSIVE; COMMIT');
  } catch (err) {
    lock.close();
    if ((err as { code?: string }).code === 'SQLITE_BUSY') throw new DataDirLockedError(dir, readPid(dir));
    throw err;
  }
  const pidFile = join(dir, PID_FILE);
  writeFileSync(pidFile, `${process.pid}\n`);
  return {
    release() {
      if (readPid(dir) === process.pid) rmSync(pidFile, { force: true });
      lock.close();
    },
  };
}

function readPid(dir: string): number | undefined {
  try {
    const pid = Number.parseInt(readFileSync(join(dir, PID_FILE), 'utf8').trim(), 10);
    return Number.isSafeInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** A change as the ring keeps it: the value still as the JSON text that was written. */
interface RingEntry {
  seq: number;
  kind: string;
  key: string;
  json: string | null;
}

/**
 * A ring entry as a Change whose value is parsed only when read, once for every subscriber: here every change is
 * this process's own, which each follower has applied already and skips by its generation without looking.
 */
class RingChange implements Change {
  readonly seq: number;
  readonly kind: string;
  readonly key: string;
  readonly generation: number;
  readonly origin: string;
  readonly #entry: RingEntry & { parsed?: unknown };
  constructor(entry: RingEntry & { parsed?: unknown }, origin: string) {
    this.seq = entry.seq;
    this.kind = entry.kind;
    this.key = entry.key;
    this.generation = entry.json === null ? 0 : entry.seq;
    this.origin = origin;
    this.#entry = entry;
  }

  get value(): unknown {
    const e = this.#entry;
    if (e.json === null) return null;
    if (!('parsed' in e)) e.parsed = JSON.parse(e.json);
    return e.parsed;
  }
}

/** The commits staged in one turn of the event loop: one open transaction until #settle commits it. */
interface CommitGroup {
  /** The seq of the last write staged (the published seq before the first). */
  seq: number;
  /** The staged writes, for the feed once durable. */
  entries: RingEntry[];
  durable: Promise<void>;
  resolve: () => void;
  reject: (err: unknown) => void;
}

function openGroup(seq: number): CommitGroup {
  let resolve!: () => void;
  let reject!: (err: unknown) => void;
  const durable = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  // Every staged commit's caller awaits this; a failure must not count as unhandled in between.
  durable.catch(() => undefined);
  return { seq, entries: [], durable, resolve, reject };
}

/** Thrown inside the conditional commit when a write found its record changed (caught in #apply). */
const WRITE_FOUND_CHANGE = new Error('a conditional write found its record changed');

/**
 * Whether each write (none a deletion, no record twice) comes with the expectation on its own record, in the same
 * order, and nothing else is expected: then the writes can check the expectations themselves.
 */
function expectsItsWrites(writes: readonly StoreWrite[], expect: readonly StoreExpectation[]): boolean {
  if (writes.length !== expect.length || writes.length === 0) return false;
  for (let i = 0; i < writes.length; i++) {
    const w = writes[i]!;
    const e = expect[i]!;
    if (w.value === null || w.value === undefined || w.kind !== e.kind || w.key !== e.key) return false;
    for (let j = 0; j < i; j++) if (writes[j]!.kind === w.kind && writes[j]!.key === w.key) return false;
  }
  return true;
}

/**
 * The engine, with synchronous methods (store:copy, tests and benches use them directly). `async()` gives the
 * AsyncStore view of the same engine, which is what Berth runs on.
 */
export class SqliteStore {
  readonly location: string;
  readonly instanceId: string;
  readonly #db: Database.Database;
  readonly #lock: { release(): void } | undefined;
  readonly #select: Database.Statement<[string], { key: string; value: string; generation: number }>;
  readonly #selectOne: Database.Statement<[string, string], { value: string; generation: number }>;
  readonly #generation: Database.Statement<[string, string], number>;
  readonly #upsert: Database.Statement<[string, string, string, number]>;
  readonly #delete: Database.Statement<[string, string]>;
  readonly #setSeq: Database.Statement<[number]>;
  /** Checks and writes one commit from seq `from` on, in a transaction of its own or a savepoint of the open group. */
  readonly #apply: (writes: readonly StoreWrite[], expect: readonly StoreExpectation[], from: number) =>
    { generations: number[]; entries: RingEntry[] };
  readonly #begin: Database.Statement<[]>;
  readonly #end: Database.Statement<[]>;
  readonly #rollback: Database.Statement<[]>;
  /** This turn's staged commits, if any (see stage). */
  #group: CommitGroup | undefined;
  readonly #retention: number;
  /** The newest committed (durable) seq. */
  #seq: number;
  /** Changes of this process, oldest first, at most #retention; #ring[i].seq === #ringFirst + i. */
  #ring: RingEntry[] = [];
  readonly #subscriptions = new Set<FeedSubscription>();
  /** Subscribers whose next read answers 'gap', so that they reload: a group they may have seen staged failed. */
  readonly #rewound = new Set<FeedSubscription>();
  /** A wake-up of the subscribers is scheduled (see #published). */
  #waking = false;
  #async: AsyncSqliteStore | undefined;
  readonly #synchronous: 'full' | 'normal';
  /** Checkpoints off the event loop (checkpointer.ts), once CHECKPOINTER_AFTER commits were made; none in memory. */
  #checkpointer: Checkpointer | undefined;
  /** Whether the thread checkpoints (SQLite's automatic checkpoint is off meanwhile). */
  #offloaded = false;
  #commits = 0;
  /** The log's size once restarted (bytes); at twice this, writers wait for the thread (#bounded). */
  #walLimit = 0;
  /** How often writers were made to wait because the log passed that bound. */
  #throttled = 0;

  /** `dataDir` ":memory:" keeps nothing on disk. Throws DataDirLockedError when another process holds `dataDir`. */
  constructor(dataDir: string, options: SqliteStoreOptions = {}) {
    this.instanceId = options.instanceId ?? randomUUID();
    this.#synchronous = options.synchronous ?? 'full';
    this.#retention = Math.max(1, options.feedRetention ?? DEFAULT_FEED_RETENTION);
    if (dataDir === ':memory:') {
      this.location = ':memory:';
    } else {
      const dir = resolve(dataDir);
      mkdirSync(dir, { recursive: true });
      this.#lock = lockDataDir(dir);
      this.location = join(dir, DB_FILE);
    }
    try {
      this.#db = new Database(this.location);
      if (this.location !== ':memory:') this.#db.pragma('journal_mode = WAL');
      this.#db.pragma(`synchronous = ${options.synchronous === 'normal' ? 'NORMAL' : 'FULL'}`);
      this.#migrate();
      if (this.location !== ':memory:') {
        // After each restart of the log its file is cut back to this: one long stretch does not keep it large.
        this.#walLimit = RESTART_FRAMES * ((this.#db.pragma('page_size', { simple: true }) as number) + WAL_FRAME_HEADER);
        this.#db.pragma(`journal_size_limit = ${this.#walLimit}`);
        // SQLite's own default page cache (2 MiB), not better-sqlite3's 16 MiB: when a commit's B-tree rebalance
        // reorders new pages it keys one on the pending-byte page for a moment, so at the commit's end SQLite walks
        // every cached page to drop those past the end of the file (pcache1TruncateUnsafe: 15 % of a claim's commit
        // with 4,000 cached pages). A smaller cache makes that walk short; the pages it no longer holds are a read
        // from the OS's cache away. Claim-shaped commits, run side by side: 91-111 → 77-90 µs of CPU each.
        this.#db.pragma(`cache_size = ${FILE_CACHE_KIB}`);
      }
    } catch (err) {
      this.#lock?.release();
      throw err;
    }

    this.#select = this.#db.prepare('SELECT key, value, generation FROM records WHERE kind = ? ORDER BY key');
    this.#selectOne = this.#db.prepare('SELECT value, generation FROM records WHERE kind = ? AND key = ?');
    // The column alone (pluck): a claim checks several expectations, and a row object each is garbage.
    this.#generation = this.#db.prepare<[string, string], number>('SELECT generation FROM records WHERE kind = ? AND key = ?').pluck();
    this.#upsert = this.#db.prepare(
      `INSERT INTO records (kind, key, value, generation) VALUES (?, ?, ?, ?)
       ON CONFLICT (kind, key) DO UPDATE SET value = excluded.value, generation = excluded.generation`,
    );
    this.#delete = this.#db.prepare('DELETE FROM records WHERE kind = ? AND key = ?');
    this.#setSeq = this.#db.prepare('UPDATE feed SET seq = ? WHERE id = 1');
    this.#seq = (this.#db.prepare(
      'SELECT max((SELECT seq FROM feed WHERE id = 1), coalesce((SELECT max(generation) FROM records), 0)) AS seq',
    ).get() as { seq: number }).seq;

    // A claim expects exactly the records it writes (the new one absent, the changed one at the generation read):
    // then each write checks its own expectation, an insert that finds the key or an update that finds another
    // generation changing nothing, instead of a lookup of each record before its write (two B-tree descents and
    // statement runs fewer per claim). A write that finds the record changed aborts the transaction, and the
    // expectations are then checked as below, in order, against what is committed: the same StoreConflictError.
    const insertNew = this.#db.prepare<[string, string, string, number]>(
      'INSERT INTO records (kind, key, value, generation) VALUES (?, ?, ?, ?) ON CONFLICT (kind, key) DO NOTHING',
    );
    const updateAt = this.#db.prepare<[string, number, string, string, number]>(
      'UPDATE records SET value = ?, generation = ? WHERE kind = ? AND key = ? AND generation = ?',
    );
    const checkExpectations = (expect: readonly StoreExpectation[]) => {
      for (const e of expect) {
        const actual = this.#generation.get(e.kind, e.key) ?? 0;
        if (actual !== e.generation) throw new StoreConflictError(e, actual);
      }
    };
    let pending: RingEntry[] = [];
    // Each write expecting its own record; throws WRITE_FOUND_CHANGE at the first that finds it changed.
    const writeExpected = (writes: readonly StoreWrite[], expect: readonly StoreExpectation[], from: number): number[] => {
      let seq = from;
      const generations: number[] = [];
      pending = [];
      for (let i = 0; i < writes.length; i++) {
        const w = writes[i]!;
        seq++;
        const json = JSON.stringify(w.value);
        const generation = expect[i]!.generation;
        const changed = generation === 0 ? insertNew.run(w.kind, w.key, json, seq) : updateAt.run(json, seq, w.kind, w.key, generation);
        if (changed.changes === 0) throw WRITE_FOUND_CHANGE;
        generations.push(seq);
        pending.push({ seq, kind: w.kind, key: w.key, json });
      }
      return generations;
    };
    const conditional = this.#db.transaction(writeExpected);
    const transaction = this.#db.transaction((writes: readonly StoreWrite[], expect: readonly StoreExpectation[], from: number) => {
      checkExpectations(expect);
      let seq = from;
      let deleted = false;
      const generations: number[] = [];
      pending = [];
      for (const w of writes) {
        seq++;
        if (w.value === null || w.value === undefined) {
          this.#delete.run(w.kind, w.key);
          deleted = true;
          generations.push(0);
          pending.push({ seq, kind: w.kind, key: w.key, json: null });
        } else {
          const json = JSON.stringify(w.value);
          this.#upsert.run(w.kind, w.key, json, seq);
          generations.push(seq);
          pending.push({ seq, kind: w.kind, key: w.key, json });
        }
      }
      // Without a delete, the last write's record carries the sequence (see the feed migration).
      if (deleted) this.#setSeq.run(seq);
      return generations;
    });
    // Inside the group's open transaction, better-sqlite3 runs these as savepoints.
    this.#apply = (writes, expect, from) => {
      let generations: number[];
      if (expectsItsWrites(writes, expect)) {
        try {
          // One write needs no savepoint: its statement writes the record or nothing, and SQLite undoes a statement
          // that fails part-way on its own (a claim on one instance: 1 statement run instead of 3).
          generations = writes.length === 1 ? writeExpected(writes, expect, from) : conditional(writes, expect, from);
        } catch (err) {
          if (err !== WRITE_FOUND_CHANGE) throw err;
          // Nothing was written (rolled back, or the one statement changed nothing). The conflict the full check names
          // (one always fails here).
          checkExpectations(expect);
          generations = transaction(writes, expect, from);
        }
      } else {
        generations = transaction(writes, expect, from);
      }
      return { generations, entries: pending };
    };
    this.#begin = this.#db.prepare('BEGIN');
    this.#end = this.#db.prepare('COMMIT');
    this.#rollback = this.#db.prepare('ROLLBACK');
  }

  /**
   * Stages a commit in this turn's transaction (see AsyncStore.commit): the first of a turn begins it and schedules its
   * commit for after the turn. Conflicts and errors of this commit's own writes throw here, as commit's do.
   */
  stage(writes: readonly StoreWrite[], expect: readonly StoreExpectation[] = []): StagedCommit {
    if (!this.#db.open) throw new TypeError('The database connection is not open');
    let group = this.#group;
    if (group === undefined) {
      this.#begin.run();
      const opened = (group = this.#group = openGroup(this.#seq));
      setImmediate(() => void this.#flush(opened));
    }
    let applied: { generations: number[]; entries: RingEntry[] };
    try {
      applied = this.#apply(writes, expect, group.seq);
    } catch (err) {
      // Some errors (a full disk, I/O) make SQLite roll back the whole transaction: the turn's other commits too.
      if (!this.#db.inTransaction) this.#failed(group, err);
      throw err;
    }
    for (const e of applied.entries) group.entries.push(e);
    if (applied.entries.length > 0) group.seq = applied.entries[applied.entries.length - 1]!.seq;
    return { generations: applied.generations, durable: group.durable };
  }

  /** After the turn that opened it: the group's commit, once a restart of the log lets writers go on. */
  async #flush(group: CommitGroup): Promise<void> {
    const pause = this.checkpointPause();
    if (pause) await pause;
    if (this.#group === group) this.#settle();
  }

  /** Commits the open group now, if any: before a synchronous commit, a read, a snapshot and at close. */
  #settle(): void {
    const group = this.#group;
    if (group === undefined) return;
    this.#group = undefined;
    try {
      this.#end.run();
    } catch (err) {
      this.#failed(group, err);
      return;
    }
    // Durable: only now does the feed carry them and are they acknowledged.
    this.#durable(group.entries);
    group.resolve();
  }

  /**
   * The group's transaction is lost: nothing of it was written. Its commits are refused, and every subscriber
   * (whose follower applied them when staged) rebuilds from the store before anything else runs.
   */
  #failed(group: CommitGroup, err: unknown): void {
    if (this.#group === group) this.#group = undefined;
    if (this.#db.inTransaction) this.#rollback.run();
    group.reject(err);
    for (const s of this.#subscriptions) {
      this.#rewound.add(s);
      void s.wake();
    }
  }

  /** A transaction committed with these writes: the feed, then the checkpoint thread's count. */
  #durable(entries: RingEntry[]): void {
    if (entries.length > 0) this.#published(entries);
    if (this.location !== ':memory:') this.#committed();
  }

  /** After a commit to a file: the checkpoint thread's count, its start, and the log's bound. */
  #committed(): void {
    const n = ++this.#commits;
    if (this.#checkpointer) {
      this.#checkpointer.committed();
      if (this.#offloaded && n % WAL_CHECK_EVERY === 0) this.#bounded();
    } else if (n === CHECKPOINTER_AFTER) {
      this.#checkpointer = new Checkpointer(this.location, this.#synchronous, {
        running: () => {
          if (!this.#db.open) return;
          this.#db.pragma('wal_autocheckpoint = 0');
          this.#offloaded = true;
        },
        failed: () => {
          // Back to SQLite's own checkpoints: the log must not grow without one.
          if (this.#db.open) this.#db.pragma(`wal_autocheckpoint = ${AUTOCHECKPOINT_PAGES}`);
          this.#offloaded = false;
        },
      });
    }
  }

  /**
   * The log stays bounded even when the thread falls behind (a slow disk, a starved core): past twice the restart
   * size, writers wait until it has copied everything (they wait for it to restart the log, as SQLite's automatic
   * checkpoint would have made the commit wait, only asynchronously).
   */
  #bounded(): void {
    let size: number;
    try {
      size = statSync(`${this.location}-wal`).size;
    } catch {
      return;
    }
    if (size <= 2 * this.#walLimit) return;
    this.#checkpointer!.pause();
    this.#throttled++;
  }

  /**
   * What the checkpoint thread did (undefined before it started, and in memory), with how often the log outgrew
   * its bound (writers then waited for the thread).
   */
  checkpointStats(): (CheckpointStats & { outgrown: number }) | undefined {
    return this.#checkpointer ? { ...this.#checkpointer.stats(), outgrown: this.#throttled } : undefined;
  }

  /** Resolves when an asynchronous commit may go on (undefined: at once), while the log restarts. */
  checkpointPause(): Promise<unknown> | undefined {
    return this.#checkpointer?.paused();
  }

  #migrate(): void {
    const version = this.#db.pragma('user_version', { simple: true }) as number;
    if (version > MIGRATIONS.length) {
      throw new Error(`store schema version ${version} is newer than this Berth (${MIGRATIONS.length})`);
    }
    const apply = this.#db.transaction(() => {
      for (let v = version; v < MIGRATIONS.length; v++) this.#db.exec(MIGRATIONS[v]!);
      this.#db.pragma(`user_version = ${MIGRATIONS.length}`);
    });
    apply();
  }

  #published(entries: RingEntry[]): void {
    this.#seq = entries[entries.length - 1]!.seq;
    for (const e of entries) this.#ring.push(e);
    if (this.#ring.length > this.#retention * 2) this.#ring = this.#ring.slice(-this.#retention);
    if (this.#subscriptions.size > 0 && !this.#waking) {
      // After this turn of the event loop, as a database notification would arrive: listeners never run inside a
      // commit, and the committing follower applies its own writes first, from the values it holds (the feed then
      // skips them by generation instead of parsing them); the commits of one turn go out as one batch.
      this.#waking = true;
      setImmediate(() => {
        this.#waking = false;
        for (const s of this.#subscriptions) void s.wake(this.#seq);
      });
    }
  }

  load<V = unknown>(kind: string): Array<StoredRecord<V>> {
    this.#settle();
    return this.#select.all(kind).map((row) => ({
      key: row.key,
      value: JSON.parse(row.value) as V,
      generation: row.generation,
    }));
  }

  get<V = unknown>(kind: string, key: string): StoredRecord<V> | undefined {
    this.#settle();
    const row = this.#selectOne.get(kind, key);
    return row ? { key, value: JSON.parse(row.value) as V, generation: row.generation } : undefined;
  }

  /** One commit in a transaction of its own, after the open group's (if any). */
  commit(writes: readonly StoreWrite[], expect: readonly StoreExpectation[] = []): number[] {
    this.#checkpointer?.waitSync();
    this.#settle();
    const { generations, entries } = this.#apply(writes, expect, this.#seq);
    // Committed: only now does memory move on.
    this.#durable(entries);
    return generations;
  }

  /** Every record of every kind, values as the stored JSON text, in (kind, key) order (for store:copy). */
  *exportRecords(): Generator<{ kind: string; key: string; json: string; generation: number }> {
    this.#settle();
    yield* this.#db.prepare('SELECT kind, key, value AS json, generation FROM records ORDER BY kind, key')
      .iterate() as Iterable<{ kind: string; key: string; json: string; generation: number }>;
  }

  /** The seq of the newest committed change. */
  sequence(): number {
    if (!this.#db.open) throw new TypeError('The database connection is not open');
    return this.#seq;
  }

  snapshot(kinds: readonly string[]): StoreSnapshot {
    // One connection, synchronous reads: nothing can commit in between.
    this.#settle();
    const records = new Map<string, StoredRecord[]>();
    for (const kind of kinds) records.set(kind, this.load(kind));
    return { seq: this.sequence(), records };
  }

  /** The feed of this process's commits (see AsyncStore.subscribe). */
  subscribe(fromSeq: number, listener: ChangeListener): Subscription {
    if (!this.#db.open) throw new TypeError('The database connection is not open');
    const subscription: FeedSubscription = new FeedSubscription({
      read: async (after, limit) => (this.#rewound.delete(subscription) ? 'gap' : this.#read(after, limit)),
    }, fromSeq, listener, {
      onError: () => undefined,
      onClose: (s) => {
        this.#subscriptions.delete(s);
        this.#rewound.delete(s);
      },
    });
    this.#subscriptions.add(subscription);
    queueMicrotask(() => void subscription.wake());
    return subscription;
  }

  /**
   * Delivers what is new to every subscriber now (see AsyncStore.catchUp), the open group first committed: a writer
   * catching up after a conflict with a write staged in this turn learns of it so.
   */
  catchUp(): Promise<void> {
    if (this.#db.open) this.#settle();
    return Promise.all([...this.#subscriptions].map((s) => s.wake())).then(() => undefined);
  }

  #read(after: number, limit: number): FeedRead {
    if (after === this.#seq) return [];
    const first = this.#ring.length > 0 ? this.#ring[0]!.seq : this.#seq + 1;
    if (after > this.#seq || after + 1 < first) return 'gap';
    const from = after + 1 - first;
    const out: Change[] = [];
    for (let i = from; i < this.#ring.length && out.length < limit; i++) {
      out.push(new RingChange(this.#ring[i]!, this.instanceId));
    }
    return out;
  }

  status(): StoreStatus {
    return {
      backend: 'sqlite', connected: this.#db.open, following: this.#db.open, seq: this.#seq,
      position: feedPosition(this.#subscriptions, this.#seq),
    };
  }

  /** The asynchronous interface over this engine (the same object every time). */
  async(): AsyncSqliteStore {
    this.#async ??= new AsyncSqliteStore(this);
    return this.#async;
  }

  close(): void {
    if (this.#db.open) this.#settle();
    for (const s of [...this.#subscriptions]) s.close();
    // Its connection first: the main connection's close, the last, checkpoints and removes the log as before.
    this.#checkpointer?.stop();
    if (this.#db.open) {
      this.#db.close();
      this.#lock?.release();
    }
  }
}

/** The embedded store behind the AsyncStore contract. Every call does its work at once, synchronously. */
export class AsyncSqliteStore implements AsyncStore {
  readonly #engine: SqliteStore;
  constructor(engine: SqliteStore) {
    this.#engine = engine;
  }

  get location(): string {
    return this.#engine.location;
  }

  get instanceId(): string {
    return this.#engine.instanceId;
  }

  /** One process per data directory: nobody else writes. */
  readonly shared = false;

  /** The engine's synchronous methods (for tools and tests that fill a store fast). */
  get sync(): SqliteStore {
    return this.#engine;
  }

  async load<V = unknown>(kind: string): Promise<Array<StoredRecord<V>>> {
    return this.#engine.load<V>(kind);
  }

  async get<V = unknown>(kind: string, key: string): Promise<StoredRecord<V> | undefined> {
    return this.#engine.get<V>(kind, key);
  }

  async snapshot(kinds: readonly string[]): Promise<StoreSnapshot> {
    return this.#engine.snapshot(kinds);
  }

  /** Staged in this turn's group (`staged` then) and acknowledged once the group is durable. */
  async commit(writes: readonly StoreWrite[], expect: readonly StoreExpectation[] = [],
    staged?: (generations: number[]) => void): Promise<number[]> {
    // While the log restarts (checkpointer.ts) the commit waits here, not on the event loop.
    const pause = this.#engine.checkpointPause();
    if (pause) await pause;
    const { generations, durable } = this.#engine.stage(writes, expect);
    staged?.(generations);
    await durable;
    return generations;
  }

  async sequence(): Promise<number> {
    return this.#engine.sequence();
  }

  subscribe(fromSeq: number, listener: ChangeListener): Subscription {
    return this.#engine.subscribe(fromSeq, listener);
  }

  catchUp(): Promise<void> {
    return this.#engine.catchUp();
  }

  status(): StoreStatus {
    return this.#engine.status();
  }

  async close(): Promise<void> {
    this.#engine.close();
  }
}

/** The embedded store behind the asynchronous contract. */
export function openSqliteStore(dataDir: string, options: SqliteStoreOptions = {}): AsyncSqliteStore {
  return new SqliteStore(dataDir, options).async();
}
