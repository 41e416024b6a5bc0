// The best-first decision against the engine's full run, on generated fleets: the same winner (ties included), the
// same total weight, the same counts (passed, rejections per filter) and a miss on the same requests — before and
// after claims move pools in the orders it keeps.
import fc from 'fast-check';
import t from 'tap';
import { parseConfig } from '../../src/config.ts';
import { BestFirst } from '../../src/volumes/best-first.ts';
import type { Capacity } from '../../src/volumes/capacity.ts';
import { compileExtraSpecs } from '../../src/volumes/extra-specs.ts';
import { PoolTable, type PoolState, type VolumeRequest } from '../../src/volumes/model.ts';
import { volumesPipeline, type VolumesPipeline } from '../../src/volumes/scheduler.ts';

// Few distinct figures (ties in weight and in row order), fractions, huge figures (rounding near the winner).
const gib = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(0, 10, 100, 250, 1000) },
  { weight: 3, arbitrary: fc.integer({ min: 0, max: 5000 }) },
  { weight: 2, arbitrary: fc.double({ min: 0, max: 5000, noNaN: true, noDefaultInfinity: true }) },
  { weight: 1, arbitrary: fc.double({ min: 1e14, max: 1e16, noNaN: true, noDefaultInfinity: true }) },
);
const capacity: fc.Arbitrary<Capacity> = fc.oneof(
  { weight: 10, arbitrary: gib },
  { weight: 1, arbitrary: fc.constantFrom('infinite' as const, 'unknown' as const) },
);
const poolArb = fc.record({
  total: capacity,
  free: capacity,
  provisioned: gib,
  reservedPercentage: fc.oneof(fc.constant(0), fc.constant(5), fc.integer({ min: 0, max: 100 })),
  thinSupport: fc.boolean(),
  // 20 is the configured ratio; the others as an 'auto' ratio or a report leaves them (below 1: invalid).
  mosr: fc.oneof(fc.constant(20), fc.constant(1), fc.double({ min: 0.5, max: 30, noNaN: true })),
  allocated: fc.constantFrom(0, 0, 5, 120),
  az: fc.constantFrom('nova', 'az2'),
  tier: fc.constantFrom('gold', 'silver'),
});
type PoolArb = typeof poolArb extends fc.Arbitrary<infer T> ? T : never;

function makePool(i: number, p: PoolArb): PoolState {
  return {
    name: `h${i % 3}@x#p${i}`, backend: `h${i % 3}@x`, poolName: `p${i}`, index: i, capabilities: { pool_name: `p${i}`, tier: p.tier },
    reported: {}, availabilityZone: p.az, reportedAt: 0, reportSeq: 1,
    total: p.total, reportedFree: p.free, reportedProvisioned: p.provisioned, reservedPercentage: p.reservedPercentage,
    thinSupport: p.thinSupport, thickSupport: true, mosr: p.mosr, mosrAuto: false,
    allocated: p.allocated, consumed: 0, generation: 1, free: p.free, provisioned: p.provisioned,
  };
}

const requestArb = fc.record({
  size: fc.oneof(fc.integer({ min: 1, max: 3000 }), fc.constantFrom(1, 10, 100, 250), fc.double({ min: 0.01, max: 3000, noNaN: true })),
  thin: fc.boolean(),
  az: fc.constantFrom(undefined, 'nova', 'az2'),
  tier: fc.constantFrom(undefined, 'gold', '<or> gold <or> silver', 's!= gold'),
});
type RequestArb = typeof requestArb extends fc.Arbitrary<infer T> ? T : never;

function request(r: RequestArb): VolumeRequest {
  return { size: r.size, thin: r.thin, availabilityZone: r.az, now: 0, specs: compileExtraSpecs(r.tier === undefined ? {} : { tier: r.tier }) };
}

/** The full run's answer and the best-first one agree; returns the full run's winner (−1: a miss). */
function agree(pipeline: VolumesPipeline, best: BestFirst, table: PoolTable, req: VolumeRequest): number {
  const full = pipeline.decide(table, req, { limit: 1 });
  const fast = best.decide(table, req);
  if (full.chosen < 0) {
    if (fast !== null) throw new Error(`best-first placed on ${fast.chosen} where the full run misses`);
    return -1;
  }
  if (fast === null) throw new Error(`best-first misses where the full run places on ${full.chosen}`);
  const want = { chosen: full.chosen, weight: full.weight, passed: full.passed, rejections: [...full.rejections()] };
  const got = { chosen: fast.chosen, weight: fast.weight, passed: fast.passed, rejections: [...fast.rejections()] };
  if (!Object.is(want.weight, got.weight) || JSON.stringify(want) !== JSON.stringify(got)) {
    throw new Error(`best-first ${JSON.stringify(got)} ≠ full run ${JSON.stringify(want)}`);
  }
  return full.chosen;
}

t.test('best-first decides as the full run, before and after claims', async () => {
  fc.assert(
    fc.property(
      fc.array(poolArb, { minLength: 0, maxLength: 14 }),
      fc.array(requestArb, { minLength: 1, maxLength: 8 }),
      fc.record({
        calc: fc.constantFrom('cinder' as const, 'standard' as const),
        cap: fc.constantFrom(1, 2.5, 3, 1e-3, 7e10),
        filters: fc.constantFrom(
          ['AvailabilityZoneFilter', 'CapacityFilter', 'CapabilitiesFilter'],
          ['CapabilitiesFilter', 'CapacityFilter', 'AvailabilityZoneFilter'],
          ['CapacityFilter'],
          ['AvailabilityZoneFilter', 'CapabilitiesFilter'],
          [],
        ),
      }),
      (pools, requests, c) => {
        const config = parseConfig({
          over_provisioning_calculation: c.calc, capacity_weight_multiplier: c.cap, scheduler_default_filters: c.filters,
        });
        const pipeline = volumesPipeline(config);
        // However many pools CapacityFilter's walk covers, it does not hand over to the engine.
        const best = BestFirst.of(pipeline, c.calc, 1)!;
        const table = new PoolTable(pools.map((p, i) => makePool(i, p)));
        // Each request is decided, then claimed as the service claims (allocated and consumed grow, the row refreshes).
        for (const r of requests) {
          const req = request(r);
          const chosen = agree(pipeline, best, table, req);
          if (chosen < 0) continue;
          const pool = table.pools[chosen]!;
          pool.allocated += r.size;
          pool.consumed += r.size;
          table.refresh(chosen);
        }
        // A release moves a pool back up.
        if (table.length > 0 && table.pools[0]!.allocated > 0) {
          const pool = table.pools[0]!;
          pool.consumed -= Math.min(pool.consumed, pool.allocated);
          pool.allocated = 0;
          table.refresh(0);
          for (const r of requests) agree(pipeline, best, table, request(r));
        }
        return true;
      },
    ),
    { numRuns: 2500 },
  );
});

t.test('best-first hands a request most pools are near the capacity for over to the engine', async (t) => {
  const pipeline = volumesPipeline(parseConfig({}));
  const best = BestFirst.of(pipeline, 'cinder')!;
  const pool = (i: number, free: number) => makePool(i, {
    total: 1000, free, provisioned: 1000 - free, reservedPercentage: 0, thinSupport: false, mosr: 1, allocated: 0, az: 'nova', tier: 'gold',
  });
  const table = new PoolTable([pool(0, 900), pool(1, 500), pool(2, 400), pool(3, 300)]);
  const req = (size: number): VolumeRequest => ({ size, thin: false, availabilityZone: undefined, now: 0, specs: [] });
  t.equal(best.decide(table, req(100))?.chosen, 0, 'no pool near 100 GiB: best-first');
  t.equal(best.decide(table, req(350))?.chosen, 0, 'one pool of four below 350 GiB: best-first');
  t.equal(best.decide(table, req(450)), null, 'two of four below 450 GiB: the engine');
  t.equal(pipeline.decide(table, req(450), { limit: 1 }).chosen, 0, 'which places it');
});

t.test('best-first covers only the pipelines whose order it can walk', async (t) => {
  const of = (options: Record<string, unknown>) => {
    const config = parseConfig(options);
    return BestFirst.of(volumesPipeline(config), config.over_provisioning_calculation);
  };
  t.ok(of({}), "Cinder's defaults");
  t.ok(of({ over_provisioning_calculation: 'standard', capacity_weight_multiplier: 2 }), 'a positive multiplier, either calculation');
  t.equal(of({ capacity_weight_multiplier: -1 }), null, 'a negative multiplier stacks: infinite pools weigh +∞');
  t.equal(of({ capacity_weight_multiplier: 0 }), null, 'a zero multiplier: every total 0');
  t.equal(of({ scheduler_default_weighers: ['CapacityWeigher', 'AllocatedCapacityWeigher'] }), null, 'two weighers: min–max per weigher reorders');
  t.equal(of({ scheduler_default_weighers: ['AllocatedCapacityWeigher'] }), null, 'another weigher');
  t.equal(of({ stats_stale_after_seconds: 60 }), null, 'stale stats: a check on the clock');
});
