// Placement's metrics: candidates returned, and capacity and usage per resource class read from the model at
// scrape time (no per-provider labels: a fleet has thousands).
import { Counter, Gauge, type Registry } from 'prom-client';
import type { PlacementModel } from './model.ts';

export interface PlacementMetrics {
  candidatesReturned: Counter;
}

export function registerPlacementMetrics(registry: Registry, model: PlacementModel): PlacementMetrics {
  const candidatesReturned = new Counter({
    name: 'berth_placement_candidates_returned_total',
    help: 'Allocation requests returned by GET /allocation_candidates',
    registers: [registry],
  });
  new Gauge({
    name: 'berth_placement_capacity',
    help: 'Capacity ((total - reserved) * allocation_ratio) summed over providers, per resource class',
    labelNames: ['resource_class'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const [rc, t] of model.totalsByResourceClass()) this.set({ resource_class: rc }, t.capacity);
    },
  });
  new Gauge({
    name: 'berth_placement_usage',
    help: 'Allocated amounts summed over providers, per resource class',
    labelNames: ['resource_class'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const [rc, t] of model.totalsByResourceClass()) this.set({ resource_class: rc }, t.used);
    },
  });
  new Gauge({
    name: 'berth_placement_resource_providers',
    help: 'Resource providers known to Placement',
    registers: [registry],
    collect() {
      this.set(model.providers.size);
    },
  });
  return { candidatesReturned };
}
