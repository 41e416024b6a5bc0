// Replica scheduling at scale: 1,000 nodes × 4 disks, 10,000 volumes × 3 replicas placed through the API, one
// request after another (app.inject), then the same volumes over HTTP on a fresh store (keep-alive, 16 in flight),
// each a real claim committed to SQLite (synchronous=NORMAL). Prints placements per second, request latency, the
// goal of issue 16 beside it and the ratio to Fastify's ceiling measured in the same run; and the cluster's balance
// score at the end next to what Longhorn ≤ 1.10's "disk with the most usable storage" gives on the same volumes.
// Both runs are checked against the pure scheduler: their final per-disk figures equal a pure simulation of the
// same volumes in the order the server claimed them.
// Knobs: BENCH_REPLICAS_NODES, BENCH_REPLICAS_VOLUMES, BENCH_REPLICAS_HTTP_SECONDS (the HTTP run's time bound).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { buildApp } from '../src/app.ts';
import { parseConfig } from '../src/config.ts';
import { balanceScore, selectMostUsableLegacy } from '../src/replicas/balance.ts';
import { diskId, type DiskView, type NodeView } from '../src/replicas/model.ts';
import { scheduleVolume } from '../src/replicas/scheduler.ts';
import { defaultSettings } from '../src/replicas/settings.ts';
import { usableStorage } from '../src/replicas/space.ts';
import type { AsyncStore } from '../src/store/store.ts';
import { SqliteStore } from '../src/store/sqlite.ts';
import { reportGoal } from './goals.ts';
import { fastifyCeiling, formatLoad, httpLoad, listening } from './http-load.ts';
import { mulberry32 } from '../test/random.ts';
import { heapMiB, nowMs, summarize } from './stats.ts';

const GiB = 1024 ** 3;
const NODES = Number(process.env.BENCH_REPLICAS_NODES ?? 1000);
const VOLUMES = Number(process.env.BENCH_REPLICAS_VOLUMES ?? 10_000);
const HTTP_SECONDS = Number(process.env.BENCH_REPLICAS_HTTP_SECONDS ?? 30);
const HTTP_CONNECTIONS = 16;
const DISKS_PER_NODE = 4;
const ZONES = 10;
/** Issue 16's goal for this scenario. */
const GOAL = { placementsPerSecond: 3_000, p99Ms: 30 };
/** The store kind of Berth's replica records (src/replicas/service.ts): their generations give the order of claims. */
const REPLICA_KIND = 'replicas.replica';

interface DiskReportBody {
  path: string; storageMaximum: number; storageAvailable: number; storageReserved: number; storageScheduled: number;
}

function makeCluster() {
  const rand = mulberry32(42);
  const sizes = [512, 1024, 2048, 4096].map((g) => g * GiB);
  const nodes: Array<{ name: string; zone: string; disks: Record<string, DiskReportBody> }> = [];
  for (let i = 0; i < NODES; i++) {
    const disks: Record<string, DiskReportBody> = {};
    for (let k = 0; k < DISKS_PER_NODE; k++) {
      const max = sizes[Math.floor(rand() * sizes.length)]!;
      // Some space already used by other data, some reserved, some scheduled outside Berth.
      const avail = Math.floor(max * (0.55 + 0.45 * rand()));
      disks[`disk-${k}`] = {
        path: `/mnt/disk${k}`, storageMaximum: max, storageAvailable: avail,
        storageReserved: Math.floor(max * 0.1 * rand()), storageScheduled: Math.floor(max * 0.2 * rand()),
      };
    }
    nodes.push({ name: `node-${String(i).padStart(4, '0')}`, zone: `zone-${i % ZONES}`, disks });
  }
  const volumes = Array.from({ length: VOLUMES }, (_, i) => ({ name: `pvc-${i}`, size: (1 + Math.floor(rand() * 200)) * GiB }));
  return { nodes, volumes };
}

type Cluster = ReturnType<typeof makeCluster>;

/** Places the volumes (default the cluster's, in order) with the pure scheduler and a given final choice, on mutable copies of the disks. */
function simulate(cluster: Cluster, select: 'balanced' | 'legacy', volumes = cluster.volumes): { usable: number[]; placed: number; failed: number; ms: number } {
  type MutableDisk = { -readonly [K in keyof DiskView]: DiskView[K] };
  const all: MutableDisk[] = [];
  const views: NodeView[] = cluster.nodes.map((n) => ({
    name: n.name, zone: n.zone, region: '', tags: [], cordoned: false, ready: true, allowScheduling: true,
    evictionRequested: false, reportedAt: 0,
    disks: Object.keys(n.disks).sort().map((d) => {
      const r = n.disks[d]!;
      const disk: MutableDisk = { id: diskId(n.name, d), node: n.name, name: d, type: 'filesystem', tags: [], allowScheduling: true, evictionRequested: false, ...r };
      all.push(disk);
      return disk;
    }),
  }));
  const byId = new Map(all.map((d) => [d.id, d]));
  const settings = defaultSettings();
  let placed = 0;
  let failed = 0;
  const t0 = nowMs();
  for (const v of volumes) {
    const r = scheduleVolume({
      nodes: views, settings, now: 0, staleAfterSeconds: 0, explain: false, replicas: [],
      volume: { name: v.name, size: v.size, actualSize: 0, numberOfReplicas: 3, nodeSelector: [], diskSelector: [], dataEngine: 'v1', replicaSoftAntiAffinity: 'ignored', replicaZoneSoftAntiAffinity: 'ignored', replicaDiskSoftAntiAffinity: 'ignored', replicaAutoBalance: 'ignored' },
      ...(select === 'legacy' ? { select: (c: readonly DiskView[]) => selectMostUsableLegacy(c) } : {}),
    });
    for (const p of r.placements) byId.get(p.disk.id)!.storageScheduled += v.size;
    placed += r.placements.length;
    failed += r.unscheduled.length;
  }
  return { usable: all.map((d) => usableStorage(d)), placed, failed, ms: nowMs() - t0 };
}

/** Every disk's usable space as GET /nodes shows it (nodes by name, disks by name: the simulation's order). */
async function usableThroughApi(app: Awaited<ReturnType<typeof buildApp>>): Promise<number[]> {
  const listed = (await app.inject({ method: 'GET', url: '/nodes' })).json() as { nodes: Array<{ disks: Record<string, DiskReportBody> }> };
  return listed.nodes.flatMap((n) => Object.keys(n.disks).sort().map((d) => usableStorage(n.disks[d]!)));
}

/** The volumes the store holds replicas of, in the order they were claimed (their replicas' generations), with the replica count. */
async function claimOrder(store: AsyncStore, cluster: Cluster): Promise<{ volumes: Cluster['volumes']; replicas: number }> {
  const records = await store.load<{ volume: string }>(REPLICA_KIND);
  const first = new Map<string, number>();
  for (const r of records) first.set(r.value.volume, Math.min(first.get(r.value.volume) ?? Infinity, r.generation));
  const byName = new Map(cluster.volumes.map((v) => [v.name, v]));
  const volumes = [...first].sort((a, b) => a[1] - b[1]).map(([name]) => byName.get(name)!);
  return { volumes, replicas: records.length };
}

/** Times every commit of the engine from now on: how many held the event loop over 1 ms, and for how long. */
function timedCommits(engine: SqliteStore): { describe(): string } {
  const commit = engine.commit.bind(engine);
  const ms: number[] = [];
  engine.commit = (writes, expect) => {
    const t0 = nowMs();
    try {
      return commit(writes, expect);
    } finally {
      ms.push(nowMs() - t0);
    }
  };
  return {
    describe() {
      const slow = ms.filter((m) => m > 1);
      return `${ms.length} commits, ${slow.length} over 1 ms (${slow.reduce((a, b) => a + b, 0).toFixed(0)} ms in all, the longest ${Math.max(0, ...ms).toFixed(1)} ms)`;
    },
  };
}

function sameFigures(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((u, i) => u === b[i]);
}

/** A production-like logger: pino at info into a sink, so that the request and decision lines are paid for. */
const discardingLogger = () => ({ level: 'info', stream: new Writable({ write: (_chunk, _encoding, done) => done() }) });

async function openApp(dir: string, logger: boolean) {
  const store = new SqliteStore(dir, { synchronous: 'normal' }).async();
  const app = await buildApp({ config: parseConfig({ data_dir: dir }), store, processMetrics: false, ...(logger ? { logger: discardingLogger() } : {}) });
  await app.ready();
  return { store, app };
}

async function putNodes(app: Awaited<ReturnType<typeof buildApp>>, cluster: Cluster): Promise<number[]> {
  const samples: number[] = [];
  for (const n of cluster.nodes) {
    const t0 = nowMs();
    const res = await app.inject({ method: 'PUT', url: `/nodes/${n.name}`, payload: { zone: n.zone, disks: n.disks } });
    samples.push(nowMs() - t0);
    if (res.statusCode !== 200) throw new Error(`PUT /nodes/${n.name}: ${res.statusCode} ${res.body}`);
  }
  return samples;
}

/**
 * The volumes over HTTP on a fresh store, 16 requests in flight on keep-alive connections, until every one was sent
 * or the time bound; then Fastify's ceiling with the same logger and load. Checked: the final per-disk figures equal
 * a pure simulation of the volumes in the order the server claimed them.
 */
async function overHttp(cluster: Cluster): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'berth-replicas-bench-http-'));
  const { store, app } = await openApp(dir, true);
  const load = { connections: HTTP_CONNECTIONS, maxRequests: cluster.volumes.length, maxSeconds: HTTP_SECONDS };
  try {
    await putNodes(app, cluster);
    const port = await listening(app);
    const commits = timedCommits(store.sync);
    const cpu = process.cpuUsage();
    const result = await httpLoad(port, (i) => {
      const v = cluster.volumes[i]!;
      return { method: 'POST', path: '/replicas/schedule', body: JSON.stringify({ volume: { name: v.name, size: v.size, numberOfReplicas: 3 } }) };
    }, load);
    const { volumes, replicas } = await claimOrder(store, cluster);
    const used = process.cpuUsage(cpu);
    console.log(formatLoad(`POST /replicas/schedule over HTTP (${HTTP_CONNECTIONS} in flight, keep-alive, logger at info, ≤${HTTP_SECONDS} s)`, result));
    // What the server spent per request (on a loaded machine a steadier figure than the rate), and the commits that
    // held the event loop (SQLite's automatic checkpoint ran inside them before the checkpoint thread).
    console.log(`  server CPU per request: ${((used.user + used.system) / 1000 / result.n).toFixed(3)} ms (user ${(used.user / 1000 / result.n).toFixed(3)}, system ${(used.system / 1000 / result.n).toFixed(3)}); ` +
      `${commits.describe()}; checkpoint thread: ${JSON.stringify(store.sync.checkpointStats() ?? 'not started')}`);
    const check = simulate(cluster, 'balanced', volumes);
    const same = check.placed === replicas && (result.statuses[200] ?? 0) === volumes.length &&
      sameFigures(check.usable, await usableThroughApi(app));
    console.log(`  sanity: ${replicas} replicas of ${volumes.length} volumes; the pure simulation of them in the order the server claimed them ` +
      `${same ? 'matches' : 'DIFFERS FROM'} the HTTP run`);
    const ceiling = await fastifyCeiling({ logger: discardingLogger() }, load);
    console.log(formatLoad('  Fastify\'s ceiling here (GET of an empty route, same plugins and logger)', ceiling));
    const perSecond = replicas / result.seconds;
    console.log(`  ${reportGoal({
      figure: `POST /replicas/schedule, ${NODES} nodes × ${DISKS_PER_NODE} disks, 3 replicas claimed each, ${HTTP_CONNECTIONS} connections keep-alive`,
      measured: `${perSecond.toFixed(0)} placements/s (${result.rate.toFixed(0)} requests/s), p50 ${result.p50.toFixed(2)} ms, p99 ${result.p99.toFixed(2)} ms` +
        (same ? '' : ' (ANSWERS DIFFER)'),
      goal: `≥ ${GOAL.placementsPerSecond} placements/s, p99 ≤ ${GOAL.p99Ms} ms`,
      met: same && perSecond >= GOAL.placementsPerSecond && result.p99 <= GOAL.p99Ms,
      anchor: `Fastify's ceiling ${ceiling.rate.toFixed(0)} requests/s; scheduling reaches ${((100 * result.rate) / ceiling.rate).toFixed(1)} % of it`,
    })}`);
  } finally {
    await app.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

function describeBalance(label: string, usable: number[]): string {
  const max = Math.max(...usable);
  const min = Math.min(...usable);
  const mean = usable.reduce((a, b) => a + b, 0) / usable.length;
  return `${label}: balance score (max − min)/mean over every disk's usable space = ${balanceScore(usable).toFixed(4)} ` +
    `(min ${(min / GiB).toFixed(0)} GiB, mean ${(mean / GiB).toFixed(0)} GiB, max ${(max / GiB).toFixed(0)} GiB)`;
}

export async function run(): Promise<void> {
  const cluster = makeCluster();
  const dir = mkdtempSync(join(tmpdir(), 'berth-replicas-bench-'));
  const { store, app } = await openApp(dir, false);
  try {
    const initialUsable = Object.values(cluster.nodes).flatMap((n) => Object.values(n.disks).map((d) => usableStorage(d)));
    console.log(`cluster: ${NODES} nodes × ${DISKS_PER_NODE} disks in ${ZONES} zones; ${VOLUMES} volumes × 3 replicas, 1–200 GiB; store ${store.location} (synchronous=NORMAL)`);
    console.log(describeBalance('before', initialUsable));

    console.log(summarize('PUT /nodes/{name} (4 disks)', await putNodes(app, cluster)));

    const samples: number[] = [];
    let placements = 0;
    let unscheduled = 0;
    const started = nowMs();
    for (const v of cluster.volumes) {
      const t0 = nowMs();
      const res = await app.inject({ method: 'POST', url: '/replicas/schedule', payload: { volume: { name: v.name, size: v.size, numberOfReplicas: 3 } } });
      samples.push(nowMs() - t0);
      if (res.statusCode !== 200) throw new Error(`schedule ${v.name}: ${res.statusCode} ${res.body}`);
      const body = res.json() as { replicas: unknown[]; unscheduled?: unknown[] };
      placements += body.replicas.length;
      unscheduled += body.unscheduled?.length ?? 0;
    }
    const elapsed = (nowMs() - started) / 1000;
    console.log(summarize('POST /replicas/schedule (3 replicas, app.inject, one at a time)', samples,
      `placements=${placements} unscheduled=${unscheduled} placements/s=${(placements / elapsed).toFixed(0)}`));

    const t0 = nowMs();
    const explained = await app.inject({ method: 'POST', url: '/replicas/schedule?dry_run=true&explain=true', payload: { volume: { name: 'explain-probe', size: GiB, numberOfReplicas: 3 } } });
    console.log(`one dry run with explain=true: ${(nowMs() - t0).toFixed(1)} ms, ${(explained.body.length / 1024).toFixed(0)} KiB`);

    const apiUsable = await usableThroughApi(app);
    console.log(describeBalance('after, Longhorn v1.11 balance selection (Berth, through the API)', apiUsable));

    const legacy = simulate(cluster, 'legacy');
    console.log(describeBalance('after, Longhorn ≤ v1.10 disk with the most usable storage (same cluster and volumes, pure simulation)', legacy.usable));
    console.log(`  legacy: placed ${legacy.placed}, unscheduled ${legacy.failed}; ` +
      `disks with no usable space left: balance ${apiUsable.filter((u) => u === 0).length}, legacy ${legacy.usable.filter((u) => u === 0).length}`);
    const check = simulate(cluster, 'balanced');
    const same = check.placed === placements && sameFigures(check.usable, apiUsable);
    console.log(`  sanity: the pure simulation with the balance selection ${same ? 'matches' : 'DIFFERS FROM'} the API run`);
    console.log(`  pure scheduler alone (no HTTP, no store, nothing kept between decisions): ${(check.ms / VOLUMES).toFixed(3)} ms per 3-replica decision`);
    console.log(heapMiB());
  } finally {
    await app.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
  await overHttp(cluster);
}
