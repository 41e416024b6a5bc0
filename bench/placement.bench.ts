// Placement: GET /allocation_candidates over 1,000, 10,000 and 100,000 compute-node providers loaded in-process
// into the in-memory model (VCPU, MEMORY_MB, DISK_GB; a few traits; 50 aggregates; some allocations), queried
// through app.inject, then claims (PUT /allocations for new consumers) committed through the store. Real Placement
// needs ~350 ms for the plain query at 1,000 providers (reference §8).
import { buildApp } from '../src/app.ts';
import { parseConfig } from '../src/config.ts';
import { placementServices } from '../src/placement/routes/index.ts';
import { openSqliteStore } from '../src/store/sqlite.ts';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { heapMiB, nowMs, summarize } from './stats.ts';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const hex = (n: number, width: number) => n.toString(16).padStart(width, '0');
const uuid = (kind: number, i: number) => `${hex(kind, 8)}-0000-4000-8000-${hex(i, 12)}`;
const AGGS = Array.from({ length: 50 }, (_, i) => uuid(0xa, i));

async function fleet(n: number) {
  const store = openSqliteStore(':memory:');
  // No back-pressure: the claims right after the 100k-provider queries would meet the lag those left behind.
  const app = await buildApp({ config: parseConfig({ data_dir: ':memory:' }), store, processMetrics: false, eventLoopDelay: () => 0 });
  await app.ready();
  const service = placementServices.get(app.berth)!;
  const m = service.model;
  m.traits.add('CUSTOM_T3');
  const t0 = nowMs();
  for (let i = 0; i < n; i++) {
    const traits = ['COMPUTE_NODE'];
    if (i % 2 === 0) traits.push('HW_CPU_X86_AVX2');
    if (i % 3 === 0) traits.push('STORAGE_DISK_SSD');
    if (i % 5 === 0) traits.push('CUSTOM_T3');
    if (i % 100 === 99) traits.push('COMPUTE_STATUS_DISABLED');
    const rp = uuid(1, i);
    m.applyProvider({
      uuid: rp, name: `cn${i}`, parent_provider_uuid: null, generation: 1,
      inventories: {
        VCPU: { total: 32 + (i % 4) * 16, reserved: 0, min_unit: 1, max_unit: 128, step_size: 1, allocation_ratio: 16 },
        MEMORY_MB: { total: 65536 * (1 + (i % 4)), reserved: 512, min_unit: 1, max_unit: 262144, step_size: 1, allocation_ratio: 1.5 },
        DISK_GB: { total: 1000 + (i % 7) * 500, reserved: 0, min_unit: 1, max_unit: 4500, step_size: 1, allocation_ratio: 1 },
      },
      traits, aggregates: [AGGS[i % 50]!],
    });
    if (i % 4 === 0) {
      const c = uuid(2, i);
      m.applyConsumer(c, {
        uuid: c, project_id: 'p', user_id: 'u', consumer_type: 'INSTANCE', generation: 1,
        allocations: { [rp]: { VCPU: 8 + (i % 8), MEMORY_MB: 16384, DISK_GB: 200 } },
      });
    }
  }
  return { app, store, loadMs: nowMs() - t0 };
}

const PLAIN = 'resources=VCPU:2,MEMORY_MB:2048,DISK_GB:20';
const QUERIES: Array<[string, string]> = [
  ['nothing matches', 'resources=VCPU:100000'],
  ['plain', PLAIN],
  ['required AVX2,!CUSTOM_T3', `${PLAIN}&required=HW_CPU_X86_AVX2,!CUSTOM_T3`],
  ['required in:AVX2,SSD', `${PLAIN}&required=in:HW_CPU_X86_AVX2,STORAGE_DISK_SSD`],
  ['member_of=!in:5 aggs', `${PLAIN}&member_of=!in:${AGGS.slice(0, 5).join(',')}`],
  ['limit=50', `${PLAIN}&limit=50`],
  ['nova-like (limit=1000)', `limit=1000&member_of=!in:${AGGS[7]}&required=HW_CPU_X86_AVX2&resources=DISK_GB:1,MEMORY_MB:512,VCPU:1&root_required=!COMPUTE_STATUS_DISABLED`],
];

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
    const { app, store, loadMs } = await fleet(n);
    gc();
    console.log(`\n-- ${n} providers: loaded in ${loadMs.toFixed(0)} ms; after loading and a GC: ${heapMiB()}, ` +
      `${(process.memoryUsage().rss / 1048576).toFixed(0)} MiB RSS`);
    const rounds = n >= 100000 ? 3 : n >= 10000 ? 10 : 40;
    for (const [label, q] of QUERIES) {
      // The unlimited 100k queries answer ~20-30 MB each: keep them few.
      const iterations = n >= 100000 && !q.includes('limit') ? 2 : rounds;
      const samples: number[] = [];
      let candidates = 0;
      let bytes = 0;
      for (let i = 0; i < iterations + 1; i++) {
        const t0 = nowMs();
        const res = await app.inject({ method: 'GET', url: `/allocation_candidates?${q}`, headers: { 'openstack-api-version': 'placement 1.39' } });
        const ms = nowMs() - t0;
        if (res.statusCode !== 200) throw new Error(`${label}: ${res.statusCode} ${res.body.slice(0, 300)}`);
        if (i === 0) {
          // first call warms up the JIT; not counted
          candidates = (JSON.parse(res.body) as { allocation_requests: unknown[] }).allocation_requests.length;
          bytes = res.body.length;
          continue;
        }
        samples.push(ms);
      }
      console.log(summarize(`  ${label.padEnd(26)}`, samples, `candidates=${candidates} body=${(bytes / 1024).toFixed(0)} KiB`));
    }
    await claims(app, n);
    await app.close();
    await store.close();
  }
}

if (process.argv[1]?.endsWith('placement.bench.ts')) await run();
