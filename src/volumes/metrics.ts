// Per-pool capacity gauges and per-backend report age, read from the service's memory at scrape time. Cinder
// reports GiB (its "_gb"); the gauges are in bytes, Prometheus's base unit, and their help texts name Cinder's field.
import { Gauge, type Registry } from 'prom-client';
import type { Capacity } from './capacity.ts';
import type { PoolState } from './model.ts';
import type { VolumesService } from './service.ts';

const GiB = 2 ** 30;

/** GiB to whole bytes; 'infinite' is +Inf, 'unknown' is NaN (Prometheus understands both). */
function bytes(c: Capacity | null): number {
  if (c === 'infinite') return Infinity;
  if (c === 'unknown' || c === null) return NaN;
  return Math.round(c * GiB);
}

export function registerVolumesMetrics(registry: Registry, service: VolumesService): void {
  const poolGauge = (name: string, help: string, value: (pool: PoolState) => number) =>
    new Gauge({
      name,
      help,
      labelNames: ['pool', 'backend'] as const,
      registers: [registry],
      collect() {
        this.reset();
        for (const pool of service.candidates) this.set({ pool: pool.name, backend: pool.backend }, value(pool));
      },
    });
  poolGauge('berth_pool_total_capacity_bytes', 'Reported total capacity of a pool (Cinder total_capacity_gb, in bytes)',
    (p) => bytes(p.total));
  poolGauge('berth_pool_free_capacity_bytes', 'Free capacity of a pool: reported, minus what Berth placed since (Cinder free_capacity_gb, in bytes)',
    (p) => bytes(p.free));
  poolGauge('berth_pool_provisioned_capacity_bytes', 'Provisioned capacity of a pool, incl. Berth placements since the report (Cinder provisioned_capacity_gb, in bytes)',
    (p) => bytes(p.provisioned));
  poolGauge('berth_pool_allocated_capacity_bytes', "Berth's allocated capacity: sizes of the volumes it placed that still exist (Cinder allocated_capacity_gb, in bytes)",
    (p) => bytes(p.allocated));
  poolGauge('berth_pool_virtual_free_capacity_bytes', 'Virtual free capacity for a thin volume, as CapacityWeigher weighs it (Cinder virtual_free_capacity_gb, in bytes)', (p) => {
    const v = service.virtualFree(p);
    return v === null ? bytes(p.free) : bytes(v);
  });
  poolGauge('berth_pool_max_over_subscription_ratio', 'Effective max_over_subscription_ratio (auto computed at each report; 1 without thin provisioning)',
    (p) => p.mosr);

  new Gauge({
    name: 'berth_backend_report_age_seconds',
    help: 'Seconds since the backend last reported its capabilities (PUT /backends/{host})',
    labelNames: ['backend'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const { backend, seconds } of service.reportAges()) this.set({ backend }, seconds);
    },
  });
}
