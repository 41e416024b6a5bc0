// Per-pool capacity gauges and per-backend report age, read from the service's memory at scrape time. Cinder
// reports GiB (its "_gb"); the gauges are in bytes, Prometheus's base unit, and their help texts name Cinder's field.
import type { BerthRegistry } from '../http/gauge-groups.ts';
import type { Capacity } from './capacity.ts';
import type { VolumesService } from './service.ts';

const GiB = 2 ** 30;

/** GiB to whole bytes; 'infinite' is +Inf, 'unknown' is NaN (Prometheus understands both). */
function bytes(c: Capacity | null): number {
  if (c === 'infinite') return Infinity;
  if (c === 'unknown' || c === null) return NaN;
  return Math.round(c * GiB);
}

export function registerVolumesMetrics(registry: BerthRegistry, service: VolumesService): void {
  registry.registerGaugeGroup({
    labelNames: ['pool', 'backend'],
    gauges: [
      { name: 'berth_pool_total_capacity_bytes', help: 'Reported total capacity of a pool (Cinder total_capacity_gb, in bytes)' },
      { name: 'berth_pool_free_capacity_bytes', help: 'Free capacity of a pool: reported, minus what Berth placed since (Cinder free_capacity_gb, in bytes)' },
      { name: 'berth_pool_provisioned_capacity_bytes', help: 'Provisioned capacity of a pool, incl. Berth placements since the report (Cinder provisioned_capacity_gb, in bytes)' },
      { name: 'berth_pool_allocated_capacity_bytes', help: "Berth's allocated capacity: sizes of the volumes it placed that still exist (Cinder allocated_capacity_gb, in bytes)" },
      { name: 'berth_pool_virtual_free_capacity_bytes', help: 'Virtual free capacity for a thin volume, as CapacityWeigher weighs it (Cinder virtual_free_capacity_gb, in bytes)' },
      { name: 'berth_pool_max_over_subscription_ratio', help: 'Effective max_over_subscription_ratio (auto computed at each report; 1 without thin provisioning)' },
    ],
    collect(emit) {
      for (const p of service.candidates) {
        const virtualFree = service.virtualFree(p);
        emit([p.name, p.backend], [
          bytes(p.total), bytes(p.free), bytes(p.provisioned), bytes(p.allocated),
          virtualFree === null ? bytes(p.free) : bytes(virtualFree), p.mosr,
        ]);
      }
    },
  });
  registry.registerGaugeGroup({
    labelNames: ['backend'],
    gauges: [{ name: 'berth_backend_report_age_seconds', help: 'Seconds since the backend last reported its capabilities (PUT /backends/{host})' }],
    collect(emit) {
      for (const { backend, seconds } of service.reportAges()) emit([backend], [seconds]);
    },
  });
}
