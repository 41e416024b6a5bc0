// The volumes filters (Cinder's scheduler_default_filters, plus Berth's stale-stats check), each reading the pool
// table by row, and the registry that names them for the configuration.
import type { Filter } from '../pipeline/pipeline.ts';
import { capacityCode, capacityRejectionMessage, isCapacityPass, type CapacityRejectCode, type OverProvisioningCalculation } from './capacity.ts';
import { satisfiesExtraSpecs } from './extra-specs.ts';
import type { PoolTable, VolumeRequest } from './model.ts';

export type VolumesFilter = Filter<PoolTable, VolumeRequest>;

// Reason codes (CapacityFilter's are in capacity.ts): part of every answer's contract (clients and metrics branch on
// them), so exported even where no module imports them (@public tells knip).
/** @public */
export const AVAILABILITY_ZONE_MISMATCH = 'availability_zone_mismatch';
/** @public */
export const CAPABILITY_MISSING = 'capability_missing';
/** @public */
export const CAPABILITY_MISMATCH = 'capability_mismatch';
/** @public */
export const STALE_STATS = 'stale_stats';

const ZONE_CODES = ['', AVAILABILITY_ZONE_MISMATCH];
/** The verdicts of PoolTable.capabilityRow (SPECS_MATCH, SPECS_MISSING, SPECS_MISMATCH) as codes. */
const CAPABILITY_CODES = ['', CAPABILITY_MISSING, CAPABILITY_MISMATCH];

/** AvailabilityZoneFilter: passes when no zone is requested, else the backend's zone must equal it. */
const availabilityZoneFilter: VolumesFilter = {
  name: 'AvailabilityZoneFilter',
  prepare(table, req) {
    const wanted = req.availabilityZone;
    if (wanted === undefined) return null;
    return {
      row: table.zoneRow(wanted),
      codes: ZONE_CODES,
      reason: (i) => `availability zone ${table.pools[i]!.availabilityZone} is not the requested ${wanted}`,
    };
  },
};

/** CapacityFilter, in the configured over_provisioning_calculation. */
function capacityFilter(calculation: OverProvisioningCalculation): VolumesFilter {
  return {
    name: 'CapacityFilter',
    prepare(table, req) {
      const { figures } = table;
      const { size, thin } = req;
      return {
        check(i) {
          const code = capacityCode(figures, i, size, thin, calculation);
          return isCapacityPass(code) ? null : code;
        },
        reason: (i, code) => capacityRejectionMessage(figures, i, size, calculation, code as CapacityRejectCode),
      };
    },
  };
}

function show(v: unknown): string {
  return typeof v === 'string' ? v : JSON.stringify(v);
}

/** CapabilitiesFilter: every unscoped or capabilities:-scoped extra spec must match the pool's capabilities. */
const capabilitiesFilter: VolumesFilter = {
  name: 'CapabilitiesFilter',
  prepare(table, req) {
    if (req.specs.length === 0) return null;
    const { specs } = req;
    // One verdict (and sentence, once built) per pool per set of extra specs, cached by the table until the next report.
    const verdicts = table.capabilityVerdicts(specs);
    const build = (i: number): string => {
      const failure = satisfiesExtraSpecs(table.pools[i]!.capabilities, specs)!;
      if (failure.reason === 'missing') {
        return `backend doesn't provide capability '${failure.missing}' (extra spec "${failure.key}=${failure.req}")`;
      }
      return `volume type extra spec requirement "${failure.key}=${failure.req}" does not match reported ` +
        `capability "${show(failure.value)}"`;
    };
    return { row: verdicts.row, codes: CAPABILITY_CODES, reason: (i) => verdicts.sentence(i, build) };
  },
};

/** Rejects pools whose backend has not reported for longer than the limit (stats_stale_after_seconds). */
export function staleStatsFilter(limitSeconds: number): VolumesFilter {
  const limitMs = limitSeconds * 1000;
  return {
    name: 'StaleStatsFilter',
    prepare(table, req) {
      const { reportedAt } = table;
      const { now } = req;
      return {
        check: (i) => (now - reportedAt[i]! > limitMs ? STALE_STATS : null),
        reason: (i) => `backend ${table.pools[i]!.backend} last reported ${Math.floor((now - reportedAt[i]!) / 1000)} s ago ` +
          `(limit ${limitSeconds} s)`,
      };
    },
  };
}

/** The options filters are built with (a subset of the configuration; config.ts takes its names from here). */
export interface FilterOptions {
  over_provisioning_calculation: OverProvisioningCalculation;
}

/** The filters scheduler_default_filters can name, in Cinder's default order. */
export const VOLUMES_FILTERS = {
  AvailabilityZoneFilter: (_options: FilterOptions) => availabilityZoneFilter,
  CapacityFilter: (options: FilterOptions) => capacityFilter(options.over_provisioning_calculation),
  CapabilitiesFilter: (_options: FilterOptions) => capabilitiesFilter,
} as const;
export type VolumesFilterName = keyof typeof VOLUMES_FILTERS;
export const VOLUMES_FILTER_NAMES = Object.keys(VOLUMES_FILTERS) as [VolumesFilterName, ...VolumesFilterName[]];
