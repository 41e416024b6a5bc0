// Replica scheduling at scale: 1,000 nodes × 4 disks, 10,000 volumes × 3 replicas placed through the API
// (app.inject). Prints placements per second, request latency, and the cluster's balance score at the end next to
// what Longhorn ≤ 1.10's "disk with the most usable storage" gives on the same cluster and volumes.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildApp } from '../src/app.ts';
import { parseConfig } from '../src/config.ts';
import { balanceScore, selectMostUsableLegacy } from '../src/replicas/balance.ts';
import { diskId, type DiskView, type NodeView } from '../src/replicas/model.ts';
import { scheduleVolume } from '../src/replicas/scheduler.ts';
import { defaultSettings } from '../src/replicas/settings.ts';
import { usableStorage } from '../src/replicas/space.ts';
import { SqliteStore } from '../src/store/sqlite.ts';
import { heapMiB, mulberry32, nowMs, summarize } from './stats.ts';

const GiB = 1024 ** 3;
const NODES = Number(process.env.BENCH_REPLICAS_NODES ?? 1000);
const VOLUMES = Number(process.env.BENCH_REPLICAS_VOLUMES ?? 10_000);
const DISKS_PER_NODE = 4;
const ZONES = 10;

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

/** Places the volumes with the pure scheduler and a given final choice, on mutable copies of the disks. */
function simulate(cluster: ReturnType<typeof makeCluster>, select: 'balanced' | 'legacy'): { usable: number[]; placed: number; failed: number; ms: number } {
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
  for (const v of cluster.volumes) {
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
  const store = new SqliteStore(dir, { synchronous: 'normal' }).async();
  const app = await buildApp({ config: parseConfig({ data_dir: dir }), store, processMetrics: false });
  await app.ready();
  try {
    const initialUsable = Object.values(cluster.nodes).flatMap((n) => Object.values(n.disks).map((d) => usableStorage(d)));
    console.log(`cluster: ${NODES} nodes × ${DISKS_PER_NODE} disks in ${ZONES} zones; ${VOLUMES} volumes × 3 replicas, 1–200 GiB; store ${store.location} (synchronous=NORMAL)`);
    console.log(describeBalance('before', initialUsable));

    const putSamples: number[] = [];
    for (const n of cluster.nodes) {
      const t0 = nowMs();
      const res = await app.inject({ method: 'PUT', url: `/nodes/${n.name}`, payload: { zone: n.zone, disks: n.disks } });
      putSamples.push(nowMs() - t0);
      if (res.statusCode !== 200) throw new Error(`PUT /nodes/${n.name}: ${res.statusCode} ${res.body}`);
    }
    console.log(summarize('PUT /nodes/{name} (4 disks)', putSamples));

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
    console.log(summarize('POST /replicas/schedule (3 replicas)', samples,
      `placements=${placements} unscheduled=${unscheduled} placements/s=${(placements / elapsed).toFixed(0)}`));

    const t0 = nowMs();
    const explained = await app.inject({ method: 'POST', url: '/replicas/schedule?dry_run=true&explain=true', payload: { volume: { name: 'explain-probe', size: GiB, numberOfReplicas: 3 } } });
    console.log(`one dry run with explain=true: ${(nowMs() - t0).toFixed(1)} ms, ${(explained.body.length / 1024).toFixed(0)} KiB`);

    const listed = (await app.inject({ method: 'GET', url: '/nodes' })).json() as { nodes: Array<{ disks: Record<string, { storageAvailable: number; storageReserved: number; storageScheduled: number; storageMaximum: number }> }> };
    const apiUsable = listed.nodes.flatMap((n) => Object.values(n.disks).map((d) => usableStorage(d)));
    console.log(describeBalance('after, Longhorn v1.11 balance selection (Berth, through the API)', apiUsable));

    const legacy = simulate(cluster, 'legacy');
    console.log(describeBalance('after, Longhorn ≤ v1.10 disk with the most usable storage (same cluster and volumes, pure simulation)', legacy.usable));
    console.log(`  legacy: placed ${legacy.placed}, unscheduled ${legacy.failed}; ` +
      `disks with no usable space left: balance ${apiUsable.filter((u) => u === 0).length}, legacy ${legacy.usable.filter((u) => u === 0).length}`);
    const check = simulate(cluster, 'balanced');
    const same = check.usable.length === apiUsable.length && check.usable.every((u, i) => u === apiUsable[i]);
    console.log(`  sanity: the pure simulation with the balance selection ${same ? 'matches' : 'DIFFERS FROM'} the API run`);
    console.log(`  pure scheduler alone (no HTTP, no store): ${(check.ms / VOLUMES).toFixed(3)} ms per 3-replica decision`);
    console.log(heapMiB());
  } finally {
    await app.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
