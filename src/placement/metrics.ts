// Placement's metrics: candidates returned, and capacity and usage per resource class read from the model at
// scrape time (no per-provider labels: a fleet has 100,000 providers). MEMORY_MB (MiB, as Nova reports it) and
// DISK_GB (GiB) are exported in bytes; every other class in its own unit (VCPU: CPUs, PCI_DEVICE: devices, …).
import { Counter, Gauge } from 'prom-client';
import type { BerthRegistry } from '../http/gauge-groups.ts';
import type { PlacementModel } from './model.ts';

export interface PlacementMetrics {
  candidatesReturned: Counter;
}

/** Bytes per unit of the classes that measure bytes. */
const BYTES_PER_UNIT: ReadonlyMap<string, number> = new Map([['MEMORY_MB', 2 ** 20], ['DISK_GB', 2 ** 30]]);

export function registerPlacementMetrics(registry: BerthRegistry, model: PlacementModel): PlacementMetrics {
  const candidatesReturned = new Counter({
    name: 'berth_placement_candidates_returned_total',
    help: 'Allocation requests returned by GET /allocation_candidates',
    registers: [registry],
  });
  const registers = [registry];
  const labelNames = ['resource_class'] as const;
  // The four gauges share one pass over the fleet per scrape: the first one read fills them all (a scrape reads
  // every metric in one turn of the event loop; the next turn fills afresh).
  let filled = false;
  const collect = () => {
    if (filled) return;
    filled = true;
    queueMicrotask(() => { filled = false; });
    for (const g of gauges) g.reset();
    for (const [rc, t] of model.totalsByResourceClass()) {
      const perUnit = BYTES_PER_UNIT.get(rc);
      const labels = { resource_class: rc };
      if (perUnit === undefined) {
        capacityUnits.set(labels, t.capacity);
        usedUnits.set(labels, t.used);
      } else {
        capacityBytes.set(labels, t.capacity * perUnit);
        usedBytes.set(labels, t.used * perUnit);
      }
    }
  };
  const gauge = (name: string, help: string) => new Gauge({ name, help, labelNames, registers, collect });
  const capacityBytes = gauge('berth_placement_capacity_bytes',
    'Capacity ((total - reserved) * allocation_ratio) summed over providers, for MEMORY_MB and DISK_GB, in bytes');
  const usedBytes = gauge('berth_placement_used_bytes', 'Allocated amounts summed over providers, for MEMORY_MB and DISK_GB, in bytes');
  const capacityUnits = gauge('berth_placement_capacity_units',
    'Capacity ((total - reserved) * allocation_ratio) summed over providers, per resource class but MEMORY_MB and DISK_GB, in the class\'s own unit');
  const usedUnits = gauge('berth_placement_used_units',
    'Allocated amounts summed over providers, per resource class but MEMORY_MB and DISK_GB, in the class\'s own unit');
  const gauges = [capacityBytes, usedBytes, capacityUnits, usedUnits];
  new Gauge({
    name: 'berth_placement_resource_providers',
    help: 'Resource providers known to Placement',
    registers,
    collect() {
      this.set(model.providers.size);
    },
  });
  return { candidatesReturned };
}
