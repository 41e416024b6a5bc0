// The embedded store: the contract every store passes, plus what only SQLite does (the data-directory lock, the
// phase-1 synchronous interface, schema upgrades of existing files, durability under SIGKILL).
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import t from 'tap';
import {
  DataDirLockedError, DB_FILE, openSqliteStore, PID_FILE, SqliteStore,
} from '../../src/store/sqlite.ts';
import { RESTART_FRAMES } from '../../src/store/checkpointer.ts';
import { StoreConflictError } from '../../src/store/store.ts';
import { collector, storeContract } from './contract.ts';

for (const synchronous of ['full', 'normal'] as const) {
  t.test(`the store contract, on a SQLite file (synchronous=${synchronous})`, async (t) => {
    storeContract(t, async (t) => {
      const dir = t.testdir();
      return { open: async () => openSqliteStore(dir, { synchronous }) };
    });
  });
}

t.test(':memory: keeps nothing and locks nothing', async (t) => {
  const a = openSqliteStore(':memory:');
  const b = openSqliteStore(':memory:');
  t.teardown(async () => { await a.close(); await b.close(); });
  t.equal(a.location, ':memory:');
  await a.commit([{ kind: 'k', key: 'x', value: 1 }]);
  t.same(await b.load('k'), [], 'two in-memory stores are separate');
});

t.test('one process per data directory: a second open names the holder', async (t) => {
  const dir = join(t.testdir(), 'nested', 'data');
  const first = openSqliteStore(dir);
  t.equal(first.location, join(dir, DB_FILE), 'data dir created');
  t.equal(readFileSync(join(dir, PID_FILE), 'utf8').trim(), String(process.pid), 'the holder pid is recorded');
  const err = (() => { try { new SqliteStore(dir); } catch (e) { return e; } })();
  t.ok(err instanceof DataDirLockedError, 'refused');
  t.match(err, { dataDir: dir, pid: process.pid, message: new RegExp(`^data_dir ${dir} is in use by another Berth process \\(pid ${process.pid}, this process\\)`) });
  t.throws(() => new SqliteStore(dir), DataDirLockedError, 'the engine itself is locked out too');
  await first.close();
  t.notOk(existsSync(join(dir, PID_FILE)), 'a clean close removes the pid file');
  const again = openSqliteStore(dir);
  await again.close();
  t.pass('free again after close');
});

t.test('phase 1: the synchronous interface and the asynchronous one share one engine', async (t) => {
  const engine = new SqliteStore(t.testdir());
  const store = engine.async();
  t.teardown(() => store.close());
  t.equal(engine.async(), store, 'one AsyncStore per engine');
  t.equal(store.sync, engine);
  const seen = collector();
  store.subscribe(engine.sequence(), seen.listener);
  const [g] = engine.commit([{ kind: 'pool', key: 'p', value: { free: 1 } }]);
  t.same(await store.get('pool', 'p'), { key: 'p', value: { free: 1 }, generation: g });
  t.throws(() => engine.commit([{ kind: 'pool', key: 'p', value: 0 }], [{ kind: 'pool', key: 'p', generation: g! + 1 }]), StoreConflictError);
  await store.commit([{ kind: 'pool', key: 'p', value: { free: 0 } }], [{ kind: 'pool', key: 'p', generation: g! }]);
  await seen.until(g! + 1);
  t.same(seen.changes.map((c) => c.value), [{ free: 1 }, { free: 0 }], 'the feed sees commits from both');
  t.same(engine.load('pool'), await store.load('pool'));
});

t.test('a subscriber further behind than the in-memory feed is told to reload', async (t) => {
  const store = openSqliteStore(':memory:', { feedRetention: 3 });
  t.teardown(() => store.close());
  for (let i = 0; i < 10; i++) await store.commit([{ kind: 'k', key: `k${i}`, value: i }]);
  const seen = collector({ reload: async () => (await store.snapshot(['k'])).seq });
  store.subscribe(0, seen.listener);
  await seen.until(10);
  t.equal(seen.reloads, 1, 'reload, since changes 1..6 are gone');
  t.same(seen.changes, [], 'nothing older is delivered after the reload');
  await store.commit([{ kind: 'k', key: 'next', value: 11 }]);
  await seen.until(11);
  t.same(seen.changes.map((c) => c.seq), [11], 'delivery resumes after the snapshot');

  const ahead = collector({ reload: async () => store.sequence() });
  store.subscribe(1000, ahead.listener);
  await store.commit([{ kind: 'k', key: 'x', value: 1 }]);
  await ahead.until(12);
  t.equal(ahead.reloads, 1, 'a position ahead of the store (another database?) reloads too');
});

t.test('a file written by schema version 1 (per-record generations) upgrades with generations kept and raised', async (t) => {
  const dir = t.testdir();
  const db = new Database(join(dir, DB_FILE));
  db.exec(`CREATE TABLE records (kind TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, generation INTEGER NOT NULL,
    PRIMARY KEY (kind, key)) WITHOUT ROWID`);
  db.prepare('INSERT INTO records VALUES (?, ?, ?, ?)').run('pool', 'p', '{"free":1}', 7);
  db.prepare('INSERT INTO records VALUES (?, ?, ?, ?)').run('pool', 'q', '{"free":2}', 3);
  db.pragma('user_version = 1');
  db.close();
  const store = openSqliteStore(dir);
  t.teardown(() => store.close());
  t.same(await store.load('pool'), [
    { key: 'p', value: { free: 1 }, generation: 7 },
    { key: 'q', value: { free: 2 }, generation: 3 },
  ]);
  t.equal(await store.sequence(), 7, 'the sequence starts at the highest generation');
  const [q] = await store.commit([{ kind: 'pool', key: 'q', value: { free: 0 } }], [{ kind: 'pool', key: 'q', generation: 3 }]);
  t.equal(q, 8, 'the next write is above every old generation');
});

t.test('refuses a store written by a newer Berth', async (t) => {
  const dir = t.testdir();
  await openSqliteStore(dir).close();
  const db = new Database(join(dir, DB_FILE));
  db.pragma('user_version = 999');
  db.close();
  t.throws(() => openSqliteStore(dir), /newer than this Berth/);
  t.notOk(existsSync(join(dir, PID_FILE)), 'and does not keep the directory locked');
  openSqliteStore(':memory:');
});

t.test('every acknowledged write survives SIGKILL', async (t) => {
  const dir = t.testdir();
  const child = spawn(process.execPath, ['--import', 'tsx', join(import.meta.dirname, '..', 'fixtures', 'store-writer.ts'), dir], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let lastAck = -1;
  let buffered = '';
  await new Promise<void>((resolve, reject) => {
    child.on('error', reject);
    child.stdout!.on('data', (chunk: Buffer) => {
      buffered += chunk.toString();
      const lines = buffered.split('\n');
      buffered = lines.pop()!;
      for (const line of lines) {
        const m = /^ack (\d+)$/.exec(line);
        if (m) lastAck = Number(m[1]);
      }
      if (lastAck >= 200 && !child.killed) {
        child.kill('SIGKILL');
        resolve();
      }
    });
  });
  await new Promise((resolve) => child.once('exit', resolve));
  t.equal(child.signalCode, 'SIGKILL');
  const store = new SqliteStore(dir);
  t.teardown(() => store.close());
  t.pass('the directory lock died with the process');
  const claims = store.load<{ i: number }>('test.claim');
  t.ok(claims.length >= lastAck + 1, `all ${lastAck + 1} acknowledged claims are there (found ${claims.length})`);
  for (let i = 0; i <= lastAck; i++) {
    if (claims[i]?.value.i !== i) { t.fail(`claim ${i} missing`); break; }
  }
  const pool = store.get<{ allocated: number }>('test.pool', 'p')!;
  t.equal(pool.value.allocated, claims.length * 10, 'pool figure and claims were committed together');
});

t.test('sustained commits keep the WAL file under its bound, its checkpoints off the event loop', async (t) => {
  const dir = t.testdir();
  const engine = new SqliteStore(dir, { synchronous: 'normal' });
  const store = engine.async();
  t.teardown(() => store.close());
  const wal = `${engine.location}-wal`;
  const pageSize = 4096;
  // The bound the store keeps: the restart size, twice over before the event loop steps in, plus what the commits
  // between two looks add. Without restarts this test's log would reach hundreds of MiB.
  const bound = 3 * RESTART_FRAMES * (pageSize + 24);
  const padding = 'x'.repeat(600);
  let largest = 0;
  for (let i = 0; i < 15_000; i++) {
    // Keys spread over the tree, so that each commit writes several pages, as a claim does.
    await store.commit([
      { kind: 'claim', key: `c${(i * 7919) % 50_000}`, value: { i, padding } },
      { kind: 'claim', key: `d${(i * 104_729) % 50_000}`, value: { i, padding } },
      { kind: 'volume', key: `v${(i * 15_485_863) % 50_000}`, value: i },
    ]);
    if (i % 500 === 0) {
      // A server turns its event loop between requests; so does this writer now and then.
      await new Promise((resolve) => setImmediate(resolve));
      if (existsSync(wal)) largest = Math.max(largest, statSync(wal).size);
    }
  }
  largest = Math.max(largest, statSync(wal).size);
  t.ok(largest <= bound, `the WAL file stayed at most ${(largest / 2 ** 20).toFixed(1)} MiB (bound ${(bound / 2 ** 20).toFixed(1)} MiB)`);
  t.ok(engine.checkpointStats()!.checkpoints > 0, 'the checkpoint thread checkpointed');
  t.equal(store.sync.load('claim').length > 0 && (await store.get('volume', `v${(14_999 * 15_485_863) % 50_000}`))?.value, 14_999,
    'the last commit is there');
  await store.close();
  t.notOk(existsSync(wal), 'a clean close still checkpoints and removes the log');
  const reopened = openSqliteStore(dir);
  t.equal((await reopened.get('volume', `v${(14_999 * 15_485_863) % 50_000}`))?.value, 14_999, 'and everything is in the database');
  await reopened.close();
});
