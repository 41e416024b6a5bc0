// Tests against a real PostgreSQL server: BERTH_TEST_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test)
// names an existing database the tests may connect to and create databases from. Each test gets its own database,
// dropped at teardown. Without a reachable server a file that needs it is skipped with one line; with
// BERTH_REQUIRE_POSTGRES=1 (CI) an unreachable server fails the file instead.
import { randomBytes } from 'node:crypto';
import { createServer, connect, type Server, type Socket } from 'node:net';
import pg from 'pg';
import { redactDatabaseUrl } from '../../src/store/database-url.ts';

const TEST_DATABASE_URL = process.env.BERTH_TEST_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test';
const POSTGRES_REQUIRED = process.env.BERTH_REQUIRE_POSTGRES === '1';

interface FileTest {
  plan(n: number, comment?: string): void;
  fail(message: string): void;
}

interface Teardown {
  teardown(fn: () => unknown): void;
}

/** Runs one query on the administration database (BERTH_TEST_DATABASE_URL). */
export async function adminQuery<R extends pg.QueryResultRow = pg.QueryResultRow>(
  text: string, values: unknown[] = [], url = TEST_DATABASE_URL,
): Promise<pg.QueryResult<R>> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  client.on('error', () => undefined);
  await client.connect();
  try {
    return await client.query<R>(text, values);
  } finally {
    await client.end();
  }
}

/**
 * Call once at the top of a test file whose tests all need PostgreSQL. True when the server answers. Otherwise
 * the file is planned as skipped with one line naming the URL and the reason, or fails under
 * BERTH_REQUIRE_POSTGRES=1.
 */
export async function requirePostgres(t: FileTest): Promise<boolean> {
  try {
    await adminQuery('SELECT 1');
    return true;
  } catch (err) {
    const where = `PostgreSQL at ${redactDatabaseUrl(TEST_DATABASE_URL)} is unreachable (${(err as Error).message})`;
    if (POSTGRES_REQUIRED) {
      t.fail(`${where}, and BERTH_REQUIRE_POSTGRES=1 requires it`);
    } else {
      t.plan(0, `${where}: PostgreSQL tests skipped (set BERTH_REQUIRE_POSTGRES=1 to make this a failure)`);
    }
    return false;
  }
}

/** TEST_DATABASE_URL pointing at another database (and optionally host/port, e.g. a proxy). */
export function databaseUrl(database: string, at?: { host: string; port: number }): string {
  const u = new URL(TEST_DATABASE_URL);
  u.pathname = `/${database}`;
  if (at) {
    u.hostname = at.host;
    u.port = String(at.port);
  }
  return u.toString();
}

/** A new empty database for one test, dropped at teardown (WITH FORCE: connections left open do not block it). */
export async function createTestDatabase(t: Teardown): Promise<{ name: string; url: string }> {
  const name = `berth_test_${process.pid}_${randomBytes(4).toString('hex')}`;
  await adminQuery(`CREATE DATABASE ${name}`);
  t.teardown(() => adminQuery(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
  return { name, url: databaseUrl(name) };
}

/** How the proxy treats connections: pass them on, reset them at once, or accept and never answer. */
export type ProxyMode = 'forward' | 'reset' | 'blackhole';

/**
 * A TCP proxy in front of the test server, to take "the database" away and give it back without touching the
 * real server (which other tests share). 'reset' also cuts every open connection; 'blackhole' also silences the
 * open ones (nothing passes any more, nothing is closed); back to 'forward' cuts the silenced ones.
 */
export async function startProxy(t: Teardown): Promise<{
  host: string;
  port: number;
  setMode(mode: ProxyMode): void;
}> {
  const target = new URL(TEST_DATABASE_URL);
  const targetHost = target.hostname;
  const targetPort = Number(target.port || 5432);
  let mode: ProxyMode = 'forward';
  const open = new Set<Socket>();
  const pairs = new Set<[Socket, Socket]>();
  const server: Server = createServer((socket) => {
    socket.on('error', () => undefined);
    if (mode === 'reset') {
      socket.resetAndDestroy();
      return;
    }
    open.add(socket);
    socket.once('close', () => open.delete(socket));
    if (mode === 'blackhole') return;
    const upstream = connect(targetPort, targetHost);
    upstream.on('error', () => socket.destroy());
    socket.on('close', () => upstream.destroy());
    upstream.on('close', () => socket.destroy());
    open.add(upstream);
    const pair: [Socket, Socket] = [socket, upstream];
    pairs.add(pair);
    upstream.once('close', () => {
      open.delete(upstream);
      pairs.delete(pair);
    });
    socket.pipe(upstream);
    upstream.pipe(socket);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => {
    for (const s of open) s.destroy();
    server.close(() => resolve());
  }));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('proxy has no port');
  return {
    host: '127.0.0.1',
    port: address.port,
    setMode(next: ProxyMode) {
      const previous = mode;
      mode = next;
      if (next === 'blackhole') {
        for (const [a, b] of pairs) {
          a.unpipe(b);
          b.unpipe(a);
          a.pause();
          b.pause();
        }
      } else if (next === 'reset' || previous === 'blackhole') {
        for (const s of open) s.resetAndDestroy();
      }
    },
  };
}
