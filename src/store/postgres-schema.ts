// The PostgreSQL schema, as versioned migrations applied at start-up under an advisory lock, so that several
// instances starting at once apply each migration exactly once (the others wait, then find it applied).
import type pg from 'pg';

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

/** The NOTIFY channel; the payload is the newest seq of the commit. */
export const CHANNEL = 'berth_changes';

/** pg_advisory_lock key for migrations: "berth" in ASCII. */
export const MIGRATION_LOCK_KEY = '439788893544';

/** SQLSTATE berth_commit raises when an expectation does not hold (DETAIL: "<index> <actual generation>"). */
export const CONFLICT_SQLSTATE = 'BR409';

const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'records, change feed, berth_commit',
    sql: `
      -- Keys compare bytewise (COLLATE "C"), as in SQLite, so load() orders them the same in both stores.
      CREATE TABLE records (
        kind       text COLLATE "C" NOT NULL,
        key        text COLLATE "C" NOT NULL,
        value      text   NOT NULL,
        generation bigint NOT NULL,
        PRIMARY KEY (kind, key)
      );

      -- The feed head: the newest seq. Its row lock is what orders commits (see berth_commit).
      CREATE TABLE feed (
        id  integer PRIMARY KEY CHECK (id = 1),
        seq bigint  NOT NULL
      );
      INSERT INTO feed (id, seq) VALUES (1, 0);

      -- One row per write, seq consecutive and gap-free; value NULL for a deletion. Pruned from the oldest end.
      CREATE TABLE changes (
        seq          bigint PRIMARY KEY,
        kind         text   NOT NULL,
        key          text   NOT NULL,
        value        text,
        generation   bigint NOT NULL,
        origin       text   NOT NULL,
        committed_at timestamptz NOT NULL DEFAULT now()
      );

      -- A commit in one round trip: lock the feed head, check every expectation, write the records and their
      -- changes, NOTIFY, all in the caller's (implicit) transaction. Holding the head's row lock from the first
      -- read to the commit makes seq order the commit order: a follower reading "seq > N" can never see N + 2
      -- before N + 1 has committed (with a plain sequence, numbers are taken before commit and become visible out
      -- of order), and a rolled-back commit leaves no hole, so a missing seq always means "pruned".
      -- NOTIFY already serialises committing transactions in PostgreSQL, so this costs no extra concurrency.
      CREATE FUNCTION berth_commit(
        p_kind text[], p_key text[], p_value text[],
        p_expect_kind text[], p_expect_key text[], p_expect_generation bigint[],
        p_origin text
      ) RETURNS bigint[] LANGUAGE plpgsql AS $fn$
      DECLARE
        head   bigint;
        actual bigint;
        seqs   bigint[] := '{}';
      BEGIN
        SELECT f.seq INTO head FROM feed f WHERE f.id = 1 FOR UPDATE;
        FOR i IN 1 .. coalesce(array_length(p_expect_kind, 1), 0) LOOP
          actual := NULL;
          SELECT r.generation INTO actual FROM records r WHERE r.kind = p_expect_kind[i] AND r.key = p_expect_key[i];
          IF coalesce(actual, 0) <> p_expect_generation[i] THEN
            RAISE EXCEPTION 'store conflict on %/%', p_expect_kind[i], p_expect_key[i]
              USING ERRCODE = 'BR409', DETAIL = format('%s %s', i - 1, coalesce(actual, 0));
          END IF;
        END LOOP;
        IF coalesce(array_length(p_kind, 1), 0) = 0 THEN
          RETURN seqs;
        END IF;
        FOR i IN 1 .. array_length(p_kind, 1) LOOP
          head := head + 1;
          IF p_value[i] IS NULL THEN
            DELETE FROM records r WHERE r.kind = p_kind[i] AND r.key = p_key[i];
          ELSE
            INSERT INTO records AS r (kind, key, value, generation) VALUES (p_kind[i], p_key[i], p_value[i], head)
              ON CONFLICT (kind, key) DO UPDATE SET value = excluded.value, generation = excluded.generation;
          END IF;
          INSERT INTO changes (seq, kind, key, value, generation, origin)
            VALUES (head, p_kind[i], p_key[i], p_value[i], CASE WHEN p_value[i] IS NULL THEN 0 ELSE head END, p_origin);
          seqs := seqs || head;
        END LOOP;
        UPDATE feed SET seq = head WHERE id = 1;
        PERFORM pg_notify('berth_changes', head::text);
        RETURN seqs;
      END
      $fn$;
    `,
  },
];

/**
 * Applies the migrations this database lacks, under a session advisory lock. Refuses a database whose schema is
 * newer than this Berth. Returns the versions it applied.
 */
export async function migrate(client: pg.Client): Promise<number[]> {
  await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
  try {
    await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version    integer PRIMARY KEY,
      name       text NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT now()
    )`);
    const { rows } = await client.query<{ version: number }>('SELECT version FROM schema_migrations');
    const have = new Set(rows.map((r) => r.version));
    const newest = Math.max(0, ...have);
    const known = MIGRATIONS[MIGRATIONS.length - 1]!.version;
    if (newest > known) throw new Error(`store schema version ${newest} is newer than this Berth (${known})`);
    const applied: number[] = [];
    for (const m of MIGRATIONS) {
      if (have.has(m.version)) continue;
      await client.query('BEGIN');
      try {
        await client.query(m.sql);
        await client.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [m.version, m.name]);
        await client.query('COMMIT');
      } catch (err) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw err;
      }
      applied.push(m.version);
    }
    return applied;
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]).catch(() => undefined);
  }
}
