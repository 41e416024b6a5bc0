// The anchor for the Placement figures: Debian's real Placement 8.0.0 (python3-placement, placement-api) started on
// a loopback port with its own sqlite database, loaded with the same fleet as Berth through its HTTP API, and the
// bench mix of GET /allocation_candidates sent to both in turn, each request on a new connection (Placement's
// wsgiref server closes every connection), checking both give the same answer. Not installed in CI: then
// startRealPlacement answers `skipped`.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, openSync, closeSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Inventory } from '../src/placement/capacity.ts';
import { jobInChild, serveJob } from './child-job.ts';
import { verdictOf } from './goals.ts';
import { nowMs, percentile } from './stats.ts';

// ---------------------------------------------------------------- the fleet, as plain data

const hex = (n: number, width: number) => n.toString(16).padStart(width, '0');
const uuid = (kind: number, i: number) => `${hex(kind, 8)}-0000-4000-8000-${hex(i, 12)}`;
export const AGGREGATES = Array.from({ length: 50 }, (_, i) => uuid(0xa, i));

export interface FleetProvider {
  uuid: string;
  name: string;
  inventories: Record<string, Inventory>;
  traits: string[];
  aggregates: string[];
}

export interface FleetConsumer {
  uuid: string;
  project_id: string;
  user_id: string;
  consumer_type: string;
  /** provider uuid → resource class → amount */
  allocations: Record<string, Record<string, number>>;
}

export interface FleetSpec {
  /** Custom traits to create before any provider uses them. */
  customTraits: string[];
  providers: FleetProvider[];
  consumers: FleetConsumer[];
}

/**
 * The bench fleet: `n` compute-node roots (VCPU, MEMORY_MB, DISK_GB in four sizes), a few traits, one of 50
 * aggregates each, one in 100 disabled, and a consumer on every fourth.
 */
export function fleetSpec(n: number): FleetSpec {
  const providers: FleetProvider[] = [];
  const consumers: FleetConsumer[] = [];
  for (let i = 0; i < n; i++) {
    const traits = ['COMPUTE_NODE'];
    if (i % 2 === 0) traits.push('HW_CPU_X86_AVX2');
    if (i % 3 === 0) traits.push('STORAGE_DISK_SSD');
    if (i % 5 === 0) traits.push('CUSTOM_T3');
    if (i % 100 === 99) traits.push('COMPUTE_STATUS_DISABLED');
    const rp = uuid(1, i);
    providers.push({
      uuid: rp, name: `cn${i}`,
      inventories: {
        VCPU: { total: 32 + (i % 4) * 16, reserved: 0, min_unit: 1, max_unit: 128, step_size: 1, allocation_ratio: 16 },
        MEMORY_MB: { total: 65536 * (1 + (i % 4)), reserved: 512, min_unit: 1, max_unit: 262144, step_size: 1, allocation_ratio: 1.5 },
        DISK_GB: { total: 1000 + (i % 7) * 500, reserved: 0, min_unit: 1, max_unit: 4500, step_size: 1, allocation_ratio: 1 },
      },
      traits, aggregates: [AGGREGATES[i % 50]!],
    });
    if (i % 4 === 0) {
      consumers.push({
        uuid: uuid(2, i), project_id: 'p', user_id: 'u', consumer_type: 'INSTANCE',
        allocations: { [rp]: { VCPU: 8 + (i % 8), MEMORY_MB: 16384, DISK_GB: 200 } },
      });
    }
  }
  return { customTraits: ['CUSTOM_T3'], providers, consumers };
}

export const PLAIN = 'resources=VCPU:2,MEMORY_MB:2048,DISK_GB:20';
export const QUERIES: Array<[label: string, query: string]> = [
  ['nothing matches', 'resources=VCPU:100000'],
  ['plain', PLAIN],
  ['required AVX2,!CUSTOM_T3', `${PLAIN}&required=HW_CPU_X86_AVX2,!CUSTOM_T3`],
  ['required in:AVX2,SSD', `${PLAIN}&required=in:HW_CPU_X86_AVX2,STORAGE_DISK_SSD`],
  ['member_of=!in:5 aggs', `${PLAIN}&member_of=!in:${AGGREGATES.slice(0, 5).join(',')}`],
  ['limit=50', `${PLAIN}&limit=50`],
  ['nova-like (limit=1000)', `limit=1000&member_of=!in:${AGGREGATES[7]}&required=HW_CPU_X86_AVX2&resources=DISK_GB:1,MEMORY_MB:512,VCPU:1&root_required=!COMPUTE_STATUS_DISABLED`],
];

// ---------------------------------------------------------------- HTTP on new connections

/** noauth2 takes the token as the user (admin); Berth without credentials configured ignores it. */
export const PLACEMENT_HEADERS = { 'openstack-api-version': 'placement 1.39', 'x-auth-token': 'admin', accept: 'application/json' };
const fresh = new Agent({ keepAlive: false });

interface Reply { status: number; body: string; ms: number }

/** With `whole` false, only the answer's first chunk is kept (enough to say why it failed): a timing client's own
 * garbage, 450 KB an answer, would otherwise be collected while it times the next one. */
function call(base: string, method: string, path: string, body?: unknown, whole = true): Promise<Reply> {
  const url = new URL(path, base);
  const payload = body === undefined ? undefined : JSON.stringify(body);
  const headers: Record<string, string | number> = { ...PLACEMENT_HEADERS };
  if (payload !== undefined) {
    headers['content-type'] = 'application/json';
    headers['content-length'] = Buffer.byteLength(payload);
  }
  return new Promise((resolve, reject) => {
    const t0 = nowMs();
    const req = request({ host: url.hostname, port: url.port, path: url.pathname + url.search, method, headers, agent: fresh }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => {
        if (whole || chunks.length === 0) chunks.push(c);
      });
      res.on('end', () => {
        // Timed at the last byte read: joining and decoding the body is this client's work, not the server's answer
        // time (for a 450 KB answer it was 2-4 ms of a timing process, as much as Berth takes to answer).
        const ms = nowMs() - t0;
        resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString(), ms });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(payload);
  });
}

async function must(base: string, method: string, path: string, body?: unknown): Promise<Record<string, unknown>> {
  const r = await call(base, method, path, body);
  if (r.status >= 300) throw new Error(`${method} ${path} → ${r.status} ${r.body.slice(0, 300)}`);
  return r.body ? JSON.parse(r.body) as Record<string, unknown> : {};
}

/**
 * Creates `spec` through the Placement API at 1.39 (Berth's or the real one), one provider's requests in order and
 * `inFlight` providers at a time: traits, then each provider with its inventories, traits and aggregates, then
 * the consumers' allocations. Answers how long it took and how many requests it sent.
 */
export async function loadFleet(base: string, spec: FleetSpec, inFlight = 4): Promise<{ ms: number; requests: number }> {
  const t0 = nowMs();
  let requests = 0;
  const send = async (method: string, path: string, body?: unknown) => {
    requests++;
    return must(base, method, path, body);
  };
  for (const t of spec.customTraits) await send('PUT', `/traits/${t}`);
  const inParallel = async <T>(items: readonly T[], one: (item: T) => Promise<void>) => {
    let next = 0;
    await Promise.all(Array.from({ length: inFlight }, async () => {
      while (next < items.length) await one(items[next++]!);
    }));
  };
  await inParallel(spec.providers, async (p) => {
    const path = `/resource_providers/${p.uuid}`;
    let generation = (await send('POST', '/resource_providers', { uuid: p.uuid, name: p.name })).generation as number;
    generation = (await send('PUT', `${path}/inventories`, { resource_provider_generation: generation, inventories: p.inventories }))
      .resource_provider_generation as number;
    generation = (await send('PUT', `${path}/traits`, { resource_provider_generation: generation, traits: p.traits }))
      .resource_provider_generation as number;
    await send('PUT', `${path}/aggregates`, { resource_provider_generation: generation, aggregates: p.aggregates });
  });
  await inParallel(spec.consumers, async (c) => {
    const allocations = Object.fromEntries(Object.entries(c.allocations).map(([rp, resources]) => [rp, { resources }]));
    await send('PUT', `/allocations/${c.uuid}`, {
      allocations, consumer_generation: null, project_id: c.project_id, user_id: c.user_id, consumer_type: c.consumer_type,
    });
  });
  return { ms: nowMs() - t0, requests };
}

// ---------------------------------------------------------------- the real Placement server

// The Debian packages' console scripts.
const MANAGE = 'placement-manage';
const API_SERVER = 'placement-api';

export interface RealPlacement { url: string; version: string; stop: () => Promise<void> }

/**
 * Debian's Placement on 127.0.0.1 (an ephemeral port) with an sqlite database in a temporary directory and
 * noauth2, its requests logged at INFO into a file there (as it would log in production). `skipped` with the
 * reason when the packages are not installed.
 */
export async function startRealPlacement(): Promise<RealPlacement | { skipped: string }> {
  const probe = spawnSync(MANAGE, ['--version'], { encoding: 'utf8' });
  if (probe.error || probe.status !== 0) {
    return { skipped: 'real Placement is not installed (apt-get install python3-placement placement-api); no side-by-side figures' };
  }
  const version = (probe.stdout || probe.stderr).trim();
  const dir = mkdtempSync(join(tmpdir(), 'berth-real-placement-'));
  const conf = join(dir, 'placement.conf');
  writeFileSync(conf, [
    '[DEFAULT]', 'debug = false', `log_file = ${join(dir, 'placement.log')}`,
    '[api]', 'auth_strategy = noauth2',
    '[placement_database]', `connection = sqlite:///${join(dir, 'placement.sqlite')}`, '',
  ].join('\n'));
  const sync = spawnSync(MANAGE, ['--config-file', conf, 'db', 'sync'], { encoding: 'utf8' });
  if (sync.status !== 0) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`placement-manage db sync failed: ${sync.stderr || sync.stdout}`);
  }
  // placement-api is the package's wsgiref test server; the application reads its config from
  // $OS_PLACEMENT_CONFIG_DIR/placement.conf. Port 0: it prints the port it bound.
  const out = join(dir, 'server.out');
  const fd = openSync(out, 'w');
  const child = spawn(API_SERVER, ['--host', '127.0.0.1', '--port', '0'], {
    cwd: dir, env: { ...process.env, OS_PLACEMENT_CONFIG_DIR: dir }, stdio: ['ignore', fd, fd],
  });
  closeSync(fd);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  // A bench that dies half-way must not leave the server running.
  const orphan = () => child.kill();
  process.once('exit', orphan);
  const stop = async () => {
    process.off('exit', orphan);
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  };
  for (let i = 0; i < 300; i++) {
    const port = /Available at http:\/\/[^:]+:(\d+)\//.exec(readFileSync(out, 'utf8'))?.[1];
    if (child.exitCode !== null) break;
    if (port) {
      const url = `http://127.0.0.1:${port}`;
      const r = await call(url, 'GET', '/').catch(() => undefined);
      if (r?.status === 200) return { url, version, stop };
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  const log = readFileSync(out, 'utf8');
  await stop();
  throw new Error(`real Placement did not start within 30 s: ${log.slice(-2000)}`);
}

// ---------------------------------------------------------------- side by side

interface Answer {
  allocation_requests: Array<{ allocations: Record<string, { resources: Record<string, number> }>; mappings?: Record<string, string[]> }>;
  provider_summaries: Record<string, { resources: Record<string, { capacity: number; used: number }>; traits?: string[]; parent_provider_uuid?: string | null; root_provider_uuid?: string }>;
}

const sortedEntries = <V>(o: Record<string, V>) => Object.entries(o).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));

/** Each allocation request as one order-free string: Placement's order is its Python set's. */
function requestSet(a: Answer): Set<string> {
  return new Set(a.allocation_requests.map((r) => JSON.stringify([
    sortedEntries(r.allocations).map(([rp, { resources }]) => [rp, sortedEntries(resources)]),
    sortedEntries(r.mappings ?? {}).map(([suffix, rps]) => [suffix, rps.slice().sort()]),
  ])));
}

function summaries(a: Answer): Map<string, string> {
  return new Map(Object.entries(a.provider_summaries).map(([rp, s]) => [rp, JSON.stringify([
    sortedEntries(s.resources).map(([rc, v]) => [rc, v.capacity, v.used]),
    (s.traits ?? []).slice().sort(), s.parent_provider_uuid ?? null, s.root_provider_uuid ?? null,
  ])]));
}

function sameSet(a: ReadonlySet<string>, b: ReadonlySet<string>): boolean {
  if (a.size !== b.size) return false;
  for (const x of a) if (!b.has(x)) return false;
  return true;
}

async function answer(base: string, path: string, who: string): Promise<Answer> {
  const r = await call(base, 'GET', path);
  if (r.status !== 200) throw new Error(`${who} GET ${path} → ${r.status} ${r.body.slice(0, 300)}`);
  return JSON.parse(r.body) as Answer;
}

/**
 * Whether Berth and real Placement agree on `query`: the same allocation requests as sets and the same provider
 * summaries for the query without `limit`; with `limit`, the same count and both picks among those requests.
 */
async function sameAnswers(berth: string, real: string, query: string): Promise<{ candidates: number; problem?: string }> {
  const path = `/allocation_candidates?${query}`;
  const whole = query.split('&').filter((kv) => !kv.startsWith('limit=')).join('&');
  const [b, r] = await Promise.all([answer(berth, path, 'Berth'), answer(real, path, 'Placement')]);
  const wholePath = `/allocation_candidates?${whole}`;
  const [bAll, rAll] = whole === query ? [b, r]
    : await Promise.all([answer(berth, wholePath, 'Berth'), answer(real, wholePath, 'Placement')]);
  const candidates = b.allocation_requests.length;
  const differ = (problem: string) => ({ candidates, problem });
  const all = requestSet(bAll);
  if (!sameSet(all, requestSet(rAll))) {
    return differ(`allocation requests differ without limit (Berth ${all.size}, Placement ${rAll.allocation_requests.length})`);
  }
  const bs = summaries(bAll);
  const rs = summaries(rAll);
  if (bs.size !== rs.size || [...bs].some(([rp, s]) => rs.get(rp) !== s)) return differ('provider summaries differ');
  if (candidates !== r.allocation_requests.length) return differ(`counts differ: Berth ${candidates}, Placement ${r.allocation_requests.length}`);
  for (const picked of [requestSet(b), requestSet(r)]) {
    for (const x of picked) if (!all.has(x)) return differ('a limited answer holds a request the whole answer lacks');
  }
  return { candidates };
}

/** p50 and p99 of one server's timed answers, ms. */
export interface Spread { p50: number; p99: number }

/**
 * One query timed on both servers. Each round sends each server two requests in a row, so every server has as many
 * answers right after one of its own as right after the other's. The goal reads the first kind: the same conditions
 * for both. On this VM a server left idle while the other one worked for tens of ms answers its next request 0.4-0.9
 * ms slower, whoever it is, and the two kinds mixed (as until 2026-12-05) put the p50 on the seam between them, so
 * the verdict moved with it from run to run. The second kind is printed beside.
 */
export interface Timings {
  /** Berth's answers right after one of its own. */
  berth: Spread;
  /** Real Placement's answers right after one of its own. */
  real: Spread;
  /** Each server's answers right after the other server's. */
  berthAfterReal: Spread;
  realAfterBerth: Spread;
  /** real p50 / Berth p50 (each after its own) */
  speedup: number;
}

export interface SideBySide extends Timings {
  label: string;
  candidates: number;
  /** Why the answers differ; undefined when they agree. */
  problem?: string;
  /**
   * A bare node:http server answering `{}` in Berth's place, timed as Berth is (after one of its own answers, with
   * Placement's in the same rounds): the floor under the same conditions.
   */
  floor: Spread;
  /**
   * The same, answering with Berth's own bytes for the query (status, content type and body, kept in memory): what
   * sending this answer costs in Berth's place with nothing computed, the floor of this query's time in Node here.
   */
  sameBytes: Spread;
}

/** The goal issue 16 sets against the anchor: every query at least this many times faster than real Placement. */
export const SPEEDUP_GOAL = 25;

interface TimingJob { bases: [string, string]; paths: string[]; rounds: number }
const TIMING_CLIENT = '--side-by-side-timing-client';
const WARM_UP_ROUNDS = 10;
/**
 * Requests per path the first server (Berth, or a bare server in its place) gets first, untimed, on new connections,
 * the paths taking turns, so that the timed rounds read its steady state as every other scenario does: V8 was still
 * compiling a new Berth's per-request code for the first time after 4,000 requests, and the 50 a path of until
 * 2026-12-06 timed it in the middle of that (the README's Performance section, 2026-12-06 later, has the figures).
 * They warm this client's own HTTP code too. Real Placement (CPython, no compiler tiers) is warm after the first rounds.
 */
const SERVER_WARM_UP = 2000;

/**
 * A timed answer's path (the index in `paths`), its server (0 or 1, the index in `bases`) and the server of the
 * answer just before it.
 */
type Sample = [path: number, server: number, after: number, ms: number];

/**
 * `rounds` rounds, each of every path in turn, two GETs of it to each of the two servers in a row (so each server's
 * pair follows the other's, and every server has one answer of each kind a path and a round), each on a new
 * connection and timed from sending to the last byte read. The paths take turns within a round, so every path's
 * samples spread over the whole run: on this VM a server's answers are slower or faster by a third from one minute
 * to the next, and a path timed in a block of its own (as until 2026-12-06) had its verdict decided by its minute.
 * Runs in a child process (this file, forked), so the client does not share Berth's event loop or core, as with
 * bench/load-client.ts.
 */
function timeInPairs(job: TimingJob): Promise<Sample[]> {
  return jobInChild(import.meta.url, TIMING_CLIENT, job, 'timing client');
}

async function timingClient(job: TimingJob): Promise<Sample[]> {
  const samples: Sample[] = [];
  // The first server warms up alone (SERVER_WARM_UP), then the first rounds warm up both; none is counted.
  for (let i = 0; i < SERVER_WARM_UP; i++) for (const path of job.paths) await call(job.bases[0], 'GET', path, undefined, false);
  let after = 0;
  for (let i = -WARM_UP_ROUNDS; i < job.rounds; i++) {
    for (let p = 0; p < job.paths.length; p++) {
      for (const side of [0, 0, 1, 1]) {
        const reply = await call(job.bases[side]!, 'GET', job.paths[p]!, undefined, false);
        if (reply.status !== 200) throw new Error(`${job.bases[side]}${job.paths[p]} → ${reply.status} ${reply.body.slice(0, 300)}`);
        if (i >= 0) samples.push([p, side, after, reply.ms]);
        after = side;
      }
    }
  }
  return samples;
}

serveJob(TIMING_CLIENT, timingClient);

/**
 * `rounds` rounds of GETs of each of `paths` to Berth (on `berthPort`) and to real Placement (at `realUrl`), in
 * pairs, the paths taking turns (timeInPairs): each path's timings, in the order of `paths`.
 */
export async function timeSideBySide(berthPort: number, realUrl: string, paths: readonly string[], rounds: number): Promise<Timings[]> {
  const samples = await timeInPairs({ bases: [`http://127.0.0.1:${berthPort}`, realUrl], paths: [...paths], rounds });
  return paths.map((_, p) => {
    const of = (server: number, after: number) =>
      spread(samples.filter(([q, s, a]) => q === p && s === server && a === after).map(([, , , ms]) => ms));
    const berth = of(0, 0);
    const real = of(1, 1);
    return { berth, real, berthAfterReal: of(0, 1), realAfterBerth: of(1, 0), speedup: real.p50 / berth.p50 };
  });
}

/** p50 and p99 of samples (sorted here). */
function spread(samples: number[]): Spread {
  samples.sort((x, y) => x - y);
  return { p50: percentile(samples, 50), p99: percentile(samples, 99) };
}

/**
 * For each query: checks Berth and real Placement agree (those first requests warm both up), then times `rounds`
 * rounds of requests to each, the queries taking turns (timeSideBySide). Also the two figures that say what part of
 * Berth's time is its own, each timed in Berth's place as Berth is: the bare server on `barePort` (answering `{}` to
 * anything) and `replay` sending Berth's own answer for each query.
 */
export async function compareWithReal(berthPort: number, realUrl: string, queries: ReadonlyArray<readonly [string, string]>,
  rounds: number, barePort: number, replay: BytesServer): Promise<SideBySide[]> {
  const berth = `http://127.0.0.1:${berthPort}`;
  const verdicts: Array<{ candidates: number; problem?: string }> = [];
  for (const [, query] of queries) verdicts.push(await sameAnswers(berth, realUrl, query));
  const paths = queries.map(([, query]) => `/allocation_candidates?${query}`);
  const timings = await timeSideBySide(berthPort, realUrl, paths, rounds);
  const floors = await timeSideBySide(barePort, realUrl, paths, rounds);
  for (const path of paths) replay.answer(path, Buffer.from((await call(berth, 'GET', path)).body));
  const sameBytes = await timeSideBySide(replay.port, realUrl, paths, rounds);
  return queries.map(([label], k) => ({ label, ...verdicts[k]!, ...timings[k]!, floor: floors[k]!.berth, sameBytes: sameBytes[k]!.berth }));
}

/** A bare node:http server that answers every request 200 as JSON: the bytes given to `answer` for its path, else `{}`. */
export interface BytesServer {
  port: number;
  answer(path: string, body: Buffer): void;
  close(): Promise<void>;
}

export async function startBytesServer(): Promise<BytesServer> {
  const empty = Buffer.from('{}');
  const bodies = new Map<string, Buffer>();
  const server = createServer((req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(bodies.get(req.url ?? '') ?? empty);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    answer: (path, body) => {
      bodies.set(path, body);
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

export function formatTimings(t: Timings): string {
  const ms = (x: Spread) => `p50=${x.p50.toFixed(2)}ms p99=${x.p99.toFixed(2)}ms`;
  return `each after its own answer: Berth ${ms(t.berth)}, Placement ${ms(t.real)}; ${t.speedup.toFixed(1)}× faster ` +
    `(each after the other's: Berth ${ms(t.berthAfterReal)}, Placement ${ms(t.realAfterBerth)}; ` +
    `${(t.realAfterBerth.p50 / t.berthAfterReal.p50).toFixed(1)}×)`;
}

/** A row as the bench prints it; `outOfReach`: a bound measured in the same run excludes the goal on this machine. */
export function formatSideBySide(row: SideBySide, outOfReach = false): string {
  const beside = `in Berth's place after its own answer: a bare {} p50=${row.floor.p50.toFixed(2)}ms, the same bytes from ` +
    `a bare server p50=${row.sameBytes.p50.toFixed(2)}ms`;
  return `  ${row.label.padEnd(26)}: candidates=${row.candidates} ${row.problem ? `ANSWERS DIFFER (${row.problem})` : 'same answers'}; ` +
    `${formatTimings(row)}, goal ≥ ${SPEEDUP_GOAL}×: ${verdictOf(row.speedup >= SPEEDUP_GOAL, outOfReach)}\n  ${''.padEnd(26)}  (${beside})`;
}
