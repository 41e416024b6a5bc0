// The volumes filters as pipeline Filter objects, and the configuration that picks them.
import type { Filter, Rejection } from '../pipeline/types.ts';
import { capacityCode, capacityRejectionMessage, isCapacityPass, type OverProvisioningCalculation } from './capacity.ts';
import { satisfiesExtraSpecs } from './extra-specs.ts';
import type { PoolState, VolumeRequest } from './model.ts';

/** `kind` lets the allocation-light path evaluate the built-in filters straight from the pool table. */
export type VolumesFilter = Filter<PoolState, VolumeRequest> & {
  kind?: 'stale' | 'availability_zone' | 'capacity' | 'capabilities';
  calculation?: OverProvisioningCalculation;
  limitMs?: number;
};

/** A rejection whose sentence is only built when someone reads it (explain, 409): the hot path only counts. */
export function lazyRejection(code: string, build: () => string): Rejection {
  let message: string | undefined;
  return {
    code,
    get message() {
      return (message ??= build());
    },
  };
}

export const REASON = {
  AVAILABILITY_ZONE: 'availability_zone_mismatch',
  CAPABILITY_MISSING: 'capability_missing',
  CAPABILITY_MISMATCH: 'capability_mismatch',
  STALE_STATS: 'stale_stats',
  ALL_WEIGHTS_INFINITE: 'all_weights_infinite',
} as const;

/** AvailabilityZoneFilter: passes when no zone is requested, else the backend's zone must equal it. */
export const availabilityZoneFilter: VolumesFilter = {
  name: 'AvailabilityZoneFilter',
  kind: 'availability_zone',
  check(pool, req) {
    if (req.availabilityZone === undefined || req.availabilityZone === pool.availabilityZone) return null;
    return lazyRejection(REASON.AVAILABILITY_ZONE,
      () => `availability zone ${pool.availabilityZone} is not the requested ${req.availabilityZone}`);
  },
};

/** CapacityFilter, in the configured over_provisioning_calculation. */
export function capacityFilter(calculation: OverProvisioningCalculation): VolumesFilter {
  return {
    name: 'CapacityFilter',
    kind: 'capacity',
    calculation,
    check(pool, req) {
      const figures = pool.figures;
      const code = capacityCode(figures, req.size, req.thin, calculation);
      if (isCapacityPass(code)) return null;
      return lazyRejection(code, () => capacityRejectionMessage(figures, req.size, req.thin, calculation, code));
    },
  };
}

function show(v: unknown): string {
  return typeof v === 'string' ? v : JSON.stringify(v);
}

/** CapabilitiesFilter: every unscoped or capabilities:-scoped extra spec must match the pool's capabilities. */
export const capabilitiesFilter: VolumesFilter = {
  name: 'CapabilitiesFilter',
  kind: 'capabilities',
  check(pool, req) {
    if (req.specs.length === 0) return null;
    const failure = satisfiesExtraSpecs(pool.capabilities, req.specs);
    if (failure === null) return null;
    if (failure.reason === 'missing') {
      return lazyRejection(REASON.CAPABILITY_MISSING,
        () => `backend doesn't provide capability '${failure.missing}' (extra spec "${failure.key}=${failure.req}")`);
    }
    return lazyRejection(REASON.CAPABILITY_MISMATCH,
      () => `volume type extra spec requirement "${failure.key}=${failure.req}" does not match reported ` +
        `capability "${show(failure.value)}"`);
  },
};

/** Rejects pools whose backend has not reported for longer than the limit (stats_stale_after_seconds). */
export function staleStatsFilter(limitSeconds: number): VolumesFilter {
  const limitMs = limitSeconds * 1000;
  return {
    name: 'StaleStatsFilter',
    kind: 'stale',
    limitMs,
    check(pool, req): Rejection | null {
      const ageMs = req.now - pool.reportedAt;
      if (ageMs <= limitMs) return null;
      return lazyRejection(REASON.STALE_STATS,
        () => `backend ${pool.backend} last reported ${Math.floor(ageMs / 1000)} s ago (limit ${limitSeconds} s)`);
    },
  };
}

/** The filters in the configured order; the stale-stats filter first when enabled. */
export function configuredFilters(config: {
  scheduler_default_filters: readonly string[];
  over_provisioning_calculation: OverProvisioningCalculation;
  stats_stale_after_seconds: number;
}): VolumesFilter[] {
  const filters: VolumesFilter[] = [];
  if (config.stats_stale_after_seconds > 0) filters.push(staleStatsFilter(config.stats_stale_after_seconds));
  for (const name of config.scheduler_default_filters) {
    if (name === 'AvailabilityZoneFilter') filters.push(availabilityZoneFilter);
    else if (name === 'CapacityFilter') filters.push(capacityFilter(config.over_provisioning_calculation));
    else if (name === 'CapabilitiesFilter') filters.push(capabilitiesFilter);
  }
  return filters;
}
