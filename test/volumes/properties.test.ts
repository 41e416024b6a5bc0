// Property tests (fast-check, bounded): the filter and the weigher agree; a decision without trace (limit 1) picks what
// the traced ranking puts first; scheduling until 409 never over-commits a pool.
import fc from 'fast-check';
import t from 'tap';
import { parseConfig } from '../../src/config.ts';
import { CapacityFigures, capacityVerdict, capacityWeight, type Capacity } from '../../src/volumes/capacity.ts';
import { compileExtraSpecs } from '../../src/volumes/extra-specs.ts';
import { PoolTable, type PoolState, type VolumeRequest } from '../../src/volumes/model.ts';
import { volumesPipeline } from '../../src/volumes/scheduler.ts';
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

t.test('CapacityFilter and CapacityWeigher agree: a pool passes iff its weight covers the size (bar the ratio check)', async () => {
  fc.assert(
    fc.property(poolArb, fc.double({ min: 0.01, max: 6000, noNaN: true }), fc.boolean(), calculation, (pool, size, thin, calc) => {
      const f = CapacityFigures.of(pool);
      const verdict = capacityVerdict(f, 0, size, thin, calc);
      if (f.infiniteOrUnknown(0)) return true; // passes on other grounds; weighed −1/∞
      const weight = capacityWeight(f, 0, thin, 1, calc);
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
    allocated, consumed: 0, generation: 1, free: p.free, provisioned: p.provisioned,
  } satisfies PoolState;
  return pool;
}

t.test('without trace (limit 1) the engine chooses exactly what the traced ranking puts first', async () => {
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
        const pipeline = volumesPipeline(config);
        const table = new PoolTable(entries.map(([p, allocated, az], i) => makePool(i, p, allocated, az)));
        const req: VolumeRequest = {
          size: r.size, thin: r.thin, availabilityZone: r.az, now: 0,
          specs: compileExtraSpecs(r.tier === undefined ? {} : { tier: r.tier }),
        };
        const traced = pipeline.decide(table, req, { trace: true });
        const fast = pipeline.decide(table, req, { limit: 1 });
        const first = traced.trace!.weighed[0];
        if (first === undefined) return fast.chosen === -1 && traced.chosen === -1;
        return fast.chosen === first.index && traced.chosen === first.index && Object.is(fast.weight, first.weight) &&
          fast.passed === traced.trace!.weighed.length && [...fast.rejections()].join() === [...traced.rejections()].join();
      },
    ),
    { numRuns: 1500 },
  );
});

t.test('scheduling until 409 never over-commits a pool (over HTTP)', async () => {
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
