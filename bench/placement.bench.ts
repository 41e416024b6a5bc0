// Placement: GET /allocation_candidates over 1,000, 10,000 and 100,000 compute-node providers loaded in-process
// into the in-memory model (VCPU, MEMORY_MB, DISK_GB; a few traits; 50 aggregates; some allocations), asked over
// keep-alive HTTP (one connection, the client in a child process, the app logging at info into a sink), then
// claims (PUT /allocations for new consumers) committed through the store. Real Placement needs ~350 ms for the
// plain query at 1,000 providers (reference §8).
//
// Each query is first asked a few times untimed (warm-up: the figures are the steady state). Its answer is compared
// in full with a plain enumerator of the fleet below (no code shared with the search) once, after the timed runs, by
// a child process (so that the check's garbage is not the server's), and every timed answer's candidate count with
// the decision log line. Beside each figure: the goal of issue 16 (met / MISSED), the peak RSS while answering, and
// the serialisation floor of the same answer — JSON.stringify of its parsed object form — with the ratio.
import { readFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { Writable } from 'node:stream';
import { buildApp } from '../src/app.ts';
import { parseConfig } from '../src/config.ts';
import { placementServices } from '../src/placement/routes/index.ts';
import { openSqliteStore } from '../src/store/sqlite.ts';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { jobInChild, serveJob } from './child-job.ts';
import { reportGoal } from './goals.ts';
import { httpLoad, listening } from './http-load.ts';
import { heapMiB, nowMs, percentile, summarize } from './stats.ts';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const hex = (n: number, width: number) => n.toString(16).padStart(width, '0');
const uuid = (kind: number, i: number) => `${hex(kind, 8)}-0000-4000-8000-${hex(i, 12)}`;
const AGGS = Array.from({ length: 50 }, (_, i) => uuid(0xa, i));
const CLASSES = ['VCPU', 'MEMORY_MB', 'DISK_GB'] as const;

interface Inv { total: number; reserved: number; min_unit: number; max_unit: number; step_size: number; allocation_ratio: number }

/** Provider i of the fleet: what is loaded into the model, and what the reference enumerates. */
function providerSpec(i: number) {
  const traits = ['COMPUTE_NODE'];
  if (i % 2 === 0) traits.push('HW_CPU_X86_AVX2');
  if (i % 3 === 0) traits.push('STORAGE_DISK_SSD');
  if (i % 5 === 0) traits.push('CUSTOM_T3');
  if (i % 100 === 99) traits.push('COMPUTE_STATUS_DISABLED');
  const inventories: Record<string, Inv> = {
    VCPU: { total: 32 + (i % 4) * 16, reserved: 0, min_unit: 1, max_unit: 128, step_size: 1, allocation_ratio: 16 },
    MEMORY_MB: { total: 65536 * (1 + (i % 4)), reserved: 512, min_unit: 1, max_unit: 262144, step_size: 1, allocation_ratio: 1.5 },
    DISK_GB: { total: 1000 + (i % 7) * 500, reserved: 0, min_unit: 1, max_unit: 4500, step_size: 1, allocation_ratio: 1 },
  };
  const used: Record<string, number> | null = i % 4 === 0 ? { VCPU: 8 + (i % 8), MEMORY_MB: 16384, DISK_GB: 200 } : null;
  return { uuid: uuid(1, i), traits, aggregate: AGGS[i % 50]!, inventories, used };
}

/** Decision log lines' candidate counts, read from the app's log (pino at info into this sink, otherwise discarded). */
class DecisionSink extends Writable {
  passed: number[] = [];
  override _write(chunk: Buffer, _encoding: string, done: () => void): void {
    const line = chunk.toString();
    if (line.includes('"msg":"decision"')) this.passed.push((JSON.parse(line) as { passed: number }).passed);
    done();
  }
}

async function fleet(n: number) {
  const store = openSqliteStore(':memory:');
  const sink = new DecisionSink();
  // No back-pressure: the claims right after the 100k-provider queries would meet the lag those left behind.
  const app = await buildApp({
    config: parseConfig({ data_dir: ':memory:' }), store, processMetrics: false, eventLoopDelay: () => 0,
    logger: { level: 'info', stream: sink },
  });
  await app.ready();
  const service = placementServices.get(app.berth)!;
  const m = service.model;
  m.traits.add('CUSTOM_T3');
  const t0 = nowMs();
  for (let i = 0; i < n; i++) {
    const spec = providerSpec(i);
    m.applyProvider({
      uuid: spec.uuid, name: `cn${i}`, parent_provider_uuid: null, generation: 1,
      inventories: spec.inventories, traits: spec.traits, aggregates: [spec.aggregate],
    });
    if (spec.used) {
      const c = uuid(2, i);
      m.applyConsumer(c, {
        uuid: c, project_id: 'p', user_id: 'u', consumer_type: 'INSTANCE', generation: 1, allocations: { [spec.uuid]: spec.used },
      });
    }
  }
  const loadMs = nowMs() - t0;
  const port = await listening(app);
  return { app, store, sink, port, loadMs };
}

const PLAIN = 'resources=VCPU:2,MEMORY_MB:2048,DISK_GB:20';
const NOVA = `limit=1000&member_of=!in:${AGGS[7]}&required=HW_CPU_X86_AVX2&resources=DISK_GB:1,MEMORY_MB:512,VCPU:1&root_required=!COMPUTE_STATUS_DISABLED`;
const QUERIES: Array<[string, string]> = [
  ['nothing matches', 'resources=VCPU:100000'],
  ['plain', PLAIN],
  ['required AVX2,!CUSTOM_T3', `${PLAIN}&required=HW_CPU_X86_AVX2,!CUSTOM_T3`],
  ['required in:AVX2,SSD', `${PLAIN}&required=in:HW_CPU_X86_AVX2,STORAGE_DISK_SSD`],
  ['member_of=!in:5 aggs', `${PLAIN}&member_of=!in:${AGGS.slice(0, 5).join(',')}`],
  ['limit=50', `${PLAIN}&limit=50`],
  ['nova-like (limit=1000)', NOVA],
];

/** Issue 16's goals: [size, query label] → the bounds. */
const GOALS: Array<{ n: number; label: string; p50?: number; p99?: number; rssMiB?: number; profile?: string }> = [
  { n: 1000, label: 'plain', p50: 2.5, profile: 'placement-1k-plain-http.after.txt' },
  { n: 10000, label: 'plain', p50: 25, p99: 50, profile: 'placement-10k-plain-http.after.txt' },
  { n: 100000, label: 'plain', p50: 300, rssMiB: 1024 },
  { n: 100000, label: 'nova-like (limit=1000)', p99: 20, profile: 'placement-100k-nova-http.after.txt' },
];

// ---------------------------------------------------------------- the reference

/** The query mix's parameters, parsed plainly (only what the mix uses). */
function refQuery(qs: string) {
  const params = new URLSearchParams(qs);
  const resources = params.get('resources')!.split(',').map((kv) => {
    const [rc, amount] = kv.split(':');
    return [rc!, Number(amount)] as const;
  });
  const required: string[][] = [];
  const forbidden: string[] = [];
  const r = params.get('required');
  if (r?.startsWith('in:')) required.push(r.slice(3).split(','));
  else for (const t of r?.split(',') ?? []) if (t.startsWith('!')) forbidden.push(t.slice(1)); else required.push([t]);
  const m = params.get('member_of');
  const forbiddenAggs = m?.startsWith('!in:') ? m.slice(4).split(',') : [];
  const rootForbidden = (params.get('root_required') ?? '').split(',').filter((t) => t.startsWith('!')).map((t) => t.slice(1));
  const limit = params.has('limit') ? Number(params.get('limit')) : null;
  return { resources, required, forbidden, forbiddenAggs, rootForbidden, limit };
}

/**
 * The expected candidates, in order: every provider that fits each class (used + amount ≤ (total − reserved) ×
 * ratio, min/max unit, step) with the traits and aggregates asked, ranked by Σ over the requested classes of its
 * min–max normalised free capacity, ties by uuid, the first `limit`.
 */
function reference(n: number, qs: string): Array<{ uuid: string; spec: ReturnType<typeof providerSpec> }> {
  const q = refQuery(qs);
  const passing: Array<{ uuid: string; spec: ReturnType<typeof providerSpec>; free: number[]; total: number }> = [];
  for (let i = 0; i < n; i++) {
    const spec = providerSpec(i);
    const traits = new Set(spec.traits);
    const fits = q.resources.every(([rc, amount]) => {
      const inv = spec.inventories[rc]!;
      const used = spec.used?.[rc] ?? 0;
      return used + amount <= (inv.total - inv.reserved) * inv.allocation_ratio && amount >= inv.min_unit &&
        amount <= inv.max_unit && amount % inv.step_size === 0;
    });
    if (!fits) continue;
    if (!q.required.every((anyOf) => anyOf.some((t) => traits.has(t)))) continue;
    if (q.forbidden.some((t) => traits.has(t)) || q.rootForbidden.some((t) => traits.has(t))) continue;
    if (q.forbiddenAggs.includes(spec.aggregate)) continue;
    const free = q.resources.map(([rc]) => {
      const inv = spec.inventories[rc]!;
      return Math.trunc((inv.total - inv.reserved) * inv.allocation_ratio) - (spec.used?.[rc] ?? 0);
    });
    passing.push({ uuid: spec.uuid, spec, free, total: 0 });
  }
  q.resources.forEach((_, k) => {
    const values = passing.map((c) => c.free[k]!);
    let lo = Infinity;
    let hi = -Infinity;
    for (const v of values) {
      lo = Math.min(lo, v);
      hi = Math.max(hi, v);
    }
    for (const c of passing) c.total += lo === hi ? 0 : (c.free[k]! - lo) / (hi - lo);
  });
  passing.sort((a, b) => (a.total !== b.total ? b.total - a.total : a.uuid < b.uuid ? -1 : a.uuid > b.uuid ? 1 : 0));
  return q.limit === null ? passing : passing.slice(0, q.limit);
}

interface Answer {
  allocation_requests: Array<{ allocations: Record<string, { resources: Record<string, number> }>; mappings: Record<string, string[]> }>;
  provider_summaries: Record<string, { resources: Record<string, { capacity: number; used: number }>; traits: string[] }>;
}

/** The answer against the reference: same candidates in the same order, each with its amounts, mapping and summary. */
function check(label: string, body: Answer, expected: ReturnType<typeof reference>, qs: string): void {
  const fail = (why: string) => {
    throw new Error(`${label}: the answer differs from the reference: ${why}`);
  };
  const requested = Object.fromEntries(refQuery(qs).resources);
  const got = body.allocation_requests;
  if (got.length !== expected.length) fail(`${got.length} candidates, expected ${expected.length}`);
  expected.forEach((e, k) => {
    const r = got[k]!;
    const providers = Object.keys(r.allocations);
    if (providers.length !== 1 || providers[0] !== e.uuid) fail(`candidate ${k} is ${providers.join(',')}, expected ${e.uuid}`);
    if (JSON.stringify(r.allocations[e.uuid]!.resources) !== JSON.stringify(requested)) fail(`candidate ${k}'s amounts`);
    if (JSON.stringify(r.mappings) !== JSON.stringify({ '': [e.uuid] })) fail(`candidate ${k}'s mappings`);
  });
  const summaries = Object.keys(body.provider_summaries);
  if (summaries.length !== expected.length) fail(`${summaries.length} provider summaries, expected ${expected.length}`);
  for (const e of expected) {
    const s = body.provider_summaries[e.uuid];
    if (!s) fail(`no summary of ${e.uuid}`);
    for (const rc of CLASSES) {
      const inv = e.spec.inventories[rc]!;
      const want = { capacity: Math.trunc((inv.total - inv.reserved) * inv.allocation_ratio), used: e.spec.used?.[rc] ?? 0 };
      if (JSON.stringify(s!.resources[rc]) !== JSON.stringify(want)) fail(`summary of ${e.uuid}: ${rc}`);
    }
    if ([...s!.traits].sort().join() !== [...e.spec.traits].sort().join()) fail(`summary of ${e.uuid}: traits`);
  }
}

// ---------------------------------------------------------------- measuring

const CHECKER = '--answer-checker';
interface CheckJob { port: number; n: number; label: string; q: string }
interface Checked { candidates: number; bodyBytes: number; floor: number }

/**
 * Reads one answer whole, checks it against the reference and times its JSON.stringify floor, in a child process:
 * done in the server's process (until 2026-12-05) each unlimited answer at 100,000 providers left the server's heap
 * the checker's garbage (the 45 MB body, its parsed objects, five stringified copies), which the next queries' timed
 * answers then met as collections (the Nova-like p99 at 100,000) and as RSS (1.1-1.35 GB) that were not the server's.
 */
function checkedElsewhere(job: CheckJob): Promise<Checked> {
  return jobInChild(import.meta.url, CHECKER, job, 'answer checker');
}

async function checkOne({ port, n, label, q }: CheckJob): Promise<Checked> {
  const answer = await fetchBody(port, `/allocation_candidates?${q}`);
  if (answer.status !== 200) throw new Error(`${label}: ${answer.status} ${answer.body.slice(0, 300)}`);
  const body = JSON.parse(answer.body) as Answer;
  check(label, body, reference(n, q), q);
  return { candidates: body.allocation_requests.length, bodyBytes: Buffer.byteLength(answer.body), floor: stringifyFloor(answer.body) };
}

serveJob(CHECKER, checkOne);

const HEADERS = { 'openstack-api-version': 'placement 1.39' };

/** One GET (the checked answer, read whole). */
function fetchBody(port: number, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, headers: HEADERS }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    req.end();
  });
}

/**
 * Samples this process's RSS every few milliseconds (the event loop turns between a streamed answer's chunks);
 * `before`: at the start, so that what the answers added shows apart from pages the heap kept from earlier work.
 */
function rssSampler() {
  // (process.memoryUsage.rss() alone: memoryUsage() also walks the heap's spaces, every 2 ms in the server's process.)
  const before = process.memoryUsage.rss();
  let peak = before;
  const timer = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage.rss());
  }, 2);
  return { before, stop: () => (clearInterval(timer), Math.max(peak, process.memoryUsage.rss())) };
}

/** JSON.stringify of the answer's object form: the serialisation floor the answer's p50 is read against. */
function stringifyFloor(body: string): number {
  const obj: unknown = JSON.parse(body);
  const samples: number[] = [];
  for (let i = 0; i < 5; i++) {
    const t0 = nowMs();
    JSON.stringify(obj);
    samples.push(nowMs() - t0);
  }
  return percentile(samples.sort((a, b) => a - b), 50);
}

/** A kept profile's `# where:` line (bench/profiles/): where the server's time went, printed beside a missed goal. */
function whereTimeGoes(profile: string | undefined): string {
  if (profile === undefined) return '';
  try {
    const line = readFileSync(new URL(`./profiles/${profile}`, import.meta.url), 'utf8').split('\n').find((l) => l.startsWith('# where: '));
    return line ? `; where the server's time goes (profiled): ${line.slice('# where: '.length)}` : '';
  } catch {
    return '';
  }
}

/** The goal line of a figure (also kept for npm run bench's summary), or '' when the figure has no goal. */
function verdict(n: number, label: string, p50: number, p99: number, rssMiB: number, anchor: string): string {
  const goal = GOALS.find((g) => g.n === n && g.label === label);
  if (!goal) return '';
  const parts: string[] = [];
  let met = true;
  if (goal.p50 !== undefined) {
    parts.push(`p50 ≤ ${goal.p50} ms`);
    met &&= p50 <= goal.p50;
  }
  if (goal.p99 !== undefined) {
    parts.push(`p99 ≤ ${goal.p99} ms`);
    met &&= p99 <= goal.p99;
  }
  if (goal.rssMiB !== undefined) {
    parts.push(`peak RSS ≤ ${goal.rssMiB} MiB`);
    met &&= rssMiB <= goal.rssMiB;
  }
  return `\n    ${reportGoal({
    figure: `GET /allocation_candidates ${label}, ${n} providers, keep-alive`,
    measured: `p50 ${p50.toFixed(2)} ms, p99 ${p99.toFixed(2)} ms, peak RSS ${rssMiB.toFixed(0)} MiB`,
    goal: parts.join(', '), met, anchor: met ? anchor : anchor + whereTimeGoes(goal.profile),
  })}`;
}

const CLAIM_HEADERS = { 'openstack-api-version': 'placement 1.39', 'content-type': 'application/json' };
let claimRound = 0;

/** PUT /allocations/{new consumer}: one at a time (latency), then 50 in flight (throughput through the store). */
async function claims(app: Awaited<ReturnType<typeof fleet>>['app'], n: number): Promise<void> {
  const put = (i: number) => app.inject({
    method: 'PUT', url: `/allocations/${uuid(3 + claimRound, i)}`, headers: CLAIM_HEADERS,
    payload: JSON.stringify({
      allocations: { [uuid(1, (i * 7919) % n)]: { resources: { VCPU: 1, MEMORY_MB: 512 } } },
      consumer_generation: null, project_id: 'p', user_id: 'u', consumer_type: 'INSTANCE',
    }),
  });
  claimRound++;
  const count = 400;
  const samples: number[] = [];
  for (let i = 0; i < count; i++) {
    const t0 = nowMs();
    const res = await put(i);
    samples.push(nowMs() - t0);
    if (res.statusCode !== 204) throw new Error(`claim: ${res.statusCode} ${res.body.slice(0, 300)}`);
  }
  console.log(summarize(`  ${'claim, one at a time'.padEnd(26)}`, samples));
  const t0 = nowMs();
  for (let i = count; i < 3 * count; i += 50) {
    const replies = await Promise.all(Array.from({ length: 50 }, (_, k) => put(i + k)));
    for (const res of replies) if (res.statusCode !== 204) throw new Error(`claim: ${res.statusCode} ${res.body.slice(0, 300)}`);
  }
  const ms = nowMs() - t0;
  console.log(`  ${'claims, 50 in flight'.padEnd(26)}: n=${2 * count} rate=${((2 * count) / (ms / 1000)).toFixed(0)}/s`);
}

export async function run(): Promise<void> {
  const sizes = (process.env.PLACEMENT_BENCH_SIZES ?? '1000,10000,100000').split(',').map(Number);
  for (const n of sizes) {
    const { app, store, sink, port, loadMs } = await fleet(n);
    gc();
    console.log(`\n-- ${n} providers: loaded in ${loadMs.toFixed(0)} ms; after loading and a GC: ${heapMiB()}, ` +
      `${(process.memoryUsage().rss / 1048576).toFixed(0)} MiB RSS (over HTTP, keep-alive, 1 connection)`);
    for (const [label, q] of QUERIES) {
      const path = `/allocation_candidates?${q}`;
      // The unlimited 100k queries answer ~45 MB each: keep them few (their goal is the p50 and the RSS). Where a p99
      // is a goal it comes from 100 answers or more: of 40 (the 10k queries' count until 2026-12-05) it is the slowest.
      const iterations = n >= 100000 ? (q.includes('limit') ? 100 : 5) : n >= 10000 ? (q.includes('limit') ? 200 : 100) : 300;
      // Untimed warm-up, so that the figures are the server's steady state: a query's first answers compile its
      // path and build each provider's kept summary fragment (once per provider generation), and the next few still
      // run partly unoptimised. Without it, the 10k plain query's p99 over 40 answers was its first answer (its CPU
      // in order, 2026-12-02: 288, 109, 52, 49, 66, 54, then 20–35 ms). The unlimited 100k answers (~45 MB) warm with one.
      // The timing client sends the warm-up itself: each load runs in a new client process, whose own first answers
      // are slow. No full GC is forced between queries (only once per fleet, after loading): on the 100,000-provider
      // heap (about 200 MB live) a forced collection before each query changed V8's own heap sizing, so that from the
      // third one on V8 started incremental marking by itself every ~40 requests with 35 MB of room left, which
      // doubled the Nova-like query's server CPU (7.4 → 13.3 ms a request) and put its p99 at 30-42 ms (2026-12-05,
      // bench/profiles/placement-100k-nova-http.after.txt). A server never forces one; a query now meets the garbage
      // of the ones before it as a server meets its earlier requests'.
      const warmup = n >= 100000 && !q.includes('limit') ? 1 : 10;
      let rss = rssSampler();
      const r = await httpLoad(port, () => ({ method: 'GET', path, headers: HEADERS }), {
        connections: 1, warmup, maxRequests: iterations, maxSeconds: 120,
        onWarm: () => {
          // The warm-up's lines first: a GET's decision line is written a few ms after its answer (deferred.ts).
          app.berth.deferred.flush();
          sink.passed = [];
          rss.stop();
          rss = rssSampler();
        },
      });
      const peakMiB = rss.stop() / 1048576;
      if (r.warmupStatuses[200] !== warmup) throw new Error(`${label}: warm-up statuses ${JSON.stringify(r.warmupStatuses)}`);
      if (r.statuses[200] !== iterations) throw new Error(`${label}: statuses ${JSON.stringify(r.statuses)}`);
      // Then one more answer, read whole and compared in full with the reference by a child process; every timed
      // answer had its candidate count (the decision log line).
      const { candidates, bodyBytes, floor } = await checkedElsewhere({ port, n, label, q });
      app.berth.deferred.flush();
      const wrong = sink.passed.filter((c) => c !== candidates).length;
      if (sink.passed.length !== iterations + 1 || wrong > 0) {
        throw new Error(`${label}: ${sink.passed.length} decisions logged, ${wrong} with a candidate count other than ${candidates}`);
      }
      const anchor = `JSON.stringify floor ${floor.toFixed(2)} ms (p50 ×${(r.p50 / floor).toFixed(1)})`;
      console.log(`  ${label.padEnd(26)}: n=${r.n} p50=${r.p50.toFixed(2)}ms p99=${r.p99.toFixed(2)}ms ` +
        `server CPU ${(r.cpuPerRequestUs / 1000).toFixed(2)} ms/req candidates=${candidates} ` +
        `body=${(bodyBytes / 1024).toFixed(0)} KiB peak RSS=${peakMiB.toFixed(0)} MiB ` +
        `(+${(peakMiB - rss.before / 1048576).toFixed(0)}); ${anchor}${verdict(n, label, r.p50, r.p99, peakMiB, anchor)}`);
    }
    await claims(app, n);
    await app.close();
    await store.close();
  }
}

if (process.argv[1]?.endsWith('placement.bench.ts') && process.argv[2] !== CHECKER) await run();
