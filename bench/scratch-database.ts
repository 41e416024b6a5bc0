// A scratch PostgreSQL database for a bench: BERTH_BENCH_DATABASE_URL, else BERTH_TEST_DATABASE_URL, else
// postgres://postgres@127.0.0.1:5432/test names the server; a database is created there and dropped at the end.
import pg from 'pg';
import { redactDatabaseUrl } from '../src/store/database-url.ts';

export interface ScratchDatabase {
  /** The scratch database's URL. */
  url: string;
  /** The administration connection (on the server's own database). */
  admin: pg.Client;
  /** The server as printed (without a password). */
  server: string;
  drop(): Promise<void>;
}

/** The scratch database, or why there is none (the server is unreachable). */
export async function scratchDatabase(name: string): Promise<ScratchDatabase | { skipped: string }> {
  const adminUrl = process.env.BERTH_BENCH_DATABASE_URL || process.env.BERTH_TEST_DATABASE_URL ||
    'postgres://postgres@127.0.0.1:5432/test';
  const server = redactDatabaseUrl(adminUrl);
  const admin = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 3000 });
  admin.on('error', () => undefined);
  try {
    await admin.connect();
  } catch (err) {
    return { skipped: `PostgreSQL at ${server} unreachable (${(err as Error).message})` };
  }
  const database = `${name}_${process.pid}`;
  await admin.query(`CREATE DATABASE ${database}`);
  const u = new URL(adminUrl);
  u.pathname = `/${database}`;
  return {
    url: u.toString(), admin, server,
    drop: async () => {
      await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
      await admin.end();
    },
  };
}
