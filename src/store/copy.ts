// store:copy: moves an embedded store (a data directory) into an empty PostgreSQL database, generations and feed
// position kept, for a user who outgrows one machine. The data directory is locked while it is read, so a
// running Berth on it makes the copy refuse rather than copy a moving target.
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import pg from 'pg';
import { redactDatabaseUrl } from './database-url.ts';
import { migrate } from './postgres-schema.ts';
import { DB_FILE, SqliteStore } from './sqlite.ts';

/** The target already holds data: store:copy only fills an empty database. */
class CopyTargetNotEmptyError extends Error {
  constructor(location: string, records: number, seq: number) {
    super(`${location} is not empty (${records} records, feed at seq ${seq}); store:copy only fills an empty database`);
    this.name = 'CopyTargetNotEmptyError';
  }
}

export interface CopyResult {
  records: number;
  kinds: number;
  /** The feed position of the target after the copy (the source's sequence). */
  seq: number;
}

const BATCH = 1000;

export async function copySqliteToPostgres(fromDir: string, url: string): Promise<CopyResult> {
  const file = join(resolve(fromDir), DB_FILE);
  if (!existsSync(file)) throw new Error(`no Berth store in ${resolve(fromDir)} (${DB_FILE} is missing)`);
  const source = new SqliteStore(fromDir);
  const location = redactDatabaseUrl(url);
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 10_000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await migrate(client);
    await client.query('BEGIN');
    try {
      // No instance may write while the copy runs; an instance that starts meanwhile waits for the commit.
      await client.query('LOCK TABLE records, feed, changes IN EXCLUSIVE MODE');
      const { rows: [held] } = await client.query<{ records: string; seq: string; changes: string }>(
        `SELECT (SELECT count(*) FROM records) AS records, (SELECT seq FROM feed WHERE id = 1) AS seq,
                (SELECT count(*) FROM changes) AS changes`);
      if (Number(held!.records) > 0 || Number(held!.seq) > 0 || Number(held!.changes) > 0) {
        throw new CopyTargetNotEmptyError(location, Number(held!.records), Number(held!.seq));
      }
      const kinds = new Set<string>();
      let records = 0;
      let batch: Array<{ kind: string; key: string; json: string; generation: number }> = [];
      const flush = async () => {
        if (batch.length === 0) return;
        await client.query(
          `INSERT INTO records (kind, key, value, generation)
           SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[])`,
          [batch.map((r) => r.kind), batch.map((r) => r.key), batch.map((r) => r.json), batch.map((r) => r.generation)]);
        batch = [];
      };
      for (const row of source.exportRecords()) {
        kinds.add(row.kind);
        records++;
        batch.push(row);
        if (batch.length >= BATCH) await flush();
      }
      await flush();
      // Generations are drawn from the feed sequence, so it must start above every copied one.
      const seq = source.sequence();
      await client.query('UPDATE feed SET seq = $1 WHERE id = 1', [seq]);
      await client.query('COMMIT');
      return { records, kinds: kinds.size, seq };
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    }
  } finally {
    await client.end().catch(() => undefined);
    source.close();
  }
}
