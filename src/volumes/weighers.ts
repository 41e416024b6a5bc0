// The volumes weighers as pipeline Weigher objects, and the configuration that picks them.
import type { Weigher } from '../pipeline/types.ts';
import { capacityWeight, replaceInfiniteWeights, type OverProvisioningCalculation } from './capacity.ts';
import type { PoolState, VolumeRequest } from './model.ts';

export type VolumesWeigher = Weigher<PoolState, VolumeRequest> & {
  /** True when this weigher cannot weigh these candidates (Cinder raises: every weight infinite). */
  unweighable?(candidates: readonly PoolState[], req: VolumeRequest): boolean;
  /** Rewrites the raw weights of all candidates before normalisation (weighAll = weigh each, then adjust). */
  adjust?(weights: Float64Array | number[], count: number): void;
  /** Lets the allocation-light path weigh straight from the pool table. */
  kind?: 'capacity' | 'allocated';
  calculation?: OverProvisioningCalculation;
};

/** CapacityWeigher: virtual free capacity (spread with a positive multiplier), infinite pools offset as Cinder does. */
export function capacityWeigher(multiplier: number, calculation: OverProvisioningCalculation): VolumesWeigher {
  const weigh = (pool: PoolState, req: VolumeRequest) => capacityWeight(pool.figures, req.thin, multiplier, calculation);
  return {
    name: 'CapacityWeigher',
    kind: 'capacity',
    calculation,
    multiplier,
    weigh,
    weighAll(candidates, req) {
      const weights = candidates.map((c) => weigh(c, req));
      if (!replaceInfiniteWeights(weights)) throw new Error('CapacityWeigher: every weight is infinite');
      return weights;
    },
    adjust(weights, count) {
      if (!replaceInfiniteWeights(weights, count)) throw new Error('CapacityWeigher: every weight is infinite');
    },
    unweighable(candidates, req) {
      if (multiplier > 0 || candidates.length === 0) return false;
      for (const c of candidates) if (weigh(c, req) !== Infinity) return false;
      return true;
    },
  };
}

/** AllocatedCapacityWeigher: Berth's allocated_capacity_gb (stack or spread by the multiplier's sign). */
export function allocatedCapacityWeigher(multiplier: number): VolumesWeigher {
  return { name: 'AllocatedCapacityWeigher', kind: 'allocated', multiplier, weigh: (pool) => pool.allocated };
}

export function configuredWeighers(config: {
  scheduler_default_weighers: readonly string[];
  capacity_weight_multiplier: number;
  allocated_capacity_weight_multiplier: number;
  over_provisioning_calculation: OverProvisioningCalculation;
}): VolumesWeigher[] {
  const weighers: VolumesWeigher[] = [];
  for (const name of config.scheduler_default_weighers) {
    if (name === 'CapacityWeigher') {
      weighers.push(capacityWeigher(config.capacity_weight_multiplier, config.over_provisioning_calculation));
    } else if (name === 'AllocatedCapacityWeigher') {
      weighers.push(allocatedCapacityWeigher(config.allocated_capacity_weight_multiplier));
    }
  }
  return weighers;
}
