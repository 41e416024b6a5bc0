// The pure capacity functions against what real Cinder 21 computed (cinder-cases), including the operations Berth
// does not expose over HTTP (extend, retype onto the same backend, manage with size 0), and the standard formula.
import t from 'tap';
import {
  calculateCapacityFactors,
  CapacityFigures,
  capacityBackendPasses,
  capacityVerdict,
  capacityWeight,
  CapacityWeightsAfter,
  maxOverSubscriptionRatio,
  replaceInfiniteWeights,
  type Capacity,
  type PoolCapacity,
} from '../../src/volumes/capacity.ts';
import { loadCases } from './cases.ts';
import { xorshift } from '../random.ts';

const cases = loadCases();

function poolFromState(state: Record<string, unknown>): PoolCapacity {
  return {
    total: state.total_capacity_gb as Capacity,
    free: state.free_capacity_gb as Capacity | null,
    provisioned: state.provisioned_capacity_gb as number,
    reservedPercentage: state.reserved_percentage as number,
    thinSupport: Boolean(state.thin_provisioning_support), // Python truthiness ('False' is truthy)
    mosr: state.max_over_subscription_ratio as number,
  };
}

t.test('calculate_capacity_factors matches Cinder for every numeric pool of every case', async (t) => {
  let checked = 0;
  for (const c of cases) {
    const thin = c.input.request.volume_type?.extra_specs?.['provisioning:type'] !== 'thick';
    for (const p of c.expected.pools ?? []) {
      const f = p.capacity_factors;
      if (!f || typeof f.total_capacity !== 'number' || typeof f.free_capacity !== 'number') continue;
      const pool = poolFromState(p.state);
      const mosrArg = pool.thinSupport ? pool.mosr : 1;
      const got = calculateCapacityFactors(
        pool.total as number, pool.free as number, pool.provisioned, pool.thinSupport, mosrArg, pool.reservedPercentage, thin,
      );
      t.same(got, f, `${c.id} ${p.name}`);
      checked++;
    }
  }
  t.ok(checked > 40, `${checked} pools checked`);
});

t.test('max_over_subscription_ratio at ingest matches Cinder (auto, fallback to the configured value, thick → 1.0)', async (t) => {
  for (const c of cases) {
    const configured = c.input.config?.max_over_subscription_ratio;
    for (const [i, p] of (c.expected.pools ?? []).entries()) {
      const caps = c.input.pools[i]!.capabilities;
      const allocated = (caps.allocated_capacity_gb as number | undefined) ?? 0;
      const r = maxOverSubscriptionRatio({
        thinSupport: Boolean(caps.thin_provisioning_support ?? false),
        total: (caps.total_capacity_gb ?? 0) as Capacity,
        free: (caps.free_capacity_gb ?? 0) as Capacity,
        provisioned: (caps.provisioned_capacity_gb as number | undefined) ?? allocated,
        reported: caps.max_over_subscription_ratio as number | string | undefined,
        configured: configured === 'auto' ? 'auto' : Number(configured ?? 20),
      });
      t.ok(r.ok);
      if (r.ok) t.equal(r.ratio, p.state.max_over_subscription_ratio, `${c.id} ${p.name}`);
    }
  }
  const zero = maxOverSubscriptionRatio({ thinSupport: true, total: 100, free: 101, provisioned: 10, reported: 'auto', configured: 20 });
  t.equal(zero.ok, false, 'case 37: total − free + 1 = 0 is refused (Cinder raises ZeroDivisionError)');
});

t.test('CapacityFilter on operations Berth does not offer over HTTP (cases 24, 25, 26) and free = None (32)', async (t) => {
  for (const id of ['24_extend_new_size', '25_vol_exists_on_retype', '26_manage_size_zero', '32_free_capacity_none']) {
    const c = cases.find((x) => x.id === id)!;
    for (const p of c.expected.pools!) {
      const verdict = capacityBackendPasses(p.name, poolFromState(p.state), {
        size: c.input.request.size,
        newSize: c.input.request.new_size,
        volExistsOn: c.input.request.vol_exists_on,
        thin: true,
      });
      const want = p.filters.CapacityFilter!;
      t.equal(verdict.passes, want.passes, `${id} ${p.name} passes=${want.passes}`);
      t.equal(verdict.code, want.reason, `${id} ${p.name} reason ${want.reason}`);
    }
  }
  const extend = capacityBackendPasses('h@x#a', { total: 100, free: 15, provisioned: 0, reservedPercentage: 0, thinSupport: false, mosr: 1 },
    { size: 5.9, newSize: 20.7, thin: true });
  t.equal(extend.passes, true, 'extend asks int(new_size) − int(size) = 15');
});

t.test('the standard calculation (spec formula) where Cinder 21 has none (case 35)', async (t) => {
  const c = cases.find((x) => x.id === '35_over_provisioning_standard_not_in_cinder')!;
  for (const p of c.expected.pools!) {
    const f = CapacityFigures.of(poolFromState(p.state));
    const verdict = capacityVerdict(f, 0, c.input.request.size, true, 'standard');
    t.equal(verdict.passes, p.spec_standard!.fits, `${p.name}: provisioned + size ≤ total × (1 − reserved) × ratio`);
  }
  // The seed's 1 TB pool, reserved 10%, ratio 2: 924 + size ≤ 1024 × 0.9 × 2 = 1843.2.
  const seed = CapacityFigures.of({ total: 1024, free: 500, provisioned: 924, reservedPercentage: 10, thinSupport: true, mosr: 2 });
  t.equal(capacityVerdict(seed, 0, 919.2, true, 'standard').passes, true, '924 + 919.2 = 1843.2 fits');
  t.equal(capacityVerdict(seed, 0, 919.3, true, 'standard').passes, false, '924 + 919.3 does not');
  t.equal(capacityWeight(seed, 0, true, 1, 'standard'), 1024 * (1 - 10 / 100) * 2 - 924, 'the weigher uses the same capacity');
  // Cinder 21 floors the reserved GiB: (1024 − floor(102.4)) × 2 − 924 = 920.
  t.equal(capacityWeight(seed, 0, true, 1, 'cinder'), 920);
  t.equal(capacityVerdict(seed, 0, 920, true, 'cinder').passes, true);
  t.equal(capacityVerdict(seed, 0, 920.01, true, 'cinder').passes, false);
  // Thick is unchanged by the option.
  t.same(capacityVerdict(seed, 0, 100, false, 'standard'), capacityVerdict(seed, 0, 100, false, 'cinder'));
});

t.test('the rounded virtual free decides at the boundary (case 36: 4.5 − 1.995 = 2.50499… rounds to 2.5)', async (t) => {
  const c = cases.find((x) => x.id === '36_round_2_decimals')!;
  const b = c.expected.pools!.find((p) => p.name === 'h2@x#b')!;
  const f = CapacityFigures.of(poolFromState(b.state));
  t.equal(c.input.request.size, 2.5);
  t.same(capacityVerdict(f, 0, 2.5, true), { passes: true, code: b.filters.CapacityFilter!.reason }, 'as Cinder: 2.5 fits');
  t.equal(capacityVerdict(f, 0, 2.51, true).passes, false);
  t.equal(capacityWeight(f, 0, true, 1), 2.5, 'and the weigher weighs the rounded value');
});

t.test('the infinity offset of CapacityWeigher', async (t) => {
  const w = [30, 60, Infinity];
  t.equal(replaceInfiniteWeights(w), true);
  t.same(w, [30, 60, 3060], 'max + (max − min) × 100');
  const single = [5, Infinity];
  replaceInfiniteWeights(single);
  t.same(single, [5, 10005], 'offset 0 → + 10000');
  t.equal(replaceInfiniteWeights([Infinity, Infinity]), false, 'every weight infinite: Cinder raises');
  t.equal(replaceInfiniteWeights([]), true);
});

/** Generated pools: fractional figures, reserved space with Cinder's float order, ratios below 1, infinite/unknown. */
function generatedPools(seed: number, count: number): Array<{ pool: PoolCapacity; thin: boolean; multiplier: number; calculation: 'cinder' | 'standard' }> {
  const random = xorshift(seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  return Array.from({ length: count }, () => {
    const totalNumber = pick([0, 1, 29, 100, 1000.5, 12345.67]) + Math.floor(random() * 5000) / pick([1, 3, 100]);
    const pool: PoolCapacity = {
      total: random() < 0.05 ? pick(['infinite', 'unknown'] as const) : totalNumber,
      free: random() < 0.05 ? pick(['infinite', 'unknown'] as const) : totalNumber * random() - (random() < 0.1 ? 50 : 0),
      provisioned: Math.floor(random() * 3 * totalNumber) / pick([1, 7, 100]),
      reservedPercentage: pick([0, 5, 10, 29, 33.3]),
      thinSupport: random() < 0.6,
      mosr: pick([1, 1.5, 20, 0.5, 1 + random() * 3]),
    };
    return { pool, thin: random() < 0.6, multiplier: pick([1, -1, 0, 2.5]), calculation: pick(['cinder', 'standard'] as const) };
  });
}

// A row's figures are computed each on its own (no factors object per pool): the same numbers, to the bit, as
// calculate_capacity_factors gives for a thin and a thick request.
t.test('CapacityFigures rows equal calculate_capacity_factors on generated pools', async (t) => {
  let mismatches = 0;
  for (const { pool } of generatedPools(777, 20_000)) {
    if (typeof pool.total !== 'number' || typeof pool.free !== 'number') continue;
    const f = CapacityFigures.of(pool);
    const mosr = pool.thinSupport ? pool.mosr : 1;
    const thin = calculateCapacityFactors(pool.total, pool.free, pool.provisioned, pool.thinSupport, mosr, pool.reservedPercentage, true);
    const thick = calculateCapacityFactors(pool.total, pool.free, pool.provisioned, pool.thinSupport, mosr, pool.reservedPercentage, false);
    const want = [thin.total_available_capacity, thin.virtual_free_capacity, thick.virtual_free_capacity];
    const got = [f.thinTotalAvailable[0]!, f.thinVirtualFree[0]!, f.thickVirtualFree[0]!];
    if (!want.every((w, k) => Object.is(w, got[k]))) {
      mismatches++;
      if (mismatches < 5) t.fail(`${JSON.stringify(pool)}: ${got.join()} ≠ ${want.join()}`);
    }
  }
  t.equal(mismatches, 0);
});

t.test("CapacityWeightsAfter weighs a pool as capacityWeight reads its row, after claims too, on every case's pools and random ones", async (t) => {
  const pools: PoolCapacity[] = cases.flatMap((c) => (c.expected.pools ?? []).map((p) => poolFromState(p.state)));
  const random = xorshift(7);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
  for (let k = 0; k < 2000; k++) {
    const total = pick<Capacity>(['infinite', 'unknown', 0, 1, 10.5, 1024, Math.floor(random() * 5000) + random()]);
    pools.push({
      total, free: pick<Capacity | null>(['infinite', 'unknown', null, 0, 3.3, Math.floor(random() * 5000) + random()]),
      provisioned: pick([0, 100, random() * 6000]), reservedPercentage: pick([0, 5, 10, 15, Math.floor(random() * 100)]),
      thinSupport: random() < 0.5, mosr: pick([1, 1.5, 2, 20, 1 + random() * 10]),
    });
  }
  let compared = 0;
  for (const thin of [true, false]) {
    for (const multiplier of [1, -1, 0]) {
      for (const calculation of ['cinder', 'standard'] as const) {
        const weights = new CapacityWeightsAfter(pools, thin, multiplier, calculation);
        pools.forEach((pool, p) => {
          // As reported, then after claims of 1, 10.5 and 250 (provisioned grows, a numeric free shrinks).
          for (const claimed of [0, 1, 10.5, 250]) {
            const free = typeof pool.free === 'number' ? pool.free - claimed : pool.free;
            const after = { ...pool, provisioned: pool.provisioned + claimed, free };
            const want = capacityWeight(CapacityFigures.of(after), 0, thin, multiplier, calculation);
            const got = weights.weight(p, after.provisioned, typeof free === 'number' ? free : NaN);
            if (!Object.is(got, want)) t.fail(`${JSON.stringify(after)} thin=${thin} ×${multiplier} ${calculation}: ${got} ≠ ${want}`);
            compared++;
          }
        });
      }
    }
  }
  t.ok(compared > 90_000, `${compared} weights compared, bit for bit`);
});
