// The volumes dialect's runtime settings (GET/PUT /settings/volumes): the start-up options a decision reads, validated
// by the start-up schema itself so that a PUT refuses exactly what the configuration refuses.
import { z } from 'zod';
import { ConfigSchema, type Config } from '../config.ts';
import { DialectSettings } from '../settings.ts';
import type { AsyncStore } from '../store/store.ts';

export const VOLUMES_SETTING_NAMES = [
  'max_over_subscription_ratio', 'over_provisioning_calculation', 'scheduler_default_filters', 'scheduler_default_weighers',
  'capacity_weight_multiplier', 'allocated_capacity_weight_multiplier', 'storage_availability_zone', 'stats_stale_after_seconds',
] as const satisfies ReadonlyArray<keyof Config>;

export type VolumesSettingsValues = Pick<Config, (typeof VOLUMES_SETTING_NAMES)[number]>;

/** Each start-up option without its default (an absent key is "unchanged", not "back to the default"). */
export const VolumesSettingsPatch = z.object(Object.fromEntries(
  VOLUMES_SETTING_NAMES.map((name) => [name, ConfigSchema.shape[name].unwrap().optional()]),
)).strict() as unknown as z.ZodType<Partial<VolumesSettingsValues>>;

function volumesSettingsOf(config: Config): VolumesSettingsValues {
  return Object.fromEntries(VOLUMES_SETTING_NAMES.map((name) => [name, config[name]])) as VolumesSettingsValues;
}

export function volumesSettings(config: Config, store: AsyncStore, now: () => number): DialectSettings<VolumesSettingsValues> {
  return new DialectSettings<VolumesSettingsValues>({
    dialect: 'volumes', patch: VolumesSettingsPatch, initial: volumesSettingsOf(config), store, now,
  });
}
