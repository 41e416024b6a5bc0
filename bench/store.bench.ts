// The store alone: a claim-shaped commit (a new claim record and its pool, each with an expectation: 2 writes,
// 2 expectations), one after the other, on SQLite (synchronous=full and =normal; through the phase-1
// synchronous interface and through the asynchronous one) and on PostgreSQL (one commit at a time, then 8 in
// flight from two store instances). Prints commits/s and p50/p99 latency.
// PostgreSQL: BERTH_BENCH_DATABASE_URL, else BERTH_TEST_DATABASE_URL, else postgres://postgres@127.0.0.1:5432/test
// (a scratch database is created and dropped there); skipped with one line when unreachable.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openPostgresStore } from '../src/store/postgres.ts';
import { SqliteStore } from '../src/store/sqlite.ts';
import type { AsyncStore, StoreExpectation, StoreWrite } from '../src/store/store.ts';
import { scratchDatabase } from './scratch-database.ts';
import { nowMs, summarize } from './stats.ts';

const SQLITE_COMMITS = { full: 5_000, normal: 30_000 };
const POSTGRES_COMMITS = 3_000;
const POSTGRES_IN_FLIGHT = 8;

/** The i-th claim on `pool`, expecting the pool generation the decision read. */
function claim(i: number, poolGeneration: number, pool = 'p'): [StoreWrite[], StoreExpectation[]] {
  const key = `${pool}-v${i}`;
  return [
    [{ kind: 'volume', key, value: { id: key, size: 10, pool, at: 1_700_000_000_000 + i } },
      { kind: 'pool', key: pool, value: { allocated: (i + 1) * 10, provisioned: (i + 1) * 10, free: 1e9 - i * 10 } }],
    [{ kind: 'volume', key, generation: 0 }, { kind: 'pool', key: pool, generation: poolGeneration }],
  ];
}

function sqliteSync(synchronous: 'full' | 'normal'): string {
  const dir = mkdtempSync(join(tmpdir(), 'berth-store-bench-'));
  const store = new SqliteStore(dir, { synchronous });
  try {
    let generation = store.commit([{ kind: 'pool', key: 'p', value: { allocated: 0 } }])[0]!;
    const n = SQLITE_COMMITS[synchronous];
    const samples = new Array<number>(n);
    for (let i = 0; i < n; i++) {
      const [writes, expect] = claim(i, generation);
      const start = nowMs();
      generation = store.commit(writes, expect)[1]!;
      samples[i] = nowMs() - start;
    }
    return summarize(`sqlite synchronous=${synchronous}, sync interface `, samples);
  } finally {
    store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function sequential(label: string, store: AsyncStore, n: number): Promise<string> {
  let generation = (await store.commit([{ kind: 'pool', key: 'p', value: { allocated: 0 } }]))[0]!;
  const samples = new Array<number>(n);
  for (let i = 0; i < n; i++) {
    const [writes, expect] = claim(i, generation);
    const start = nowMs();
    generation = (await store.commit(writes, expect))[1]!;
    samples[i] = nowMs() - start;
  }
  return summarize(label, samples);
}

async function sqliteAsync(synchronous: 'full' | 'normal'): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'berth-store-bench-'));
  const store = new SqliteStore(dir, { synchronous }).async();
  try {
    return await sequential(`sqlite synchronous=${synchronous}, async interface`, store, SQLITE_COMMITS[synchronous]);
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Workers each claiming on their own pool (no conflicts), POSTGRES_IN_FLIGHT commits in flight in total. */
async function concurrent(stores: AsyncStore[], total: number): Promise<string> {
  const per = Math.ceil(total / POSTGRES_IN_FLIGHT);
  const samples: number[] = [];
  const began = nowMs();
  await Promise.all(Array.from({ length: POSTGRES_IN_FLIGHT }, async (_, w) => {
    const store = stores[w % stores.length]!;
    const pool = `p${w}`;
    let generation = (await store.commit([{ kind: 'pool', key: pool, value: { allocated: 0 } }]))[0]!;
    for (let i = 0; i < per; i++) {
      const [writes, expect] = claim(i, generation, pool);
      const start = nowMs();
      generation = (await store.commit(writes, expect))[1]!;
      samples.push(nowMs() - start);
    }
  }));
  const wall = (nowMs() - began) / 1000;
  const line = summarize(`postgres, ${POSTGRES_IN_FLIGHT} in flight over ${stores.length} instances`, samples)
    .replace(/rate=\d+\/s/, `rate=${(samples.length / wall).toFixed(0)}/s`);
  return line;
}

async function postgres(): Promise<string[]> {
  const db = await scratchDatabase('berth_bench');
  if ('skipped' in db) return [`postgres: skipped, ${db.skipped}`];
  const { admin } = db;
  try {
    const a = await openPostgresStore({ url: db.url, poolSize: POSTGRES_IN_FLIGHT });
    const b = await openPostgresStore({ url: db.url, poolSize: POSTGRES_IN_FLIGHT });
    try {
      const version = (await admin.query<{ v: string }>("SELECT current_setting('server_version') AS v")).rows[0]!.v;
      const sync = (await admin.query<{ v: string }>("SELECT current_setting('synchronous_commit') AS v")).rows[0]!.v;
      const lines = [`postgres ${version} (synchronous_commit=${sync}) at ${db.server}`];
      lines.push(await sequential('postgres, one commit at a time          ', a, POSTGRES_COMMITS));
      lines.push(await concurrent([a, b], POSTGRES_COMMITS * 2));
      return lines;
    } finally {
      await a.close();
      await b.close();
    }
  } finally {
    await db.drop();
  }
}

export async function run(): Promise<void> {
  console.log('claim-shaped commit: 2 writes + 2 expectations, sequential unless said otherwise');
  for (const synchronous of ['full', 'normal'] as const) {
    console.log(sqliteSync(synchronous));
    console.log(await sqliteAsync(synchronous));
  }
  for (const line of await postgres()) console.log(line);
}
