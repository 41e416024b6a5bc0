// The embedded store: one SQLite file (WAL) under the data directory, via better-sqlite3.
// Commits are synchronous transactions, so a decision and its claim happen in one step of the event loop.
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import type { Store, StoredRecord, StoreExpectation, StoreWrite } from './store.ts';
import { StoreConflictError } from './store.ts';

export const DB_FILE = 'berth.sqlite';

/** Schema migrations, applied in order at start-up; the index + 1 is the schema version (PRAGMA user_version). */
const MIGRATIONS: readonly string[] = [
  `CREATE TABLE records (
     kind       TEXT    NOT NULL,
     key        TEXT    NOT NULL,
     value      TEXT    NOT NULL,
     generation INTEGER NOT NULL,
     PRIMARY KEY (kind, key)
   ) WITHOUT ROWID`,
];

export interface SqliteStoreOptions {
  /** "full" survives power loss; "normal" (with WAL) survives a killed process. */
  synchronous?: 'full' | 'normal';
}

export class SqliteStore implements Store {
  readonly location: string;
  readonly #db: Database.Database;
  readonly #select: Database.Statement<[string], { key: string; value: string; generation: number }>;
  readonly #selectOne: Database.Statement<[string, string], { value: string; generation: number }>;
  readonly #generation: Database.Statement<[string, string], { generation: number }>;
  readonly #upsert: Database.Statement<[string, string, string], { generation: number }>;
  readonly #delete: Database.Statement<[string, string]>;
  readonly #commit: (writes: readonly StoreWrite[], expect: readonly StoreExpectation[]) => number[];

  /** `dataDir` ":memory:" keeps nothing on disk. */
  constructor(dataDir: string, options: SqliteStoreOptions = {}) {
    if (dataDir === ':memory:') {
      this.location = ':memory:';
    } else {
      const dir = resolve(dataDir);
      mkdirSync(dir, { recursive: true });
      this.location = join(dir, DB_FILE);
    }
    this.#db = new Database(this.location);
    if (this.location !== ':memory:') this.#db.pragma('journal_mode = WAL');
    this.#db.pragma(`synchronous = ${options.synchronous === 'normal' ? 'NORMAL' : 'FULL'}`);
    this.#migrate();

    this.#select = this.#db.prepare('SELECT key, value, generation FROM records WHERE kind = ? ORDER BY key');
    this.#selectOne = this.#db.prepare('SELECT value, generation FROM records WHERE kind = ? AND key = ?');
    this.#generation = this.#db.prepare('SELECT generation FROM records WHERE kind = ? AND key = ?');
    this.#upsert = this.#db.prepare(
      `INSERT INTO records (kind, key, value, generation) VALUES (?, ?, ?, 1)
       ON CONFLICT (kind, key) DO UPDATE SET value = excluded.value, generation = records.generation + 1
       RETURNING generation`,
    );
    this.#delete = this.#db.prepare('DELETE FROM records WHERE kind = ? AND key = ?');
    this.#commit = this.#db.transaction((writes: readonly StoreWrite[], expect: readonly StoreExpectation[]) => {
      for (const e of expect) {
        const actual = this.#generation.get(e.kind, e.key)?.generation ?? 0;
        if (actual !== e.generation) throw new StoreConflictError(e, actual);
      }
      const generations: number[] = [];
      for (const w of writes) {
        if (w.value === null || w.value === undefined) {
          this.#delete.run(w.kind, w.key);
          generations.push(0);
        } else {
          generations.push(this.#upsert.get(w.kind, w.key, JSON.stringify(w.value))!.generation);
        }
      }
      return generations;
    });
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

  load<V = unknown>(kind: string): Array<StoredRecord<V>> {
    return this.#select.all(kind).map((row) => ({
      key: row.key,
      value: JSON.parse(row.value) as V,
      generation: row.generation,
    }));
  }

  get<V = unknown>(kind: string, key: string): StoredRecord<V> | undefined {
    const row = this.#selectOne.get(kind, key);
    return row ? { key, value: JSON.parse(row.value) as V, generation: row.generation } : undefined;
  }

  commit(writes: readonly StoreWrite[], expect: readonly StoreExpectation[] = []): number[] {
    return this.#commit(writes, expect);
  }

  close(): void {
    if (this.#db.open) this.#db.close();
  }
}

export function openStore(dataDir: string, options: SqliteStoreOptions = {}): Store {
  return new SqliteStore(dataDir, options);
}
