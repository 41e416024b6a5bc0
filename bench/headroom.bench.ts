// Headroom over 10,000 pools on 1,000 backends: "how many more of these fit?" for plain thin requests (truncated at
// the default max of 100,000), thick ones, a capability extra spec, a zone, and a size so large that every pool's
// count is its closed form (no ordering at all); in-process, then over HTTP (the JSON of 10,000 pools included).
// Two weighers couple the pools (min–max normalisation): that case follows the order with the bounds kept as counts
// at the extremes and a tree of totals, recomputing every total only when a bound moved; measured at small and large max.
import { buildApp } from '../src/app.ts';
import { parseConfig } from '../src/config.ts';
import { openSqliteStore } from '../src/store/sqlite.ts';
import type { HeadroomBody } from '../src/volumes/schemas.ts';
import { VolumesService } from '../src/volumes/service.ts';
import { nowMs, summarize } from './stats.ts';
import { xorshift } from '../test/random.ts';
import { BACKENDS, backendReport, POOLS_PER_BACKEND } from './volumes-fleet.ts';

const REQUESTS: Array<[string, HeadroomBody]> = [
  ['thin 10 GiB, max 100,000 (truncated)', { size: 10, max: 100_000 }],
  ['thick 50 GiB, max 100,000', { size: 50, volume_type: { extra_specs: { 'provisioning:type': 'thick' } }, max: 100_000 }],
  ['tier=gold thin, 20 GiB', { size: 20, volume_type: { extra_specs: { tier: 'gold', thin_provisioning_support: '<is> True' } }, max: 100_000 }],
  ['zone az2, 10 GiB', { size: 10, availability_zone: 'az2', max: 100_000 }],
  ['thin 500,000 GiB (closed form only, not truncated)', { size: 500_000, max: 100_000 }],
  ['thin 10 GiB, max 1,000', { size: 10, max: 1_000 }],
];

async function fleet(config = parseConfig({ data_dir: ':memory:' })): Promise<VolumesService> {
  const service = await VolumesService.open(config, openSqliteStore(':memory:'), Date.now);
  const random = xorshift(42);
  for (let b = 0; b < BACKENDS; b++) await service.applyReport(`host${b}@backend${b}`, backendReport(b, random));
  return service;
}

function time(label: string, n: number, once: () => unknown): void {
  for (let i = 0; i < 3; i++) once(); // warm-up
  const samples: number[] = [];
  let last: unknown;
  for (let i = 0; i < n; i++) {
    const start = nowMs();
    last = once();
    samples.push(nowMs() - start);
  }
  const { fits, truncated } = last as { fits: number; truncated: boolean };
  console.log(summarize(label, samples, `fits=${fits} truncated=${truncated}`));
}

export async function run(): Promise<void> {
  console.log(`${BACKENDS * POOLS_PER_BACKEND} pools; headroom counts each pool in closed form, then orders by the weigher`);
  const service = await fleet();
  for (const [label, body] of REQUESTS) time(`in-process, ${label}`, 20, () => service.headroom(body));

  const twoWeighers = await fleet(parseConfig({ data_dir: ':memory:', scheduler_default_weighers: ['CapacityWeigher', 'AllocatedCapacityWeigher'] }));
  time('in-process, two weighers, thin 10 GiB, max 100', 20, () => twoWeighers.headroom({ size: 10, max: 100 }));
  time('in-process, two weighers, thin 10 GiB, max 10,000', 5, () => twoWeighers.headroom({ size: 10, max: 10_000 }));
  time('in-process, two weighers, thin 10 GiB, max 100,000', 5, () => twoWeighers.headroom({ size: 10, max: 100_000 }));
  time('in-process, two weighers, thin 500,000 GiB (closed form only)', 20, () => twoWeighers.headroom({ size: 500_000, max: 100_000 }));

  const store = openSqliteStore(':memory:');
  const app = await buildApp({ config: parseConfig({ data_dir: ':memory:' }), store, processMetrics: false, eventLoopDelay: () => 0 });
  await app.ready();
  try {
    const random = xorshift(42);
    for (let b = 0; b < BACKENDS; b++) {
      await app.inject({ method: 'PUT', url: `/backends/host${b}@backend${b}`, payload: backendReport(b, random) as object });
    }
    const samples: number[] = [];
    let body = '';
    for (let i = 0; i < 23; i++) {
      const start = nowMs();
      const r = await app.inject({ method: 'POST', url: '/volumes/headroom', payload: { size: 10 } });
      if (i >= 3) samples.push(nowMs() - start);
      body = r.body;
    }
    console.log(summarize('over HTTP (inject), thin 10 GiB, default max', samples, `${(body.length / 1024).toFixed(0)} KiB answer`));
  } finally {
    await app.close();
    await store.close();
  }
}
