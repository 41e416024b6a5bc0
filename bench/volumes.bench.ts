// Volumes onto pools: 10,000 pools on 1,000 backends. 100,000 decisions in-process (each one claimed), the decision
// alone (dry run, explain, a miss, get_pools with a size), then sustained runs over HTTP (keep-alive, bounded in
// count and time), in rounds where claims take turns with Fastify's ceiling. Prints decisions/s and p50/p99 latency.
// The store is SQLite synchronous=FULL unless a measured sample shows fsync dominating a lone claim; the output says
// which. Over HTTP the claims in flight share their turn's transaction, so FULL is measured there too.
import { mkdtempSync, rmSync } from 'node:fs';
import { Writable } from 'node:stream';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildApp } from '../src/app.ts';
import { parseConfig } from '../src/config.ts';
import { SqliteStore, openSqliteStore } from '../src/store/sqlite.ts';
import { VolumesService } from '../src/volumes/service.ts';
import type { ScheduleBody } from '../src/volumes/schemas.ts';
import { reportGoal } from './goals.ts';
import { CEILING_REQUEST, ceilingApp, combineLoads, fastifyCeiling, formatLoad, httpLoad, listening, type LoadResult } from './http-load.ts';
import { heapMiB, nowMs, summarize } from './stats.ts';
import { xorshift } from '../test/random.ts';
import { BACKENDS, backendReport, POOLS_PER_BACKEND } from './volumes-fleet.ts';

const IN_PROCESS_DECISIONS = 100_000;
const FSYNC_SAMPLE = 2_000;
const HTTP_MAX_REQUESTS = 20_000;
const HTTP_MAX_SECONDS = 20;
const HTTP_CONCURRENCY = 16;
/**
 * Untimed requests on the same connections before each run over HTTP is timed: each run is timed in its steady
 * state. Without them, the first run over HTTP in the process (the claims) paid for warming Fastify's and Node's
 * HTTP code that the runs after it (ceiling, dry runs) then found warm.
 */
const HTTP_WARMUP = 2_000;
/** Issue 16's goal for claimed decisions over HTTP: both at once. */
const GOAL_RATE = 3_000;
const GOAL_CEILING_SHARE = 0.5;
/** Rounds of claims and the ceiling; the goal reads the round with the median share. */
const GOAL_ROUNDS = 3;
/**
 * Within a round, claims and the ceiling take turns this many times, each turn a quarter of the requests after
 * HTTP_WARMUP untimed ones (each turn's client is a new process, which must be as warm as a whole run's): this
 * machine's speed drifts by tens of per cent within a minute, and turns of a few seconds let both sides see it alike.
 */
const SEGMENTS = 4;
/** Decisions whose winner is also taken by the full traced run (explain), which every pool goes through. */
const FAST_PATH_SAMPLE = 500;

/** As in production: pino at info (one line per decision), into a sink, for the dialect and the ceiling alike. */
function productionLogger() {
  return { level: 'info', stream: new Writable({ write: (_chunk, _encoding, done) => done() }) };
}

function volumeRequest(i: number, random: () => number): ScheduleBody {
  const size = 1 + Math.floor(random() * 50);
  // A mix: plain thin requests, thick ones, one with a capabilities extra spec, one pinned to a zone.
  switch (i % 4) {
    case 0: return { size };
    case 1: return { size, volume_type: { extra_specs: { 'provisioning:type': 'thick' } } };
    case 2: return { size, volume_type: { extra_specs: { tier: 'gold', thin_provisioning_support: '<is> True' } } };
    default: return { size, availability_zone: 'nova' };
  }
}

async function inProcess(synchronous: 'full' | 'normal', decisions: number): Promise<{ samples: number[]; placed: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'berth-volumes-bench-'));
  const store = new SqliteStore(dir, { synchronous });
  try {
    const config = parseConfig({ data_dir: dir, sqlite_synchronous: synchronous });
    const service = await VolumesService.open(config, store.async(), Date.now);
    const random = xorshift(42);
    for (let b = 0; b < BACKENDS; b++) await service.applyReport(`host${b}@backend${b}`, backendReport(b, random));
    const samples = new Array<number>(decisions);
    let placed = 0;
    for (let i = 0; i < decisions; i++) {
      const body = volumeRequest(i, random);
      const start = nowMs();
      // A 409 (nothing fits) does not happen with these capacities; `placed` would say so.
      if ((await service.schedule(body, { dryRun: false, explain: false })).outcome === 'placed') placed++;
      samples[i] = nowMs() - start;
    }
    service.close();
    return { samples, placed };
  } finally {
    store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** An app on a new store in a temporary directory, the fleet reported, listening; close() removes it all. */
async function claimingApp(synchronous: 'full' | 'normal'): Promise<{ port: number; random: () => number; close: () => Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), 'berth-volumes-bench-http-'));
  const store = new SqliteStore(dir, { synchronous }).async();
  const config = parseConfig({ data_dir: dir, sqlite_synchronous: synchronous });
  const app = await buildApp({ config, store, processMetrics: false, logger: productionLogger() });
  const close = async () => {
    await app.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const random = xorshift(7);
    for (let b = 0; b < BACKENDS; b++) {
      await app.inject({ method: 'PUT', url: `/backends/host${b}@backend${b}`, payload: backendReport(b, random) as object });
    }
    return { port: await listening(app), random, close };
  } catch (err) {
    await close();
    throw err;
  }
}

const HTTP_LOAD = { connections: HTTP_CONCURRENCY, maxRequests: HTTP_MAX_REQUESTS, maxSeconds: HTTP_MAX_SECONDS, warmup: HTTP_WARMUP };

/** Claims over HTTP on `on`'s app: every request placed (the untimed ones too), or this throws. */
async function claims(on: { port: number; random: () => number }, load: typeof HTTP_LOAD): Promise<LoadResult> {
  const decisions = await httpLoad(on.port, (i) => ({
    method: 'POST', path: '/volumes/schedule', body: JSON.stringify(volumeRequest(i, on.random)),
  }), load);
  // Every request fits (a 409 would be a miss): the claims are the 200s.
  if ((decisions.statuses[200] ?? 0) !== decisions.n || (decisions.warmupStatuses[200] ?? 0) !== load.warmup) {
    throw new Error(`over HTTP: not every decision was placed (timed ${JSON.stringify(decisions.statuses)}, untimed ${JSON.stringify(decisions.warmupStatuses)})`);
  }
  return decisions;
}

function printClaims(decisions: LoadResult, synchronous: 'full' | 'normal', how: string): void {
  console.log(formatLoad(`over HTTP, claimed (synchronous=${synchronous.toUpperCase()}, keep-alive, ${HTTP_CONCURRENCY} in flight, ${how}; ` +
    'latency includes queueing)', decisions) + `; placed=${decisions.statuses[200] ?? 0}`);
  console.log(`  server CPU per claim (user + system): ${decisions.cpuPerRequestUs.toFixed(0)} µs`);
}

/**
 * One round: claims on a new app with the fleet (as many volumes claimed before it as in the other rounds: none)
 * and the ceiling, taking SEGMENTS turns each.
 */
async function round(synchronous: 'full' | 'normal'): Promise<{ claimed: LoadResult; ceiling: LoadResult; share: number; port: number; close: () => Promise<void> }> {
  const app = await claimingApp(synchronous);
  const ceiling = await ceilingApp({ config: parseConfig({ data_dir: ':memory:' }), logger: productionLogger() }).catch(async (err: unknown) => {
    await app.close();
    throw err;
  });
  try {
    const claimed: LoadResult[] = [];
    const empty: LoadResult[] = [];
    for (let turn = 0; turn < SEGMENTS; turn++) {
      const load = { ...HTTP_LOAD, maxRequests: HTTP_MAX_REQUESTS / SEGMENTS, maxSeconds: HTTP_MAX_SECONDS / SEGMENTS };
      claimed.push(await claims(app, load));
      empty.push(await httpLoad(ceiling.port, () => CEILING_REQUEST, load));
    }
    const both = { claimed: combineLoads(claimed), ceiling: combineLoads(empty) };
    return { ...both, share: both.claimed.rate / both.ceiling.rate, port: app.port, close: app.close };
  } catch (err) {
    await app.close();
    throw err;
  } finally {
    await ceiling.close();
  }
}

/**
 * Claims over HTTP on a new app with the fleet; with `goal`, rounds of them taking turns with the ceiling, the other
 * anchors, and the verdict.
 */
async function overHttp(synchronous: 'full' | 'normal', goal: boolean): Promise<void> {
  if (!goal) {
    const app = await claimingApp(synchronous);
    const decisions = await claims(app, HTTP_LOAD).finally(() => app.close());
    printClaims(decisions, synchronous, `${HTTP_WARMUP} untimed, then ≤${HTTP_MAX_REQUESTS} requests or ${HTTP_MAX_SECONDS} s`);
    return;
  }
  // The anchor, in the same run: an empty route on an app built the same way. On a shared machine the rate of either
  // moves by tens of per cent from one minute to the next, so claims and the ceiling take turns of a few seconds
  // within each round, each round's share compares the two over the same minutes, and the goal reads the median round.
  const rounds: Array<{ claimed: LoadResult; ceiling: LoadResult; share: number }> = [];
  let last: { port: number; close: () => Promise<void> } | undefined;
  try {
    for (let r = 0; r < GOAL_ROUNDS; r++) {
      await last?.close();
      last = undefined;
      const done = await round(synchronous);
      last = done;
      rounds.push(done);
      printClaims(done.claimed, synchronous, `${SEGMENTS} turns with the ceiling's, each ${HTTP_WARMUP} untimed, then ` +
        `≤${HTTP_MAX_REQUESTS / SEGMENTS} requests or ${HTTP_MAX_SECONDS / SEGMENTS} s`);
      console.log(`${formatLoad('  Fastify\'s ceiling in the same turns (GET of an empty route, same plugins and logger)', done.ceiling)}`);
      console.log(`  round ${r + 1} of ${GOAL_ROUNDS}: claims at ${(100 * done.share).toFixed(0)} % of the ceiling`);
    }
    const { port } = last!;
    const median = [...rounds].sort((a, b) => a.share - b.share)[Math.floor(GOAL_ROUNDS / 2)]!;
    const { claimed: decisions, ceiling, share } = median;
    const met = decisions.rate >= GOAL_RATE && share >= GOAL_CEILING_SHARE;
    // The server runs in this process: its CPU per request says where a loaded machine's rates came from.
    // What a POST of the same bodies costs before any route work (reading and parsing the body): with an in-process
    // claim's cost on top, it says how far below the ceiling a claimed decision must stay on this machine.
    const random7 = xorshift(7);
    const bodies = Array.from({ length: HTTP_WARMUP + HTTP_MAX_REQUESTS }, (_, i) => JSON.stringify(volumeRequest(i, random7)));
    const posted = await fastifyCeiling({ config: parseConfig({ data_dir: ':memory:' }), logger: productionLogger() }, HTTP_LOAD,
      (i) => bodies[i]!);
    console.log(`${formatLoad('  the same bodies POSTed to that empty route (no schema, no work)', posted)}`);
    // The same decisions without their claims (dry_run=true, on the last round's app): validation, decision, log
    // line and metrics, nothing committed. A claimed decision does all of that and commits too, so this share of the
    // ceiling is above what claims can reach here.
    const dry = await httpLoad(port, (i) => ({ method: 'POST', path: '/volumes/schedule?dry_run=true', body: bodies[i]! }), HTTP_LOAD);
    if ((dry.statuses[200] ?? 0) !== dry.n) throw new Error(`dry runs over HTTP: statuses ${JSON.stringify(dry.statuses)}`);
    const dryShare = dry.rate / ceiling.rate;
    const postedShare = posted.rate / ceiling.rate;
    console.log(`${formatLoad('  the same bodies as dry runs on the claimed app (decided, nothing committed)', dry)}`);
    console.log(`  server CPU per request (user + system): claimed ${decisions.cpuPerRequestUs.toFixed(0)} µs, ` +
      `dry run ${dry.cpuPerRequestUs.toFixed(0)} µs, the ceiling's route ${ceiling.cpuPerRequestUs.toFixed(0)} µs, ` +
      `the POST of the body alone ${posted.cpuPerRequestUs.toFixed(0)} µs ` +
      `(${(100 * postedShare).toFixed(0)} % of the median round's ceiling before any decision or commit, ` +
      `${(100 * dryShare).toFixed(0)} % with the decision but no commit)`);
    // A claim is that POST plus a decision and a commit: when the POST alone stays under the share, no route can reach it.
    const bound = postedShare < GOAL_CEILING_SHARE
      ? `the same bodies POSTed to an empty route already reach only ${(100 * postedShare).toFixed(0)} % of the ceiling`
      : undefined;
    console.log(`  ${reportGoal({
      figure: 'POST /volumes/schedule claimed over HTTP, 10,000 pools',
      measured: `${decisions.rate.toFixed(0)} decisions/s, ${(100 * share).toFixed(0)} % of the ceiling (the median of ${GOAL_ROUNDS} rounds: ` +
        `${rounds.map((r) => `${(100 * r.share).toFixed(0)} %`).join(', ')})`,
      goal: `≥ ${GOAL_RATE}/s and ≥ ${100 * GOAL_CEILING_SHARE} % of the ceiling`,
      met,
      anchor: `Fastify's ceiling ${ceiling.rate.toFixed(0)} req/s; a POST of the body alone ${posted.rate.toFixed(0)} req/s; ` +
        `the same decisions as dry runs (no commit) ${dry.rate.toFixed(0)} req/s, ${(100 * dryShare).toFixed(0)} % of the ceiling`,
      ...(bound !== undefined ? { outOfReach: bound } : {}),
    })}`);
  } finally {
    await last?.close();
  }
}

/**
 * The winner a plain decision takes (best-first, over a few pools) is the full traced run's (every pool filtered,
 * weighed and ranked): pool, weight and counts, on a sample, each one claimed before the next as the runs below do.
 */
async function sameAsFullRun(service: VolumesService, random: () => number): Promise<void> {
  for (let i = 0; i < FAST_PATH_SAMPLE; i++) {
    const body = volumeRequest(i, random);
    const plain = await service.schedule(body, { dryRun: true, explain: false });
    const full = await service.schedule(body, { dryRun: true, explain: true });
    const seen = (r: typeof plain) => JSON.stringify([r.answer?.pool, r.answer?.weight, r.passed, [...r.rejections]]);
    if (seen(plain) !== seen(full)) throw new Error(`decision ${i}: ${seen(plain)} ≠ the full run's ${seen(full)}`);
    await service.schedule(body, { dryRun: false, explain: false });
  }
  console.log(`in-process: ${FAST_PATH_SAMPLE} decisions (claimed one after another) chose the full traced run's pool and weight`);
}

/** The decision without the claim: dry runs, explained dry runs, misses (409, reasons for every pool), get_pools?size. */
async function decisionOnly(): Promise<void> {
  const service = await VolumesService.open(parseConfig({ data_dir: ':memory:' }), openSqliteStore(':memory:'), Date.now);
  const random = xorshift(42);
  for (let b = 0; b < BACKENDS; b++) await service.applyReport(`host${b}@backend${b}`, backendReport(b, random));
  const time = async (label: string, n: number, once: (i: number) => unknown) => {
    for (let i = 0; i < Math.min(200, n); i++) await once(i); // warm-up
    const samples = new Array<number>(n);
    for (let i = 0; i < n; i++) {
      const start = nowMs();
      await once(i);
      samples[i] = nowMs() - start;
    }
    console.log(summarize(label, samples));
  };
  await time('in-process, decision only (dry run)', 20_000, (i) => service.schedule(volumeRequest(i, random), { dryRun: true, explain: false }));
  await time('in-process, dry run with explain (every pool traced and ranked)', 300, (i) =>
    service.schedule(volumeRequest(i, random), { dryRun: true, explain: true }));
  await time('in-process, miss (409 with every pool\'s reason)', 1_000, (i) =>
    service.schedule({ ...volumeRequest(i, random), size: 1_000_000 }, { dryRun: true, explain: false }));
  await time('in-process, get_pools with size (ranked pools)', 300, (i) => service.listPools({ size: 1 + (i % 50), filters: {} }));
  await sameAsFullRun(service, random);
}

export async function run(): Promise<void> {
  console.log(`${BACKENDS} backends × ${POOLS_PER_BACKEND} pools = ${BACKENDS * POOLS_PER_BACKEND} pools; a plain decision walks them best-first, explain filters and weighs all of them`);

  // Durability first: NORMAL (WAL; survives a killed process, not a power loss) only if fsync dominates FULL. One
  // claim at a time (in-process, each awaited before the next), every claim is a transaction of its own.
  const mean = (xs: number[]) => xs.reduce((x, y) => x + y, 0) / xs.length;
  await inProcess('normal', 500); // JIT warm-up, so that the first sample is not penalised
  const full = await inProcess('full', FSYNC_SAMPLE);
  console.log(summarize(`in-process, claimed one at a time, sqlite synchronous=FULL (an fsync each), sample`, full.samples));
  const normalSample = await inProcess('normal', FSYNC_SAMPLE);
  console.log(summarize(`in-process, claimed one at a time, sqlite synchronous=NORMAL (WAL), sample`, normalSample.samples));
  const ratio = mean(full.samples) / mean(normalSample.samples);
  const mode = ratio > 2 ? 'normal' : 'full';
  console.log(
    `store: a lone claim costs ${ratio.toFixed(1)}× as much with FULL as with NORMAL → fsync ` +
    (mode === 'normal'
      ? 'dominates: the runs below use synchronous=NORMAL (production default stays FULL, also measured over HTTP)'
      : 'does not dominate: the runs below use synchronous=FULL'),
  );

  await decisionOnly();
  const main = await inProcess(mode, IN_PROCESS_DECISIONS);
  console.log(summarize(`in-process, claimed one at a time, synchronous=${mode.toUpperCase()}`, main.samples, `placed=${main.placed} ${heapMiB()}`));

  // The production default over HTTP, where claims in flight together share one transaction and its fsync.
  if (mode === 'normal') await overHttp('full', false);
  await overHttp(mode, true);
}
