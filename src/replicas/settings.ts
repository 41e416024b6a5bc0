// Longhorn's settings that steer replica scheduling: names, types, ranges and defaults as in Longhorn v1.11
// (reference/longhorn.md §2). They are runtime settings (src/settings.ts: GET/PUT /settings/replicas, and Longhorn's
// own GET/PUT /replicas/settings), kept in the store with their history. No Fastify here.
import { z } from 'zod';
import { DialectSettings } from '../settings.ts';
import type { AsyncStore } from '../store/store.ts';
import type { SoftOverride } from './model.ts';

// A type (not an interface) so that it is a record of settings, as DialectSettings needs.
export type ReplicaSettings = {
  'replica-soft-anti-affinity': boolean;
  'replica-zone-soft-anti-affinity': boolean;
  'replica-disk-soft-anti-affinity': boolean;
  'storage-minimal-available-percentage': number;
  'storage-over-provisioning-percentage': number;
  'allow-empty-node-selector-volume': boolean;
  'allow-empty-disk-selector-volume': boolean;
  'disable-scheduling-on-cordoned-node': boolean;
  'allow-volume-creation-with-degraded-availability': boolean;
  'default-replica-count': number;
  'replica-auto-balance': ReplicaAutoBalance;
  'replica-auto-balance-disk-pressure-percentage': number;
  'replica-replenishment-wait-interval': number;
  'storage-reserved-percentage-for-default-disk': number;
};

export type ReplicaAutoBalance = 'disabled' | 'least-effort' | 'best-effort';
const REPLICA_AUTO_BALANCE = ['disabled', 'least-effort', 'best-effort'] as const;

export type SettingName = keyof ReplicaSettings;

interface BoolDefinition { type: 'bool'; default: boolean; description: string }
interface IntDefinition { type: 'int'; default: number; min: number; max: number; description: string }
interface EnumDefinition { type: 'enum'; default: string; values: readonly string[]; description: string }
type SettingDefinition = BoolDefinition | IntDefinition | EnumDefinition;

/** Largest integer a JSON number carries exactly. Longhorn's int settings are int64; ours stop at 2^53 − 1. */
const MAX_INT = Number.MAX_SAFE_INTEGER;

export const SETTING_DEFINITIONS: { readonly [K in SettingName]: SettingDefinition } = {
  'replica-soft-anti-affinity': {
    type: 'bool', default: false,
    description: 'Replica Node Level Soft Anti-Affinity: allow a replica on a node that already holds one of the volume (needs zone soft anti-affinity too).',
  },
  'replica-zone-soft-anti-affinity': {
    type: 'bool', default: true,
    description: 'Replica Zone Level Soft Anti-Affinity: allow a replica in a zone that already holds one of the volume.',
  },
  'replica-disk-soft-anti-affinity': {
    type: 'bool', default: true,
    description: 'Replica Disk Level Soft Anti-Affinity: allow a replica on a disk that already holds one of the volume when no other disk qualifies.',
  },
  'storage-minimal-available-percentage': {
    type: 'int', default: 25, min: 0, max: 100,
    description: 'Storage Minimal Available Percentage: a disk needs storageAvailable − actualSize > storageMaximum × N / 100.',
  },
  'storage-over-provisioning-percentage': {
    type: 'int', default: 100, min: 0, max: MAX_INT,
    description: 'Storage Over Provisioning Percentage: size + storageScheduled ≤ (storageMaximum − storageReserved) × N / 100.',
  },
  'allow-empty-node-selector-volume': {
    type: 'bool', default: true,
    description: 'Allow Scheduling Empty Node Selector Volumes To Any Node (false: only untagged nodes).',
  },
  'allow-empty-disk-selector-volume': {
    type: 'bool', default: true,
    description: 'Allow Scheduling Empty Disk Selector Volumes To Any Disk (false: only untagged disks).',
  },
  'disable-scheduling-on-cordoned-node': {
    type: 'bool', default: true,
    description: 'Disable Scheduling On Cordoned Node.',
  },
  'allow-volume-creation-with-degraded-availability': {
    type: 'bool', default: true,
    description: 'Accept a volume when at least one of its missing replicas could be placed (answer 200 with the rest unscheduled).',
  },
  'default-replica-count': {
    type: 'int', default: 3, min: 1, max: 20,
    description: 'The numberOfReplicas of a volume that gives none (Longhorn keeps one value per data engine; Berth one for both).',
  },
  'replica-auto-balance': {
    type: 'enum', default: 'disabled', values: REPLICA_AUTO_BALANCE,
    description: 'Replica Auto Balance. For the scheduler only best-effort matters: a used node with a disk under pressure counts as a new node, and any only-evicting node qualifies when zones are hard.',
  },
  'replica-auto-balance-disk-pressure-percentage': {
    type: 'int', default: 90, min: 0, max: 100,
    description: 'Replica Auto Balance Disk Pressure Threshold (%): a disk is under pressure when (available − reserved) × 100 / maximum (integer division) < 100 − N; 0 disables.',
  },
  'replica-replenishment-wait-interval': {
    type: 'int', default: 600, min: 0, max: MAX_INT,
    description: 'Replica Replenishment Wait Interval (seconds). Accepted for completeness; Berth does not know when a volume became degraded, so failed replicas always count as reusable.',
  },
  'storage-reserved-percentage-for-default-disk': {
    type: 'int', default: 30, min: 0, max: 100,
    description: 'Storage Reserved Percentage For Default Disk. Accepted for completeness; the scheduler does not read it (reports carry storageReserved).',
  },
};

export const SETTING_NAMES = Object.keys(SETTING_DEFINITIONS) as SettingName[];

export function defaultSettings(): ReplicaSettings {
  const out: Record<string, boolean | number | string> = {};
  for (const name of SETTING_NAMES) out[name] = SETTING_DEFINITIONS[name].default;
  return out as unknown as ReplicaSettings;
}

/** Why a value is refused, or null. Used for PUT bodies and for values read back from the store. */
export function settingValueError(name: string, value: unknown): string | null {
  if (!Object.hasOwn(SETTING_DEFINITIONS, name)) return `unknown setting ${name}`;
  const def = SETTING_DEFINITIONS[name as SettingName];
  if (def.type === 'bool') return typeof value === 'boolean' ? null : `${name} must be a JSON boolean`;
  if (def.type === 'enum') return typeof value === 'string' && def.values.includes(value) ? null : `${name} must be one of ${def.values.join(', ')}`;
  if (typeof value !== 'number' || !Number.isInteger(value)) return `${name} must be a JSON integer`;
  if (value < def.min || value > def.max) return `${name} must be between ${def.min} and ${def.max}`;
  return null;
}

/** Effective soft anti-affinity: the volume's `enabled`/`disabled` wins over the global setting; `ignored` defers. */
export function effectiveSoft(override: SoftOverride, global: boolean): boolean {
  if (override === 'enabled') return true;
  if (override === 'disabled') return false;
  return global;
}

/** Effective replica auto-balance: the volume's value unless `ignored` (or empty, which Longhorn reads as `ignored`). */
export function effectiveAutoBalance(override: ReplicaAutoBalance | 'ignored' | '', global: ReplicaAutoBalance): ReplicaAutoBalance {
  return override === 'ignored' || override === '' ? global : override;
}

/** One setting's zod schema: its type and range, described with Longhorn's words and default. */
export function settingSchema(name: SettingName) {
  const def = SETTING_DEFINITIONS[name];
  const base = def.type === 'bool' ? z.boolean()
    // Longhorn's settings API trims a string setting's value before checking it against the choices.
    : def.type === 'enum' ? z.string().trim().pipe(z.enum(def.values as [string, ...string[]]))
    : z.int().min(def.min).max(def.max);
  return base.describe(`${def.description} Default ${JSON.stringify(def.default)}.`);
}

/** Any subset of the settings, unknown names refused: what a change may contain. */
export const settingsPatch = z.strictObject(
  Object.fromEntries(SETTING_NAMES.map((n) => [n, settingSchema(n).optional()])) as Record<SettingName, z.ZodOptional<ReturnType<typeof settingSchema>>>,
);

/** The dialect's runtime settings, starting from `initial` until the first stored change. */
export function replicasSettings(initial: ReplicaSettings, store: AsyncStore, now: () => number): DialectSettings<ReplicaSettings> {
  return new DialectSettings<ReplicaSettings>({
    dialect: 'replicas', patch: settingsPatch as unknown as z.ZodType<Partial<ReplicaSettings>>, initial, store, now,
  });
}
