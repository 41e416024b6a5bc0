// Per-pool capacity gauges and per-backend report age, read from the service's memory at scrape time.
import { Gauge, type Registry } from 'prom-client';
import type { Capacity } from './capacity.ts';
import type { PoolState } from './model.ts';
import type { VolumesService } from './service.ts';

/** 'infinite' is +Inf, 'unknown' is NaN (Prometheus understands both). */
function gib(c: Capacity | null): number {
  if (c === 'infinite') return Infinity;
  if (c === 'unknown' || c === null) return NaN;
  return c;
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
  poolGauge('berth_pool_total_capacity_gib', 'Reported total capacity of a pool (GiB)', (p) => gib(p.total));
  poolGauge('berth_pool_free_capacity_gib', 'Free capacity of a pool: reported, minus what Berth placed since (GiB)', (p) => gib(p.free));
  poolGauge('berth_pool_provisioned_capacity_gib', 'Provisioned capacity of a pool, incl. Berth placements since the report (GiB)', (p) => p.provisioned);
  poolGauge('berth_pool_allocated_capacity_gib', "Berth's allocated capacity: sizes of the volumes it placed that still exist (GiB)", (p) => p.allocated);
  poolGauge('berth_pool_virtual_free_capacity_gib', 'Virtual free capacity for a thin volume, as CapacityWeigher weighs it (GiB)', (p) => {
    const v = service.virtualFree(p);
    return v === null ? gib(p.free) : v;
  });
  poolGauge('berth_pool_max_over_subscription_ratio', 'Effective max_over_subscription_ratio (auto computed at each report)', (p) => p.mosr);
  poolGauge('berth_pool_generation', 'Pool generation: changes with every claim or report', (p) => p.generation);

  new Gauge({
    name: 'berth_backend_report_age_seconds',
    help: 'Seconds since the backend last reported its capabilities',
    labelNames: ['backend'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const { backend, seconds } of service.reportAges()) this.set({ backend }, seconds);
    },
  });
}
