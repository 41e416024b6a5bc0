// npm run soak: 60 s (SOAK_SECONDS) of mixed traffic against a Berth child process, from this second process,
// with autocannon. Prints throughput, p99, the error count (must be 0) and memory growth (must stay flat).
// Every claim made is released again in the same request loop, so live state stays bounded and any growth in
// memory is a leak, not data.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import autocannon from 'autocannon';

const root = resolve(import.meta.dirname, '..');
const seconds = Number(process.env.SOAK_SECONDS ?? 60);
const connections = Number(process.env.SOAK_CONNECTIONS ?? 32);
const maxGrowthMiB = Number(process.env.SOAK_MAX_GROWTH_MIB ?? 64);

const PLACEMENT = { 'content-type': 'application/json', 'openstack-api-version': 'placement 1.39' };
const JSON_HEADERS = { 'content-type': 'application/json' };

function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolvePort(port));
    });
  });
}

function rssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)![1]) / 1024;
}

async function call(base: string, method: string, path: string, body?: unknown, headers: Record<string, string> = JSON_HEADERS) {
  const res = await fetch(base + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  if (res.status >= 300) throw new Error(`${method} ${path} → ${res.status}: ${await res.text()}`);
  return res.status === 204 ? null : res.json();
}

const uuid = (prefix: number, i: number) =>
  `${prefix.toString(16).padStart(8, '0')}-0000-4000-8000-${i.toString(16).padStart(12, '0')}`;

async function seed(base: string): Promise<string[]> {
  for (let b = 0; b < 50; b++) {
    await call(base, 'PUT', `/backends/soak${b}@lvm`, {
      volume_backend_name: 'lvm', vendor_name: 'Open Source', driver_version: '3.0', storage_protocol: 'iSCSI',
      pools: Array.from({ length: 4 }, (_, p) => ({
        pool_name: `pool${p}`, total_capacity_gb: 100000, free_capacity_gb: 100000, provisioned_capacity_gb: 0,
        reserved_percentage: 5, max_over_subscription_ratio: 20, thin_provisioning_support: true,
        thick_provisioning_support: false,
      })),
    });
  }
  const providers: string[] = [];
  for (let i = 0; i < 200; i++) {
    const id = uuid(1, i);
    providers.push(id);
    const rp = (await call(base, 'POST', '/resource_providers', { uuid: id, name: `soak-cn${i}` }, PLACEMENT)) as { generation: number };
    await call(base, 'PUT', `/resource_providers/${id}/inventories`, {
      resource_provider_generation: rp.generation,
      inventories: {
        VCPU: { total: 1024, allocation_ratio: 16 },
        MEMORY_MB: { total: 1048576, allocation_ratio: 1.5 },
        DISK_GB: { total: 100000 },
      },
    }, PLACEMENT);
  }
  for (let n = 0; n < 30; n++) {
    const disks: Record<string, unknown> = {};
    for (let d = 0; d < 4; d++) {
      disks[`disk${d}`] = {
        path: `/var/lib/longhorn/disk${d}`, type: 'filesystem', tags: [], allowScheduling: true,
        evictionRequested: false, storageMaximum: 2 ** 44, storageAvailable: 2 ** 44, storageReserved: 0,
        storageScheduled: 0,
      };
    }
    await call(base, 'PUT', `/nodes/soak-node${n}`, {
      zone: `zone${n % 3}`, region: 'r1', tags: [], cordoned: false, ready: true, allowScheduling: true,
      evictionRequested: false, disks,
    });
  }
  return providers;
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'berth-soak-'));
  const port = await freePort();
  const child = spawn(process.execPath, [join(root, 'dist', 'main.js')], {
    env: { ...process.env, BERTH_PORT: String(port), BERTH_HOST: '127.0.0.1', BERTH_DATA_DIR: dataDir, BERTH_LOG_LEVEL: 'warn', BERTH_CONFIG: '' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const stop = () => { child.kill('SIGTERM'); rmSync(dataDir, { recursive: true, force: true }); };
  try {
    // Logs at warn (no per-request lines) so the figures are the scheduler's, not the logger's; so there is no
    // listen line to read the port from: poll until the port answers.
    let up = false;
    for (let i = 0; i < 300 && !up && child.exitCode === null; i++) {
      await new Promise((r) => setTimeout(r, 100));
      up = await fetch(`http://127.0.0.1:${port}/readyz`).then((r) => r.ok, () => false);
    }
    if (!up) throw new Error('berth did not become ready');
    const base = `http://127.0.0.1:${port}`;
    const providers = await seed(base);
    console.log(`seeded: 200 pools, ${providers.length} resource providers, 120 disks; running ${seconds}s with ${connections} connections`);

    let counter = 0;
    const memory: Array<[number, number]> = [];
    const started = Date.now();
    const sampler = setInterval(() => memory.push([(Date.now() - started) / 1000, rssMiB(child.pid!)]), 1000);

    // Each connection loops over this sequence: every claim is released before the loop repeats.
    type Ctx = { id?: string; replicas?: string[] };
    const requests: autocannon.Request[] = [
      {
        method: 'POST', path: '/volumes/schedule', headers: JSON_HEADERS,
        setupRequest: (req, ctx: Ctx) => {
          ctx.id = `soak-vol-${counter++}`;
          return { ...req, body: JSON.stringify({ id: ctx.id, size: 10 }) };
        },
      },
      { method: 'GET', path: '/pools?detail=true&size=10' },
      { method: 'DELETE', setupRequest: (req, ctx: Ctx) => ({ ...req, path: `/volumes/${ctx.id}` }) },
      { method: 'GET', path: '/allocation_candidates?resources=VCPU:2,MEMORY_MB:4096,DISK_GB:20&limit=50', headers: PLACEMENT },
      {
        method: 'PUT', headers: PLACEMENT,
        setupRequest: (req, ctx: Ctx) => {
          ctx.id = uuid(2, counter++);
          const rp = providers[counter % providers.length]!;
          return {
            ...req,
            path: `/allocations/${ctx.id}`,
            body: JSON.stringify({
              allocations: { [rp]: { resources: { VCPU: 2, MEMORY_MB: 4096, DISK_GB: 20 } } },
              project_id: uuid(3, 1), user_id: uuid(4, 1), consumer_generation: null, consumer_type: 'INSTANCE',
            }),
          };
        },
      },
      { method: 'DELETE', headers: PLACEMENT, setupRequest: (req, ctx: Ctx) => ({ ...req, path: `/allocations/${ctx.id}` }) },
      {
        method: 'POST', path: '/replicas/schedule', headers: JSON_HEADERS,
        setupRequest: (req) => ({
          ...req,
          body: JSON.stringify({ volume: { name: `soak-rv-${counter++}`, size: 2 ** 30, numberOfReplicas: 3 } }),
        }),
        onResponse: (_status, body, ctx: Ctx) => {
          try { ctx.replicas = (JSON.parse(body) as { replicas: Array<{ name: string }> }).replicas.map((r) => r.name); } catch { ctx.replicas = []; }
        },
      },
      ...[0, 1, 2].map((i): autocannon.Request => ({
        method: 'DELETE',
        setupRequest: (req, ctx: Ctx) => ({ ...req, path: `/replicas/${ctx.replicas?.[i] ?? 'missing'}` }),
      })),
    ];

    const result = await autocannon({ url: base, connections, duration: seconds, requests });
    clearInterval(sampler);

    const errors = result.errors + result.timeouts + result.non2xx;
    const warm = memory.filter(([t]) => t >= Math.min(10, seconds / 3));
    const first = warm[0]?.[1] ?? NaN;
    const last = warm.at(-1)?.[1] ?? NaN;
    const peak = Math.max(...warm.map(([, m]) => m));
    console.log(`requests: ${result.requests.total} in ${result.duration}s = ${result.requests.average.toFixed(0)} req/s`);
    console.log(`latency: p50 ${result.latency.p50} ms, p99 ${result.latency.p99} ms, max ${result.latency.max} ms`);
    console.log(`errors: ${errors} (connection errors ${result.errors}, timeouts ${result.timeouts}, non-2xx ${result.non2xx})`);
    console.log(`memory (RSS after warm-up): first ${first.toFixed(1)} MiB, last ${last.toFixed(1)} MiB, peak ${peak.toFixed(1)} MiB, growth ${(last - first).toFixed(1)} MiB`);
    const ok = errors === 0 && last - first <= maxGrowthMiB;
    console.log(ok ? 'soak: PASS' : `soak: FAIL (errors must be 0 and growth ≤ ${maxGrowthMiB} MiB)`);
    process.exitCode = ok ? 0 : 1;
  } finally {
    stop();
  }
}

await main();
