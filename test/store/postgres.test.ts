// The PostgreSQL store against a real server: the store contract, then what only a shared database does (the
// feed between instances, catching up, reloading after pruning, migrations racing, outages, claims racing), and
// store:copy. Each test has its own database. Without a server this file is skipped with one line.
import { join } from 'node:path';
import pg from 'pg';
import t, { type Test } from 'tap';
import { parseConfig } from '../../src/config.ts';
import { copySqliteToPostgres } from '../../src/store/copy.ts';
import { openConfiguredStore } from '../../src/store/open.ts';
import { MIGRATION_LOCK_KEY } from '../../src/store/postgres-schema.ts';
import { openPostgresStore, PostgresStore, type PostgresStoreOptions } from '../../src/store/postgres.ts';
import { openSqliteStore, SqliteStore } from '../../src/store/sqlite.ts';
import { StoreConflictError, StoreUnavailableError, type AsyncStore } from '../../src/store/store.ts';
import { runToExit } from '../process-helper.ts';
import { collector, storeContract } from './contract.ts';
import { adminQuery, createTestDatabase, databaseUrl, requirePostgres, startProxy } from './postgres-helper.ts';

/** A store for one test, closed at its end; fast reconnects so outages heal quickly. */
async function open(t: Test, url: string, options: Partial<PostgresStoreOptions> = {}): Promise<PostgresStore> {
  const store = await openPostgresStore({ url, poolSize: 3, reconnectMinMs: 10, reconnectMaxMs: 100, ...options });
  t.teardown(() => store.close());
  return store;
}

/** Waits (without a deadline: tap's timeout is the bound) until `check` holds. */
async function eventually(check: () => boolean | Promise<boolean>): Promise<void> {
  while (!(await check())) await new Promise((r) => setTimeout(r, 10));
}

function unavailable(err: unknown): boolean {
  return err instanceof StoreUnavailableError;
}

/** Runs a TypeScript file of the repository with node + tsx. */
function run(args: string[]) {
  return runToExit(['--import', 'tsx', ...args]);
}

if (await requirePostgres(t)) {
  t.test('the store contract, on PostgreSQL', async (t) => {
    storeContract(t, async (t) => {
      const db = await createTestDatabase(t);
      return { open: () => openPostgresStore({ url: db.url, poolSize: 4 }) };
    });
  });

  t.test('the feed carries every instance\'s writes to the others, in one order, with their origin', async (t) => {
    const { url } = await createTestDatabase(t);
    const a = await open(t, url);
    const b = await open(t, url);
    t.not(a.instanceId, b.instanceId);
    const seenA = collector();
    const seenB = collector();
    a.subscribe(0, seenA.listener);
    b.subscribe(0, seenB.listener);
    const writes = await Promise.all(Array.from({ length: 20 }, (_, i) =>
      (i % 2 === 0 ? a : b).commit([{ kind: 'k', key: `w${i}`, value: { i } }])));
    const last = Math.max(...writes.flat());
    await Promise.all([seenA.until(last), seenB.until(last)]);
    t.equal(last, 20);
    t.same(seenA.changes, seenB.changes, 'both instances see the same changes in the same order');
    t.same(seenA.changes.map((c) => c.seq), Array.from({ length: 20 }, (_, i) => i + 1), 'seq 1..20, no gap');
    for (const c of seenA.changes) {
      const i = (c.value as { i: number }).i;
      t.equal(c.origin, i % 2 === 0 ? a.instanceId : b.instanceId, `origin of ${c.key}`);
    }
    t.equal(seenB.changes.filter((c) => c.origin !== b.instanceId).length, 10, 'an instance can tell its own writes');
    t.equal(a.status().seq, 20);
  });

  t.test('a change whose notification never came is read by the safety poll', async (t) => {
    const { url } = await createTestDatabase(t);
    const polled = await open(t, url, { pollIntervalMs: 20 });
    const asked = await open(t, url, { pollIntervalMs: 3_600_000 });
    const viaPoll = collector();
    const viaCatchUp = collector();
    polled.subscribe(0, viaPoll.listener);
    asked.subscribe(0, viaCatchUp.listener);
    // What berth_commit writes, without its NOTIFY: as if the notification had been lost.
    await adminQuery(`BEGIN;
      INSERT INTO records (kind, key, value, generation) VALUES ('k', 'silent', '"quiet"', 1);
      INSERT INTO changes (seq, kind, key, value, generation, origin) VALUES (1, 'k', 'silent', '"quiet"', 1, 'elsewhere');
      UPDATE feed SET seq = 1;
      COMMIT`, [], url);
    await viaPoll.until(1);
    t.same(viaPoll.changes.map((c) => [c.key, c.value, c.origin]), [['silent', 'quiet', 'elsewhere']]);
    t.same(viaCatchUp.changes, [], 'without a poll or a notification nothing arrives');
    await asked.catchUp();
    t.same(viaCatchUp.changes.map((c) => c.seq), [1], 'catchUp() reads what was missed');
  });

  t.test('after its connections are cut, an instance refuses writes at once, then catches up from its last sequence', async (t) => {
    const { name, url } = await createTestDatabase(t);
    const proxy = await startProxy(t);
    const direct = await open(t, url);
    const behind = await open(t, databaseUrl(name, proxy));
    const seen = collector();
    behind.subscribe(0, seen.listener);
    await direct.commit([{ kind: 'k', key: 'before', value: 0 }]);
    await seen.until(1);

    proxy.setMode('reset');
    await eventually(() => !behind.status().following);
    t.match(behind.status(), { connected: false, following: false }, 'not ready while cut off');
    t.match(behind.status().error, /change feed connection lost/);
    const missed = [];
    for (let i = 0; i < 3; i++) missed.push(...await direct.commit([{ kind: 'k', key: `missed${i}`, value: i }]));
    await t.rejects(behind.commit([{ kind: 'k', key: 'refused', value: 1 }]), StoreUnavailableError, 'a commit fails fast');
    await t.rejects(behind.load('k'), StoreUnavailableError, 'so does a read');
    t.same(seen.changes.map((c) => c.key), ['before'], 'nothing arrives while cut off');

    proxy.setMode('forward');
    await seen.until(missed[2]!);
    t.same(seen.changes.map((c) => c.key), ['before', 'missed0', 'missed1', 'missed2'], 'caught up, in order');
    await eventually(() => behind.status().following);
    t.match(behind.status(), { connected: true, following: true, seq: 4 });
    t.notOk(behind.status().error);
    const [g] = await behind.commit([{ kind: 'k', key: 'after', value: 1 }]);
    t.equal(g, 5, 'writes again');
    t.equal(await direct.get('k', 'refused'), undefined, 'the refused commit wrote nothing');
  });

  t.test('a subscriber behind the pruned part of the feed is told to reload, then follows', async (t) => {
    const { url } = await createTestDatabase(t);
    const a = await open(t, url, { feedRetention: 5 });
    for (let i = 1; i <= 20; i++) await a.commit([{ kind: 'k', key: `k${i}`, value: i }]);
    t.equal(await a.prune(), 15, 'keeps the newest 5 changes');
    t.equal(await a.prune(), 0);
    const b = await open(t, url);
    let snapshot: Awaited<ReturnType<AsyncStore['snapshot']>> | undefined;
    const seen = collector({ reload: async () => { snapshot = await b.snapshot(['k']); return snapshot.seq; } });
    b.subscribe(3, seen.listener);
    await seen.until(20);
    t.equal(seen.reloads, 1, 'changes 4..15 are gone: reload');
    t.equal(snapshot?.records.get('k')?.length, 20, 'the reload sees everything');
    t.same(seen.changes, []);
    await a.commit([{ kind: 'k', key: 'k21', value: 21 }]);
    await seen.until(21);
    t.same(seen.changes.map((c) => c.seq), [21], 'then changes follow from the snapshot on');

    const within = collector();
    b.subscribe(15, within.listener);
    await within.until(21);
    t.equal(within.reloads, 0, 'a subscriber within retention does not reload');
    t.same(within.changes.map((c) => c.seq), [16, 17, 18, 19, 20, 21]);
  });

  t.test('migrations: three processes starting at once apply each migration exactly once', async (t) => {
    const { name, url } = await createTestDatabase(t);
    // Hold the migration lock so that all three are surely waiting for it, then let them race.
    const holder = new pg.Client({ connectionString: url });
    await holder.connect();
    t.teardown(() => holder.end());
    await holder.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
    const children = [0, 1, 2].map(() => run([join('test', 'fixtures', 'pg-open.ts'), url]));
    await eventually(async () => {
      const { rows } = await adminQuery<{ n: string }>(
        `SELECT count(*) AS n FROM pg_locks l JOIN pg_database d ON d.oid = l.database
          WHERE l.locktype = 'advisory' AND NOT l.granted AND d.datname = $1`, [name]);
      return Number(rows[0]!.n) === 3;
    });
    await holder.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]);
    const results = await Promise.all(children);
    t.same(results.map((r) => r.code), [0, 0, 0], results.map((r) => r.stderr).join(''));
    const applied = results.map((r) => r.stdout.trim()).sort();
    t.same(applied, ['opened [1]', 'opened []', 'opened []'], 'one applied the schema, two found it applied');
    const { rows } = await adminQuery<{ version: number }>('SELECT version FROM schema_migrations ORDER BY version', [], url);
    t.same(rows.map((r) => r.version), [1]);
  });

  t.test('refuses a database whose schema is newer than this Berth', async (t) => {
    const { url } = await createTestDatabase(t);
    await (await openPostgresStore({ url, poolSize: 1 })).close();
    await adminQuery(`INSERT INTO schema_migrations (version, name) VALUES (99, 'from the future')`, [], url);
    await t.rejects(openPostgresStore({ url, poolSize: 1 }), /store schema version 99 is newer than this Berth \(1\)/);
  });

  t.test('backends terminated by the server: the store answers (no hang) and recovers by itself', async (t) => {
    const { url } = await createTestDatabase(t);
    const store = await open(t, url);
    const seen = collector();
    store.subscribe(0, seen.listener);
    await store.commit([{ kind: 'k', key: 'a', value: 1 }]);
    await seen.until(1);
    const { rows } = await adminQuery<{ n: number }>(
      `SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity WHERE application_name = $1`,
      [`berth ${store.instanceId}`]);
    t.ok(rows[0]!.n >= 2, `terminated ${rows[0]!.n} backends (the pool and the LISTEN connection)`);
    // A commit racing the termination may be refused with StoreUnavailableError, never anything else.
    const first = await store.commit([{ kind: 'k', key: 'b', value: 2 }]).then(() => 'ok', (err: unknown) => err);
    t.ok(first === 'ok' || unavailable(first), `first commit after the cut: ${String(first)}`);
    await eventually(async () => (await store.commit([{ kind: 'k', key: 'c', value: 3 }]).then(() => true, () => false)));
    await eventually(() => store.status().following);
    const c = await store.get('k', 'c');
    await seen.until(c!.generation);
    t.same(seen.changes.map((x) => x.key).filter((k) => k !== 'b'), ['a', 'c'], 'the feed resumed without losing a change');
  });

  t.test('a database that stops answering: operations fail within the timeouts, then recover', async (t) => {
    const { name } = await createTestDatabase(t);
    const proxy = await startProxy(t);
    const store = await open(t, databaseUrl(name, proxy), { statementTimeoutMs: 200, connectTimeoutMs: 200 });
    await store.commit([{ kind: 'k', key: 'a', value: 1 }]);
    proxy.setMode('blackhole');
    const err = await store.commit([{ kind: 'k', key: 'b', value: 2 }]).catch((e: unknown) => e);
    t.ok(unavailable(err), `the commit is refused, not left hanging: ${String(err)}`);
    const read = await store.get('k', 'a').catch((e: unknown) => e);
    t.ok(unavailable(read), `a read too (a new connection times out): ${String(read)}`);
    t.equal(store.status().connected, false);
    proxy.setMode('forward');
    await eventually(async () => (await store.get('k', 'a').then(() => true, () => false)));
    t.same((await store.get('k', 'a'))?.value, 1);
    await eventually(() => store.status().following);
  });

  t.test('a statement that waits past statement_timeout is cancelled: StoreUnavailableError, nothing written', async (t) => {
    const { url } = await createTestDatabase(t);
    const store = await open(t, url, { statementTimeoutMs: 200 });
    await store.commit([{ kind: 'k', key: 'a', value: 1 }]);
    const blocker = new pg.Client({ connectionString: url });
    await blocker.connect();
    t.teardown(() => blocker.end());
    await blocker.query('BEGIN');
    await blocker.query('SELECT seq FROM feed WHERE id = 1 FOR UPDATE');
    await t.rejects(store.commit([{ kind: 'k', key: 'b', value: 2 }]),
      { name: 'StoreUnavailableError', message: /did not answer within 200 ms/ });
    await blocker.query('ROLLBACK');
    t.equal(await store.get('k', 'b'), undefined);
    t.ok(await store.commit([{ kind: 'k', key: 'b', value: 2 }]), 'and works once the lock is gone');
    t.equal(store.status().connected, true, 'a timeout is not an outage of the connection');
  });

  t.test('a deadlock is retried inside the store', async (t) => {
    const { url } = await createTestDatabase(t);
    // Whoever's deadlock_timeout expires while the cycle exists aborts itself: make that the store (3 s, well
    // after the partner starts waiting), never the partner (60 s).
    const store = await open(t, `${url}?options=${encodeURIComponent('-c deadlock_timeout=3s')}`);
    await store.commit([{ kind: 'k', key: 'x', value: 'first' }]);
    const other = new pg.Client({ connectionString: url, application_name: 'deadlock partner' });
    await other.connect();
    t.teardown(() => other.end());
    await other.query(`SET deadlock_timeout = '60s'`);
    // The partner holds the record; the store's commit takes the feed head and waits for the record; then the
    // partner asks for the feed head: a cycle, which PostgreSQL breaks by aborting the store's attempt.
    await other.query('BEGIN');
    await other.query(`UPDATE records SET value = '"partner"' WHERE kind = 'k' AND key = 'x'`);
    const commit = store.commit([{ kind: 'k', key: 'x', value: 'store' }]);
    await eventually(async () => {
      const { rows } = await adminQuery<{ n: string }>(
        `SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'`,
        [`berth ${store.instanceId}`]);
      return Number(rows[0]!.n) === 1;
    });
    const partner = other.query('SELECT seq FROM feed WHERE id = 1 FOR UPDATE').then(() => other.query('COMMIT'));
    const [g] = await commit;
    await partner;
    t.pass('the partner committed: the store\'s first attempt was the one aborted');
    t.ok(g! > 1, 'the store\'s commit went through on a retry');
    t.same((await store.get('k', 'x'))?.value, 'store', 'written after the partner\'s write');
  });

  t.test('two instances racing for the last capacity: exactly as many claims as fit', async (t) => {
    const { url } = await createTestDatabase(t);
    const a = await open(t, url, { poolSize: 4 });
    const b = await open(t, url, { poolSize: 4 });
    const CAPACITY = 25;
    await a.commit([{ kind: 'pool', key: 'p', value: { free: CAPACITY } }]);
    let conflicts = 0;
    // Six clients spread over both instances, each: read the pool, claim one unit expecting what it read.
    const client = async (store: AsyncStore, id: number) => {
      let mine = 0;
      for (let n = 0; ; n++) {
        const pool = (await store.get<{ free: number }>('pool', 'p'))!;
        if (pool.value.free === 0) return mine;
        try {
          await store.commit(
            [{ kind: 'claim', key: `c${id}-${n}`, value: { id } }, { kind: 'pool', key: 'p', value: { free: pool.value.free - 1 } }],
            [{ kind: 'claim', key: `c${id}-${n}`, generation: 0 }, { kind: 'pool', key: 'p', generation: pool.generation }]);
          mine++;
        } catch (err) {
          if (!(err instanceof StoreConflictError)) throw err;
          conflicts++;
        }
      }
    };
    const won = await Promise.all([0, 1, 2, 3, 4, 5].map((id) => client(id % 2 === 0 ? a : b, id)));
    t.equal(won.reduce((x, y) => x + y, 0), CAPACITY, `${won} claims: exactly the capacity`);
    t.equal((await a.load('claim')).length, CAPACITY, 'and exactly that many in the database');
    t.same((await b.get('pool', 'p'))?.value, { free: 0 }, 'never below zero');
    t.ok(conflicts > 0, `the race was real: ${conflicts} conflicts`);
  });

  t.test('the password never shows: not in location, status, errors or logs', async (t) => {
    const { name } = await createTestDatabase(t);
    const proxy = await startProxy(t);
    const secret = 'hunter2-Pa55';
    const u = new URL(databaseUrl(name, proxy));
    u.username = 'postgres';
    u.password = secret;
    const lines: string[] = [];
    const log = { info: (o: object, m: string) => lines.push(m + JSON.stringify(o)), warn: (o: object, m: string) => lines.push(m + String((o as { err?: unknown }).err) + JSON.stringify(o)) };
    const store = await open(t, u.toString(), { log, connectTimeoutMs: 200, statementTimeoutMs: 200 });
    t.equal(store.location, `postgres://postgres:***@127.0.0.1:${proxy.port}/${name}`);
    proxy.setMode('reset');
    const err = await store.commit([{ kind: 'k', key: 'x', value: 1 }]).catch((e: unknown) => e as Error);
    t.ok(unavailable(err));
    await eventually(() => !store.status().following);
    const text = [String(err), (err as Error).message, JSON.stringify(store.status()), ...lines].join('\n');
    t.match(text, /unavailable/);
    t.notMatch(text, secret, 'no password anywhere');
    proxy.setMode('forward');
  });

  t.test('openConfiguredStore: database_url picks PostgreSQL, its absence the embedded store', async (t) => {
    const { url } = await createTestDatabase(t);
    const shared = await openConfiguredStore(parseConfig({ database_url: url, database_pool_size: 2 }));
    t.teardown(() => shared.close());
    t.ok(shared instanceof PostgresStore);
    t.equal(shared.status().backend, 'postgres');
    const embedded = await openConfiguredStore(parseConfig({ data_dir: ':memory:' }));
    t.teardown(() => embedded.close());
    t.equal(embedded.status().backend, 'sqlite');
  });

  t.test('store:copy moves an embedded store into an empty database, generations kept', async (t) => {
    const dir = t.testdir();
    const source = openSqliteStore(dir);
    await source.commit([{ kind: 'pool', key: 'p', value: { free: 10, order: { z: 1, a: 2 } } }, { kind: 'vol', key: 'v1', value: 5 }]);
    await source.commit([{ kind: 'pool', key: 'p', value: { free: 5, order: { z: 1, a: 2 } } }]);
    await source.commit([{ kind: 'gone', key: 'g', value: 1 }]);
    await source.commit([{ kind: 'gone', key: 'g', value: null }]);
    for (let i = 0; i < 1500; i++) source.sync.commit([{ kind: 'many', key: `m${String(i).padStart(4, '0')}`, value: i }]);
    const expected = new Map<string, unknown>();
    for (const kind of ['pool', 'vol', 'gone', 'many']) expected.set(kind, await source.load(kind));
    const seq = await source.sequence();
    await source.close();

    const { url } = await createTestDatabase(t);
    const out = await run(['scripts/store-copy.ts', '--from', dir, '--to', url]);
    t.equal(out.code, 0, out.stderr);
    t.equal(out.stdout.trim(), `store:copy: copied 1502 records (3 kinds) from ${dir} to ${url}; feed at seq ${seq}`);
    const target = await open(t, url);
    for (const [kind, records] of expected) t.same(await target.load(kind), records, `${kind}: same records, same generations`);
    t.equal(await target.sequence(), seq, 'the feed continues from the source\'s sequence');
    const [next] = await target.commit([{ kind: 'pool', key: 'p', value: { free: 4 } }], [{ kind: 'pool', key: 'p', generation: (expected.get('pool') as Array<{ generation: number }>)[0]!.generation }]);
    t.ok(next! > seq, 'new generations are above every copied one');

    const again = await run(['scripts/store-copy.ts', '--from', dir, '--to', url]);
    t.equal(again.code, 1, 'a non-empty target is refused');
    t.match(again.stderr, /^store:copy: postgres:\/\/.* is not empty \(1502 records, feed at seq \d+\); store:copy only fills an empty database\n$/);
  });

  t.test('store:copy refuses a data directory a running Berth holds, a missing store, and bad usage', async (t) => {
    const { url } = await createTestDatabase(t);
    const dir = t.testdir();
    const held = new SqliteStore(dir);
    await t.rejects(copySqliteToPostgres(dir, url), /is in use by another Berth process/);
    held.close();
    await t.rejects(copySqliteToPostgres(join(dir, 'nowhere'), url), /no Berth store in .*nowhere \(berth\.sqlite is missing\)/);
    const usage = await run(['scripts/store-copy.ts', '--from', dir]);
    t.equal(usage.code, 2);
    t.match(usage.stderr, /usage: npm run store:copy -- --from DATA_DIR --to postgres:\/\//);
    const badUrl = await run(['scripts/store-copy.ts', '--from', dir, '--to', 'mysql://u:pw@h/db']);
    t.equal(badUrl.code, 2);
    t.match(badUrl.stderr, /--to must start with postgres:\/\//);
    t.notMatch(badUrl.stderr, /pw/, 'the URL is not echoed');
    const { rows } = await adminQuery<{ t: string | null }>(`SELECT to_regclass('records') AS t`, [], url);
    t.equal(rows[0]!.t, null, 'the refusals did not even touch the database');
  });
}
