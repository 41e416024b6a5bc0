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
import { limitFileSize } from './file-size-limit.ts';

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

/** Commit frames in a WAL file (a frame whose header gives the database size after it ends a transaction). */
function walCommits(dbFile: string): number {
  const wal = readFileSync(`${dbFile}-wal`);
  if (wal.length < 32) return 0;
  const pageSize = wal.readUInt32BE(8);
  let commits = 0;
  for (let at = 32; at + 24 + pageSize <= wal.length; at += 24 + pageSize) if (wal.readUInt32BE(at + 4) !== 0) commits++;
  return commits;
}

t.test('the commits staged in one turn share one transaction and are acknowledged once it is durable', async (t) => {
  const engine = new SqliteStore(t.testdir());
  const store = engine.async();
  t.teardown(() => store.close());
  await store.commit([{ kind: 'pool', key: 'p', value: 0 }]);
  const seen = collector();
  store.subscribe(engine.sequence(), seen.listener);
  const reader = new Database(engine.location, { readonly: true });
  t.teardown(() => reader.close());
  const durableRows = () => reader.prepare("SELECT count(*) FROM records WHERE kind = 'vol'").pluck().get();
  const commitsBefore = walCommits(engine.location);

  const a = engine.stage([{ kind: 'vol', key: 'a', value: 1 }, { kind: 'pool', key: 'p', value: 1 }], [
    { kind: 'vol', key: 'a', generation: 0 }, { kind: 'pool', key: 'p', generation: 1 }]);
  // Staged: the next commit of this store sees it (it expects the pool at the generation staged).
  await t.rejects(store.commit([{ kind: 'pool', key: 'p', value: 9 }], [{ kind: 'pool', key: 'p', generation: 1 }]), StoreConflictError,
    'a conflict with a staged write');
  let placed: number[] = [];
  const committed = store.commit([{ kind: 'vol', key: 'z', value: 0 }], [], (generations) => { placed = generations; });
  t.same(placed, [4], 'the asynchronous commit tells when its writes are in place');
  const b = engine.stage([{ kind: 'vol', key: 'b', value: 2 }, { kind: 'pool', key: 'p', value: 2 }], [
    { kind: 'vol', key: 'b', generation: 0 }, { kind: 'pool', key: 'p', generation: a.generations[1]! }]);
  t.same([a.generations, b.generations], [[2, 3], [5, 6]], 'consecutive seqs; the refused commit took none');
  t.equal(durableRows(), 0, 'not durable yet: another connection sees none of it');
  t.equal(engine.sequence(), 1, 'nor does the feed');
  t.same(seen.changes, []);

  await Promise.all([a.durable, b.durable, committed]);
  t.equal(durableRows(), 3, 'durable together');
  t.equal(walCommits(engine.location) - commitsBefore, 1, 'in one transaction');
  await seen.until(6);
  t.same(seen.changes.map((c) => [c.kind, c.key, c.value]),
    [['vol', 'a', 1], ['pool', 'p', 1], ['vol', 'z', 0], ['vol', 'b', 2], ['pool', 'p', 2]],
    'the feed carries what the turn kept, in order, without the refused commit');

  // The synchronous interface, a read or a catch-up commits an open group first.
  const c = engine.stage([{ kind: 'vol', key: 'c', value: 3 }]);
  engine.commit([{ kind: 'vol', key: 'd', value: 4 }]);
  await c.durable;
  t.same(engine.load('vol').map((r) => [r.key, r.generation]), [['a', 2], ['b', 5], ['c', 7], ['d', 8], ['z', 4]]);
  const e = engine.stage([{ kind: 'vol', key: 'e', value: 5 }]);
  await store.catchUp();
  t.equal(durableRows(), 6, 'catchUp commits the open group (a writer after a conflict learns what it conflicted with)');
  await e.durable;
});

t.test('a turn whose transaction fails refuses every commit staged in it, keeps none and makes subscribers reload', async (t) => {
  const dir = t.testdir();
  const engine = new SqliteStore(dir);
  const store = engine.async();
  t.teardown(async () => {
    limitFileSize('unlimited');
    await store.close();
  });
  await store.commit([{ kind: 'pool', key: 'p', value: 0 }]);
  const seen = collector({ reload: async () => (await store.snapshot(['pool', 'vol'])).seq });
  store.subscribe(engine.sequence(), seen.listener);

  // The log may not grow: the transaction's commit, which appends its pages to it, fails (a full disk, as SQLite sees it).
  limitFileSize(statSync(`${engine.location}-wal`).size);
  const a = engine.stage([{ kind: 'vol', key: 'a', value: 1 }, { kind: 'pool', key: 'p', value: 1 }]);
  const b = engine.stage([{ kind: 'vol', key: 'b', value: 2 }]);
  await t.rejects(a.durable, { code: /^SQLITE_(FULL|IOERR)/ }, 'refused');
  await t.rejects(b.durable, { code: /^SQLITE_(FULL|IOERR)/ }, 'every commit of the turn');
  limitFileSize('unlimited');
  await store.catchUp();
  t.equal(seen.reloads, 1, 'the subscriber was told to reload (its follower may have applied them)');
  t.same(seen.changes, [], 'and given nothing of the failed turn');
  t.same(engine.load('vol'), [], 'nothing kept');
  t.same(engine.load('pool').map((r) => [r.value, r.generation]), [[0, 1]]);
  t.equal(engine.sequence(), 1);

  const [g] = await store.commit([{ kind: 'vol', key: 'c', value: 3 }], [{ kind: 'vol', key: 'c', generation: 0 }]);
  t.equal(g, 2, 'the next commit takes the next seq');
  await seen.until(2);
  t.same(seen.changes.map((ch) => ch.key), ['c']);
  await store.close();
  const reopened = openSqliteStore(dir);
  t.same((await reopened.load('vol')).map((r) => r.key), ['c'], 'and that is what a restart finds');
  await reopened.close();
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
