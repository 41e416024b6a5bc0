// The HTTP side of the benches: a keep-alive load loop with a fixed number of requests in flight, run in a child
// process (bench/load-client.ts) so the server keeps a core of its own, and the anchor an HTTP figure is read
// against in the same run — Fastify's ceiling (an empty route on an app built exactly like Berth's, so the same
// plugins, hooks, logging and metrics).
import { fork } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import { buildApp, type BuildAppOptions } from '../src/app.ts';
import { parseConfig } from '../src/config.ts';
import { openSqliteStore } from '../src/store/sqlite.ts';
import { percentile } from './stats.ts';

export interface LoadResult {
  n: number;
  seconds: number;
  rate: number;
  p50: number;
  p99: number;
  statuses: Record<number, number>;
  /** The untimed warm-up requests' statuses. */
  warmupStatuses: Record<number, number>;
  /**
   * This process's CPU (user + system) per request while the load ran, in µs: the server's when the app listens in
   * this process (the client is a child). On a shared machine a steadier figure than the rate.
   */
  cpuPerRequestUs: number;
  /** The timed requests' latencies (ms), sorted. */
  samples: number[];
}

import type { LoadRequest } from './load-client.ts';

export { send, type LoadRequest } from './load-client.ts';

/**
 * Sends `next(i)` for i = 0, 1, … with `connections` requests in flight (keep-alive unless told otherwise), until
 * `maxRequests` were sent or `maxSeconds` passed, from a child process. The requests are built here first, so the
 * client only sends. Latency includes queueing behind the other connections. With several ports (instances),
 * connection c talks to ports[c % ports.length]. With `warmup`, that many requests go first, untimed, on the same
 * connections (the client's process is new each time, and its first answers would time its own warm-up); then
 * `onWarm` runs here before the timed ones start, and the server CPU per request counts the timed ones only.
 */
export async function httpLoad(port: number | readonly number[], next: (i: number) => LoadRequest,
  options: { connections: number; maxRequests: number; maxSeconds: number; keepAlive?: boolean; warmup?: number; onWarm?: () => void }): Promise<LoadResult> {
  const ports = typeof port === 'number' ? [port] : [...port];
  const warmup = options.warmup ?? 0;
  const requests = Array.from({ length: warmup + options.maxRequests }, (_, i) => next(i));
  const child = fork(fileURLToPath(new URL('./load-client.ts', import.meta.url)), [], { execArgv: ['--import', 'tsx'], serialization: 'advanced' });
  let cpuBefore = process.cpuUsage();
  type Done = { samples: number[]; statuses: Record<number, number>; warmupStatuses: Record<number, number>; seconds: number };
  const answer = new Promise<Done>((resolve, reject) => {
    child.on('message', (m: Done | { warmed: true }) => {
      if (!('warmed' in m)) return resolve(m);
      options.onWarm?.();
      cpuBefore = process.cpuUsage();
      child.send({ go: true });
    });
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`load client exited with ${code} before answering`)));
  });
  child.send({ ports, requests, warmup, connections: options.connections, maxSeconds: options.maxSeconds, keepAlive: options.keepAlive ?? true });
  const { samples, statuses, warmupStatuses, seconds } = await answer;
  const cpu = process.cpuUsage(cpuBefore);
  samples.sort((a, b) => a - b);
  return {
    n: samples.length, seconds, rate: samples.length / seconds, p50: percentile(samples, 50), p99: percentile(samples, 99), statuses,
    warmupStatuses, cpuPerRequestUs: (cpu.user + cpu.system) / Math.max(1, samples.length), samples,
  };
}

/** Runs of one load taken apart (segments alternating with another load's) as one: totals, rate, latencies, CPU. */
export function combineLoads(runs: readonly LoadResult[]): LoadResult {
  const samples = runs.flatMap((r) => r.samples).sort((a, b) => a - b);
  const seconds = runs.reduce((sum, r) => sum + r.seconds, 0);
  const add = (into: Record<number, number>, from: Record<number, number>) => {
    for (const [status, count] of Object.entries(from)) into[Number(status)] = (into[Number(status)] ?? 0) + count;
    return into;
  };
  return {
    n: samples.length, seconds, rate: samples.length / seconds, p50: percentile(samples, 50), p99: percentile(samples, 99),
    statuses: runs.reduce((into, r) => add(into, r.statuses), {}),
    warmupStatuses: runs.reduce((into, r) => add(into, r.warmupStatuses), {}),
    cpuPerRequestUs: runs.reduce((sum, r) => sum + r.cpuPerRequestUs * r.n, 0) / Math.max(1, samples.length),
    samples,
  };
}

export function formatLoad(label: string, r: LoadResult): string {
  return `${label}: n=${r.n} in ${r.seconds.toFixed(1)} s → ${r.rate.toFixed(0)}/s, p50=${r.p50.toFixed(2)}ms ` +
    `p99=${r.p99.toFixed(2)}ms; statuses ${JSON.stringify(r.statuses)}`;
}

export async function listening(app: FastifyInstance): Promise<number> {
  await app.listen({ host: '127.0.0.1', port: 0 });
  return (app.server.address() as AddressInfo).port;
}

/**
 * Fastify's ceiling here: `GET /bench/empty` (answers `{}`) on an app built by buildApp with the given options,
 * under the same load loop. A dialect's HTTP figure divided by this says how much of the machine it leaves unused.
 */
export async function fastifyCeiling(options: Partial<Omit<BuildAppOptions, 'store'>>,
  load: { connections: number; maxRequests: number; maxSeconds: number; warmup?: number }, body?: (i: number) => string): Promise<LoadResult> {
  const ceiling = await ceilingApp(options);
  try {
    return await httpLoad(ceiling.port, (i) => (body ? { method: 'POST', path: '/bench/empty', body: body(i) } : CEILING_REQUEST), load);
  } finally {
    await ceiling.close();
  }
}

/** The ceiling's request: `GET /bench/empty` on a ceilingApp. */
export const CEILING_REQUEST: LoadRequest = { method: 'GET', path: '/bench/empty' };

/**
 * The app fastifyCeiling loads, listening, for a caller that alternates loads on it with others:
 * `GET /bench/empty` answers `{}`; `POST /bench/empty` too, with no schema and no work, so a body's read and JSON
 * parse are all it adds.
 */
export async function ceilingApp(options: Partial<Omit<BuildAppOptions, 'store'>>): Promise<{ port: number; close: () => Promise<void> }> {
  const store = openSqliteStore(':memory:');
  const app = await buildApp({ config: parseConfig({ data_dir: ':memory:' }), processMetrics: false, ...options, store });
  app.get('/bench/empty', async () => ({}));
  app.post('/bench/empty', async () => ({}));
  const close = async () => {
    await app.close();
    await store.close();
  };
  try {
    return { port: await listening(app), close };
  } catch (err) {
    await close();
    throw err;
  }
}
