// Property tests (fast-check, bounded): the filter and the weigher agree; the fast decision path picks what the
// traced pipeline picks; scheduling until 409 never over-commits a pool.
import fc from 'fast-check';
import t from 'tap';
import { parseConfig } from '../../src/config.ts';
import { capacityVerdict, capacityWeight, poolFigures, type Capacity } from '../../src/volumes/capacity.ts';
import { compileExtraSpecs } from '../../src/volumes/extra-specs.ts';
import { configuredFilters } from '../../src/volumes/filters.ts';
import { refreshFigures, type PoolState, type VolumeRequest } from '../../src/volumes/model.ts';
import { PoolTable } from '../../src/volumes/pool-table.ts';
import { Scratch, decideFast, decideTraced } from '../../src/volumes/scheduler.ts';
import { configuredWeighers } from '../../src/volumes/weighers.ts';
import { build } from '../helper.ts';

const gib = fc.oneof(fc.integer({ min: 0, max: 5000 }), fc.double({ min: 0, max: 5000, noNaN: true, noDefaultInfinity: true }));
const capacity: fc.Arbitrary<Capacity> = fc.oneof(
  { weight: 8, arbitrary: gib },
  { weight: 1, arbitrary: fc.constantFrom('infinite' as const, 'unknown' as const) },
);
const poolArb = fc.record({
  total: capacity,
  free: capacity,
  provisioned: gib,
  reservedPercentage: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 100 })),
  thinSupport: fc.boolean(),
  mosr: fc.oneof(fc.constant(20), fc.double({ min: 0.5, max: 30, noNaN: true })),
});
const calculation = fc.constantFrom('cinder' as const, 'standard' as const);

t.test('CapacityFilter and CapacityWeigher agree: a pool passes iff its weight covers the size (bar the ratio check)', async (t) => {
  fc.assert(
    fc.property(poolArb, fc.double({ min: 0.01, max: 6000, noNaN: true }), fc.boolean(), calculation, (pool, size, thin, calc) => {
      const f = poolFigures(pool);
      const verdict = capacityVerdict(f, size, thin, calc);
      if (f.freeInfiniteOrUnknown || f.totalInfiniteOrUnknown) return true; // passes on other grounds; weighed −1/∞
      const weight = capacityWeight(f, thin, 1, calc);
      if (verdict.passes) return weight >= size;
      if (verdict.code === 'insufficient_free' || verdict.code === 'insufficient_virtual_free_thin') return weight < size;
      return true; // total ≤ 0, invalid ratio, provisioned ratio, zero division: not a question of space
    }),
    { numRuns: 3000 },
  );
});

type PoolSpec = { total: Capacity; free: Capacity; provisioned: number; reservedPercentage: number; thinSupport: boolean; mosr: number };

function makePool(i: number, p: PoolSpec, allocated: number, az: string): PoolState {
  const pool = {
    name: `h${i % 3}@x#p${i}`, backend: `h${i % 3}@x`, poolName: `p${i}`, index: i, capabilities: { pool_name: `p${i}`, tier: i % 2 === 0 ? 'gold' : 'silver' },
    reported: {}, availabilityZone: az, reportedAt: 0, reportSeq: 1,
    total: p.total, reportedFree: p.free, reportedProvisioned: p.provisioned, reservedPercentage: p.reservedPercentage,
    thinSupport: p.thinSupport, thickSupport: true, mosr: p.mosr, mosrAuto: false,
    allocated, consumed: 0, generation: 1, free: p.free, provisioned: p.provisioned, figures: undefined as never,
  } satisfies PoolState;
  refreshFigures(pool);
  return pool;
}

t.test('the allocation-light path chooses exactly what the traced pipeline ranks first', async (t) => {
  const scratch = new Scratch();
  fc.assert(
    fc.property(
      fc.array(fc.tuple(poolArb, fc.integer({ min: 0, max: 500 }), fc.constantFrom('nova', 'az2')), { minLength: 0, maxLength: 12 }),
      fc.record({
        size: fc.oneof(fc.integer({ min: 1, max: 3000 }), fc.double({ min: 0.01, max: 3000, noNaN: true })),
        thin: fc.boolean(),
        az: fc.constantFrom(undefined, 'nova', 'az2'),
        tier: fc.constantFrom(undefined, 'gold', '<or> gold <or> silver', 's!= gold'),
      }),
      fc.record({
        calc: calculation,
        weighers: fc.constantFrom(['CapacityWeigher'], ['AllocatedCapacityWeigher'], ['CapacityWeigher', 'AllocatedCapacityWeigher'], []),
        cap: fc.constantFrom(1, -1, 0, 2.5),
        alloc: fc.constantFrom(-1, 1, 0.5),
      }),
      (entries, r, c) => {
        const config = parseConfig({
          over_provisioning_calculation: c.calc,
          scheduler_default_weighers: c.weighers,
          capacity_weight_multiplier: c.cap,
          allocated_capacity_weight_multiplier: c.alloc,
        });
        const filters = configuredFilters(config);
        const weighers = configuredWeighers(config);
        const pools = entries.map(([p, allocated, az], i) => makePool(i, p, allocated, az));
        const req: VolumeRequest = {
          size: r.size, thin: r.thin, availabilityZone: r.az, now: 0,
          specs: compileExtraSpecs(r.tier === undefined ? {} : { tier: r.tier }),
        };
        const traced = decideTraced(pools, req, filters, weighers);
        const fast = decideFast(new PoolTable(pools), req, filters, weighers, scratch);
        if (traced.chosen === null) return fast.chosen === -1;
        return pools[fast.chosen] === traced.chosen.candidate && Object.is(fast.weight, traced.chosen.weight) &&
          (fast.unweighable || fast.passed === traced.ranked.length);
      },
    ),
    { numRuns: 1500 },
  );
});

t.test('scheduling until 409 never over-commits a pool (over HTTP)', async (t) => {
  const poolSpec = fc.record({
    total: fc.integer({ min: 1, max: 200 }),
    freeFraction: fc.integer({ min: 0, max: 100 }),
    provisioned: fc.integer({ min: 0, max: 300 }),
    reserved: fc.integer({ min: 0, max: 50 }),
    thin: fc.boolean(),
    ratio: fc.integer({ min: 1, max: 5 }),
  });
  await fc.assert(
    fc.asyncProperty(
      fc.array(poolSpec, { minLength: 1, maxLength: 4 }),
      fc.array(fc.record({ size: fc.integer({ min: 5, max: 60 }), thick: fc.boolean() }), { minLength: 1, maxLength: 8 }),
      calculation,
      async (specs, sizes, calc) => {
        const app = await build({ teardown: () => {} }, { over_provisioning_calculation: calc });
        try {
          const pools = specs.map((s, i) => ({
            pool_name: `p${i}`, total_capacity_gb: s.total, free_capacity_gb: Math.floor((s.total * s.freeFraction) / 100),
            provisioned_capacity_gb: s.provisioned, reserved_percentage: s.reserved, thin_provisioning_support: s.thin,
            thick_provisioning_support: true, max_over_subscription_ratio: s.ratio,
          }));
          const r = await app.inject({ method: 'PUT', url: '/backends/h@x', payload: { pools } });
          if (r.statusCode !== 200) return false;
          // Berth's view of each pool, replayed here: free and provisioned move with every claim.
          const state = specs.map((spec) => ({ free: Math.floor((spec.total * spec.freeFraction) / 100), provisioned: spec.provisioned }));
          // Cycle through the requested sizes until every one of them is refused: that is "until 409".
          let refusedInARow = 0;
          for (let i = 0; refusedInARow < sizes.length && i < 1000; i++) {
            const s = sizes[i % sizes.length]!;
            const body = { size: s.size, ...(s.thick ? { volume_type: { extra_specs: { 'provisioning:type': 'thick' } } } : {}) };
            const answer = await app.inject({ method: 'POST', url: '/volumes/schedule', payload: body });
            if (answer.statusCode === 409) {
              refusedInARow++;
              continue;
            }
            if (answer.statusCode !== 200) return false;
            refusedInARow = 0;
            const index = Number((answer.json().pool as string).split('#p')[1]);
            const spec = specs[index]!;
            const now = state[index]!;
            now.free -= s.size;
            now.provisioned += s.size;
            const reservedGiB = Math.floor(spec.total * (spec.reserved / 100));
            if (!s.thick && spec.thin) {
              // Thin: provisioned never exceeds the over-subscribed capacity.
              const limit = calc === 'cinder' ? (spec.total - reservedGiB) * spec.ratio : spec.total * (1 - spec.reserved / 100) * spec.ratio;
              if (now.provisioned > limit + 1e-6) return false;
            } else {
              // Thick: never more than is free, nor than the unreserved capacity not yet provisioned.
              if (now.free < 0 || now.provisioned > spec.total - reservedGiB) return false;
            }
          }
          if (refusedInARow < sizes.length) return false;
          return true;
        } finally {
          await app.close();
        }
      },
    ),
    { numRuns: 40 },
  );
});
