// /metrics at fleet scale: 10,000 pools on 1,000 backends and 1,000 nodes × 4 disks reported through the API,
// 100,000 resource providers loaded into Placement's model, some decisions in every dialect; then the scrape's
// size, series count (per family, the largest first) and time through app.inject. Per-pool and per-disk gauges
// grow with the fleet; Placement's stay one series per resource class however many providers there are.
import { buildApp } from '../src/app.ts';
import { parseConfig } from '../src/config.ts';
import { placementServices } from '../src/placement/routes/index.ts';
import { openSqliteStore } from '../src/store/sqlite.ts';
import { nowMs, summarize } from './stats.ts';

const GiB = 2 ** 30;
const hex = (n: number, width: number) => n.toString(16).padStart(width, '0');
const uuid = (kind: number, i: number) => `${hex(kind, 8)}-0000-4000-8000-${hex(i, 12)}`;

type App = Awaited<ReturnType<typeof buildApp>>;

async function must(app: App, method: 'PUT' | 'POST', url: string, payload: object): Promise<void> {
  const res = await app.inject({ method, url, payload });
  if (res.statusCode >= 300) throw new Error(`${method} ${url}: ${res.statusCode} ${res.body.slice(0, 300)}`);
}

async function fleet(backends: number, nodes: number, providers: number): Promise<App> {
  const app = await buildApp({ config: parseConfig({ data_dir: ':memory:', sqlite_synchronous: 'normal' }), store: openSqliteStore(':memory:'), processMetrics: true });
  await app.ready();
  for (let b = 0; b < backends; b++) {
    const pools = Array.from({ length: 10 }, (_, p) => ({
      pool_name: `pool${p}`, total_capacity_gb: 10_000 + p * 1000, free_capacity_gb: 5_000 + b % 100,
      provisioned_capacity_gb: 6_000, thin_provisioning_support: p % 3 !== 0, thick_provisioning_support: p % 3 === 0,
      max_over_subscription_ratio: p % 5 === 0 ? 'auto' : 4,
    }));
    await must(app, 'PUT', `/backends/host-${hex(b, 4)}@b`, { volume_backend_name: 'b', pools });
  }
  for (let n = 0; n < nodes; n++) {
    const disks = Object.fromEntries(Array.from({ length: 4 }, (_, d) => [`disk-${d}`, {
      path: `/mnt/d${d}`, storageMaximum: 1000 * GiB, storageAvailable: (900 - (n % 50)) * GiB, storageReserved: 100 * GiB,
    }]));
    await must(app, 'PUT', `/nodes/node-${hex(n, 4)}`, { zone: `zone-${n % 3}`, disks });
  }
  // Providers go straight into the model: a 100,000-provider fleet over HTTP takes minutes to report and is not what
  // this measures. (Placement's bench loads its fleets the same way.)
  const model = placementServices.get(app.berth)!.model;
  for (let i = 0; i < providers; i++) {
    const rp = uuid(1, i);
    model.applyProvider({
      uuid: rp, name: `cn${i}`, parent_provider_uuid: null, generation: 1,
      inventories: {
        VCPU: { total: 64, reserved: 0, min_unit: 1, max_unit: 64, step_size: 1, allocation_ratio: 16 },
        MEMORY_MB: { total: 262144, reserved: 512, min_unit: 1, max_unit: 262144, step_size: 1, allocation_ratio: 1.5 },
        DISK_GB: { total: 2000, reserved: 0, min_unit: 1, max_unit: 2000, step_size: 1, allocation_ratio: 1 },
        ...(i % 10 === 0 ? { PCI_DEVICE: { total: 4, reserved: 0, min_unit: 1, max_unit: 4, step_size: 1, allocation_ratio: 1 } } : {}),
      },
      traits: ['COMPUTE_NODE'], aggregates: [],
    });
  }
  // Decisions in each dialect fill the counters and histograms with their usual label values.
  for (let i = 0; i < 50; i++) {
    await must(app, 'POST', '/volumes/schedule', { size: 10 });
    await must(app, 'POST', '/replicas/schedule', { volume: { name: `pvc-${i}`, size: GiB, numberOfReplicas: 3 } });
    const res = await app.inject({ url: '/allocation_candidates?resources=VCPU:1&limit=10', headers: { 'openstack-api-version': 'placement 1.39' } });
    if (res.statusCode !== 200) throw new Error(`allocation_candidates: ${res.statusCode}`);
  }
  await app.inject({ method: 'POST', url: '/volumes/schedule', payload: { size: 10_000_000 } });
  return app;
}

/** Series per family: sample lines grouped by metric name, histograms' _bucket/_sum/_count under their family. */
function seriesByFamily(body: string): Map<string, number> {
  const counts = new Map<string, number>();
  let family = '';
  for (const line of body.split('\n')) {
    if (line.startsWith('# TYPE ')) family = line.split(' ')[2]!;
    else if (line !== '' && !line.startsWith('#')) counts.set(family, (counts.get(family) ?? 0) + 1);
  }
  return counts;
}

export async function run(): Promise<void> {
  const [backends, nodes, providers] = (process.env.METRICS_BENCH_FLEET ?? '1000,1000,100000').split(',').map(Number) as [number, number, number];
  const t0 = nowMs();
  const app = await fleet(backends, nodes, providers);
  console.log(`fleet: ${backends * 10} pools on ${backends} backends, ${nodes} nodes × 4 disks, ${providers} providers ` +
    `(loaded in ${((nowMs() - t0) / 1000).toFixed(1)} s)`);
  const samples: number[] = [];
  let body = '';
  for (let i = 0; i < 21; i++) {
    const start = nowMs();
    const res = await app.inject('/metrics');
    const ms = nowMs() - start;
    if (res.statusCode !== 200) throw new Error(`/metrics: ${res.statusCode}`);
    body = res.body;
    if (i > 0) samples.push(ms); // the first warms up the JIT
  }
  const families = [...seriesByFamily(body)].sort((a, b) => b[1] - a[1]);
  const series = families.reduce((n, [, c]) => n + c, 0);
  const placement = families.filter(([name]) => name.startsWith('berth_placement_')).reduce((n, [, c]) => n + c, 0);
  console.log(summarize('  GET /metrics', samples, `size=${(Buffer.byteLength(body) / 1048576).toFixed(2)} MiB ` +
    `(${(Buffer.byteLength(body) / series).toFixed(0)} B/series) series=${series}, of them Placement's ${placement} ` +
    `for ${providers} providers`));
  console.log(`  largest families: ${families.slice(0, 6).map(([n, c]) => `${n} ${c}`).join(', ')}`);
  await app.close();
}

if (process.argv[1]?.endsWith('metrics.bench.ts')) await run();
