// The volumes benches' fleet: 10,000 pools on 1,000 backends, the same pseudo-random figures in every bench so that
// their runs are comparable (thin and thick pools, reserved space, auto ratios, a tier capability, two zones).
import type { BackendReport } from '../src/volumes/schemas.ts';

export const BACKENDS = 1_000;
export const POOLS_PER_BACKEND = 10;

/** Backend b's report: its POOLS_PER_BACKEND pools. */
export function backendReport(b: number, random: () => number): BackendReport {
  const pools = [];
  for (let p = 0; p < POOLS_PER_BACKEND; p++) {
    const total = 10_000 + Math.floor(random() * 90_000);
    const free = Math.floor(total * (0.2 + random() * 0.8));
    const thin = p % 3 !== 0;
    pools.push({
      pool_name: `pool${p}`,
      total_capacity_gb: total,
      free_capacity_gb: free,
      provisioned_capacity_gb: Math.floor((total - free) * (thin ? 1.5 : 1)),
      reserved_percentage: p % 4 === 0 ? 5 : 0,
      max_over_subscription_ratio: p % 5 === 0 ? 'auto' : 20,
      thin_provisioning_support: thin,
      thick_provisioning_support: !thin || p % 2 === 0,
      tier: p % 2 === 0 ? 'gold' : 'silver',
    });
  }
  return { volume_backend_name: `backend${b}`, storage_protocol: 'iSCSI', availability_zone: b % 4 === 0 ? 'az2' : 'nova', pools };
}
