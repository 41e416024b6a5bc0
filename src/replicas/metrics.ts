// Gauges read from the in-memory state at scrape time (Longhorn reports bytes already), plus failures by Longhorn
// reason key.
import { Counter, Gauge, type Registry } from 'prom-client';
import type { ReplicaService } from './service.ts';

export interface ReplicaMetrics {
  failures: Counter<'reason'>;
}

export function registerReplicaMetrics(registry: Registry, service: ReplicaService, now: () => number): ReplicaMetrics {
  const diskGauge = (name: string, help: string, read: (d: ReplicaService['nodes'][number]['disks'][number]) => number) =>
    new Gauge({
      name, help, labelNames: ['node', 'disk'] as const, registers: [registry],
      collect() {
        this.reset();
        for (const n of service.nodes) for (const d of n.disks) this.set({ node: n.name, disk: d.name }, read(d));
      },
    });
  diskGauge('berth_disk_storage_maximum_bytes', 'Disk storageMaximum as reported, in bytes', (d) => d.storageMaximum);
  diskGauge('berth_disk_storage_available_bytes', 'Disk storageAvailable as reported, in bytes', (d) => d.storageAvailable);
  diskGauge('berth_disk_storage_reserved_bytes', 'Disk storageReserved as reported, in bytes', (d) => d.storageReserved);
  diskGauge('berth_disk_storage_scheduled_bytes', 'Disk storageScheduled: reported plus Berth\'s replicas, in bytes', (d) => d.storageScheduled);
  new Gauge({
    name: 'berth_node_report_age_seconds',
    help: 'Seconds since the node last reported (PUT /nodes/{name})',
    labelNames: ['node'] as const,
    registers: [registry],
    collect() {
      this.reset();
      const t = now();
      for (const n of service.nodes) this.set({ node: n.name }, service.reportAgeSeconds(n, t));
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
