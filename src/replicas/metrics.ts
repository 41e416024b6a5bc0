// Gauges read from the in-memory state at scrape time (Longhorn reports bytes already), plus failures by Longhorn
// reason key.
import { Counter } from 'prom-client';
import type { BerthRegistry } from '../http/gauge-groups.ts';
import type { ReplicaService } from './service.ts';

export interface ReplicaMetrics {
  failures: Counter<'reason'>;
}

export function registerReplicaMetrics(registry: BerthRegistry, service: ReplicaService, now: () => number): ReplicaMetrics {
  registry.registerGaugeGroup({
    labelNames: ['node', 'disk'],
    gauges: [
      { name: 'berth_disk_storage_maximum_bytes', help: 'Disk storageMaximum as reported, in bytes' },
      { name: 'berth_disk_storage_available_bytes', help: 'Disk storageAvailable as reported, in bytes' },
      { name: 'berth_disk_storage_reserved_bytes', help: 'Disk storageReserved as reported, in bytes' },
      { name: 'berth_disk_storage_scheduled_bytes', help: 'Disk storageScheduled: reported plus Berth\'s replicas, in bytes' },
    ],
    collect(emit) {
      for (const n of service.nodes) {
        for (const d of n.disks) emit([n.name, d.name], [d.storageMaximum, d.storageAvailable, d.storageReserved, d.storageScheduled]);
      }
    },
  });
  registry.registerGaugeGroup({
    labelNames: ['node'],
    gauges: [{ name: 'berth_node_report_age_seconds', help: 'Seconds since the node last reported (PUT /nodes/{name})' }],
    collect(emit) {
      const t = now();
      for (const n of service.nodes) emit([n.name], [service.reportAgeSeconds(n, t)]);
    },
  });
  const failures = new Counter({
    name: 'berth_replica_scheduling_failures_total',
    help: 'Replicas that could not be placed, by Longhorn reason key (joined as in the volume condition)',
    labelNames: ['reason'] as const,
    registers: [registry],
  });
  return { failures };
}
