// The volumes weighers (Cinder's scheduler_default_weighers), each weighing rows of the pool table, and the registry
// that names them for the configuration.
import type { Weigher } from '../pipeline/pipeline.ts';
import { capacityWeight, replaceInfiniteWeights, type OverProvisioningCalculation } from './capacity.ts';
import type { PoolTable, VolumeRequest } from './model.ts';

export type VolumesWeigher = Weigher<PoolTable, VolumeRequest>;

/** Reason code: CapacityWeigher cannot weigh pools that are all infinite/unknown with a multiplier ≤ 0. */
export const ALL_WEIGHTS_INFINITE = 'all_weights_infinite';

/**
 * CapacityWeigher: virtual free capacity (spread with a positive multiplier), infinite pools offset as Cinder does.
 * Where Cinder raises (every weight infinite: multiplier ≤ 0 and every pool infinite/unknown), it rejects them all.
 */
function capacityWeigher(multiplier: number, calculation: OverProvisioningCalculation): VolumesWeigher {
  const name = 'CapacityWeigher';
  return {
    name,
    multiplier,
    prepare(table, req) {
      const { figures } = table;
      const { thin } = req;
      return {
        weigh(at, count, out) {
          let allInfinite = true;
          for (let k = 0; k < count; k++) {
            const w = capacityWeight(figures, at[k]!, thin, multiplier, calculation);
            out[k] = w;
            if (w !== Infinity) allInfinite = false;
          }
          if (allInfinite) return ALL_WEIGHTS_INFINITE;
          replaceInfiniteWeights(out, count);
          return null;
        },
        reason: () => `every candidate's capacity is infinite or unknown and ${name}'s multiplier is ${multiplier} ≤ 0: ` +
          'no weight can be computed (Cinder raises ValueError)',
      };
    },
  };
}

/** AllocatedCapacityWeigher: Berth's allocated_capacity_gb (stack or spread by the multiplier's sign). */
function allocatedCapacityWeigher(multiplier: number): VolumesWeigher {
  return {
    name: 'AllocatedCapacityWeigher',
    multiplier,
    prepare: (table) => ({
      weigh(at, count, out) {
        for (let k = 0; k < count; k++) out[k] = table.allocated[at[k]!]!;
        return null;
      },
    }),
  };
}

/** The options weighers are built with (a subset of the configuration; config.ts takes its names from here). */
export interface WeigherOptions {
  capacity_weight_multiplier: number;
  allocated_capacity_weight_multiplier: number;
  over_provisioning_calculation: OverProvisioningCalculation;
}

/** The weighers scheduler_default_weighers can name. */
export const VOLUMES_WEIGHERS = {
  CapacityWeigher: (config: WeigherOptions) => capacityWeigher(config.capacity_weight_multiplier, config.over_provisioning_calculation),
  AllocatedCapacityWeigher: (config: WeigherOptions) => allocatedCapacityWeigher(config.allocated_capacity_weight_multiplier),
} as const;
export type VolumesWeigherName = keyof typeof VOLUMES_WEIGHERS;
export const VOLUMES_WEIGHER_NAMES = Object.keys(VOLUMES_WEIGHERS) as [VolumesWeigherName, ...VolumesWeigherName[]];
/** Cinder's scheduler_default_weighers. */
export const VOLUMES_DEFAULT_WEIGHERS: VolumesWeigherName[] = ['CapacityWeigher'];
