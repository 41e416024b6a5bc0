// Placement side by side: Berth and Debian's real Placement 8.0.0 on this machine, both loaded with the bench fleet
// (1,000 providers; PLACEMENT_SIDE_BY_SIDE_PROVIDERS) through the Placement API, then the bench mix sent to both in
// turn on new connections (bench/placement-reference.ts), and Berth's plain query on keep-alive. Prints the skip
// line when real Placement is not installed.
import { Writable } from 'node:stream';
import { buildApp } from '../src/app.ts';
import { parseConfig } from '../src/config.ts';
import { openSqliteStore } from '../src/store/sqlite.ts';
import { reportGoal } from './goals.ts';
import { formatLoad, httpLoad, listening } from './http-load.ts';
import {
  compareWithReal, fleetSpec, formatSideBySide, formatTimings, loadFleet, PLACEMENT_HEADERS, PLAIN, QUERIES, SPEEDUP_GOAL,
  startBytesServer, startRealPlacement, timeSideBySide,
} from './placement-reference.ts';

/** Berth's plain query on keep-alive, p50. */
const KEEP_ALIVE_GOAL_MS = 2.5;

/**
 * When the goal asks for less time than a bare node:http server takes to send Berth's own answer (or `{}`, whichever
 * takes longer) on a new connection in Berth's place (timed as Berth is, in the same rounds as Placement on the same
 * query), no HTTP server in Node can meet it on this machine: why, for the goal's verdict (undefined otherwise).
 */
function outOfReach(placementP50: number, floorP50: number): string | undefined {
  const needed = placementP50 / SPEEDUP_GOAL;
  return needed < floorP50
    ? `${SPEEDUP_GOAL}× needs ≤ ${needed.toFixed(2)} ms, less than a bare server takes to send that answer in ` +
      `Berth's place (${floorP50.toFixed(2)} ms: the time is the connection's and the machine's)`
    : undefined;
}

export async function run(): Promise<void> {
  const real = await startRealPlacement();
  if ('skipped' in real) {
    console.log(`  skipped: ${real.skipped}`);
    return;
  }
  const store = openSqliteStore(':memory:');
  // Production-like logging: pino at info, into a sink.
  const sink = new Writable({ write: (_chunk, _encoding, done) => done() });
  const app = await buildApp({ config: parseConfig({ data_dir: ':memory:' }), store, processMetrics: false, logger: { level: 'info', stream: sink } });
  try {
    const port = await listening(app);
    const n = Number(process.env.PLACEMENT_SIDE_BY_SIDE_PROVIDERS ?? 1000);
    const spec = fleetSpec(n);
    console.log(`\n-- ${n} providers, ${spec.consumers.length} consumers; real Placement ${real.version} at ${real.url}`);
    const intoBerth = await loadFleet(`http://127.0.0.1:${port}`, spec);
    console.log(`  loaded into Berth in ${(intoBerth.ms / 1000).toFixed(1)} s (${intoBerth.requests} requests, 4 in flight)`);
    const intoReal = await loadFleet(real.url, spec);
    console.log(`  loaded into real Placement in ${(intoReal.ms / 1000).toFixed(1)} s (${intoReal.requests} requests, 4 in flight)`);
    const rounds = Number(process.env.PLACEMENT_SIDE_BY_SIDE_ROUNDS ?? 80);
    console.log(`  GET /allocation_candidates, ${rounds} rounds of every query in turn, two requests to each server in a row, a new connection per request:`);
    // The floors on a new connection: each server's cheapest answer (the version document), and a bare node:http
    // server answering {} — no query can be faster than that, which bounds the ratio of the cheap queries.
    console.log(`  ${'GET / (floor)'.padEnd(26)}: ${formatTimings((await timeSideBySide(port, real.url, ['/'], rounds))[0]!)}`);
    const bare = await startBytesServer();
    const barePort = bare.port;
    const bareFloor = await httpLoad(barePort, () => ({ method: 'GET', path: '/' }),
      { connections: 1, maxRequests: rounds * 10, maxSeconds: 10, keepAlive: false });
    console.log(formatLoad(`  ${'bare node:http {} (floor)'.padEnd(26)}`, bareFloor));
    // Each row also times, in Berth's place and as Berth is timed, that bare server and a second one sending Berth's
    // own answer for the query from memory: the time that answer's bytes take with nothing computed.
    const replay = await startBytesServer();
    const rows = await compareWithReal(port, real.url, QUERIES, rounds, barePort, replay)
      .finally(() => Promise.all([bare.close(), replay.close()]));
    for (const row of rows) {
      const bound = outOfReach(row.real.p50, Math.max(row.floor.p50, row.sameBytes.p50));
      console.log(formatSideBySide(row, bound !== undefined));
      reportGoal({
        figure: `GET /allocation_candidates ${row.label}, ${n} providers, new connection each, vs real Placement`,
        measured: `each after its own answer: Berth p50 ${row.berth.p50.toFixed(2)} ms, Placement p50 ${row.real.p50.toFixed(1)} ms: ${row.speedup.toFixed(1)}×` +
          (row.problem ? ' (ANSWERS DIFFER)' : ''),
        goal: `≥ ${SPEEDUP_GOAL}×`, met: row.speedup >= SPEEDUP_GOAL && !row.problem,
        anchor: `each after its own answer; bare node:http {} in Berth's place p50 ${row.floor.p50.toFixed(2)} ms (alone ` +
          `${bareFloor.p50.toFixed(2)} ms); Berth's answer sent by a bare server in its place p50 ${row.sameBytes.p50.toFixed(2)} ms; ` +
          `each after the other's answer: Berth p50 ${row.berthAfterReal.p50.toFixed(2)} ms, Placement p50 ${row.realAfterBerth.p50.toFixed(1)} ms`,
        ...(bound !== undefined ? { outOfReach: bound } : {}),
      });
    }
    const keepAlive = await httpLoad(port, () => ({ method: 'GET', path: `/allocation_candidates?${PLAIN}`, headers: PLACEMENT_HEADERS }),
      { connections: 1, warmup: 50, maxRequests: 1000, maxSeconds: 10 });
    console.log(formatLoad(`  ${'Berth plain, keep-alive'.padEnd(26)}`, keepAlive));
    console.log(`  ${reportGoal({
      figure: `GET /allocation_candidates plain, ${n} providers, keep-alive`, measured: `p50 ${keepAlive.p50.toFixed(2)} ms, p99 ${keepAlive.p99.toFixed(2)} ms`,
      goal: `p50 ≤ ${KEEP_ALIVE_GOAL_MS} ms`, met: keepAlive.p50 <= KEEP_ALIVE_GOAL_MS,
    })}`);
  } finally {
    await app.close();
    await store.close();
    await real.stop();
  }
}

if (process.argv[1]?.endsWith('placement-side-by-side.bench.ts')) await run();
