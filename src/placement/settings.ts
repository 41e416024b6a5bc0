// Placement's runtime settings (GET/PUT /settings/placement): Placement's randomize_allocation_candidates, Nova's
// enable_isolated_aggregate_filtering and the FreeCapacity weighers' multiplier, validated as the start-up options
// are; the service reads the current values at each decision.
import { z } from 'zod';
import { ConfigSchema, type Config } from '../config.ts';
import { DialectSettings } from '../settings.ts';
import type { AsyncStore } from '../store/store.ts';

export interface PlacementSettingsValues extends Record<string, unknown> {
  randomize_allocation_candidates: boolean;
  enable_isolated_aggregate_filtering: boolean;
  /** Σ multiplier × normalised free capacity per requested class: > 0 spreads (most free first), < 0 packs. */
  free_capacity_weight_multiplier: number;
}

const finite = z.coerce.number().refine(Number.isFinite, 'must be a finite number');

/** A strict partial object: the start-up options' own schemas (without their defaults), unknown keys refused. */
const PlacementSettingsPatch = z.object({
  randomize_allocation_candidates: ConfigSchema.shape.randomize_allocation_candidates.unwrap(),
  enable_isolated_aggregate_filtering: ConfigSchema.shape.enable_isolated_aggregate_filtering.unwrap(),
  free_capacity_weight_multiplier: finite,
}).partial().strict();

export function placementSettings(config: Config, store: AsyncStore, now: () => number): DialectSettings<PlacementSettingsValues> {
  return new DialectSettings<PlacementSettingsValues>({
    dialect: 'placement',
    patch: PlacementSettingsPatch,
    initial: {
      randomize_allocation_candidates: config.randomize_allocation_candidates,
      enable_isolated_aggregate_filtering: config.enable_isolated_aggregate_filtering,
      // Berth's ranking (Placement has none): most free capacity first.
      free_capacity_weight_multiplier: 1,
    },
    store,
    now,
  });
}
