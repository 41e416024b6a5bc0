// The two space conditions of Longhorn's IsSchedulableToDisk (reference/longhorn.md §4) and the tag selector
// match (IsSelectorsInTags). Pure arithmetic on byte counts held as JSON-safe integers.

export interface DiskSpace {
  storageMaximum: number;
  storageAvailable: number;
  storageReserved: number;
  /** Reported outside Berth plus Berth's own replicas (plus in-pass additions when checking a replica). */
  storageScheduled: number;
}

export type SpaceFailure = 'storage_maximum_zero' | 'storage_available_zero' | 'actual_space_usage' | 'scheduling_space';

export interface SpaceCheck {
  ok: boolean;
  /** The first condition that failed, in Longhorn's order. */
  failure: SpaceFailure | null;
  /** int64(float64(max) × minPct / 100): the available bytes that must be exceeded. */
  minimalAvailable: number;
  /** int64(float64(max − reserved) × opPct / 100): what size + scheduled may reach. */
  provisionedLimit: number;
  /** avail − actualSize, compared with minimalAvailable (strict >). */
  currentAvailable: number;
  /** size + scheduled, compared with provisionedLimit (≤). */
  scheduledTotal: number;
}

/** Go's int64(float64 expression): computed in float64, truncated toward zero. */
export function minimalAvailable(storageMaximum: number, minimalAvailablePercentage: number): number {
  return Math.trunc((storageMaximum * minimalAvailablePercentage) / 100);
}

export function provisionedLimit(storageMaximum: number, storageReserved: number, overProvisioningPercentage: number): number {
  return Math.trunc(((storageMaximum - storageReserved) * overProvisioningPercentage) / 100);
}

/**
 * IsSchedulableToDisk(size, actualSize): max > 0, avail > 0, then
 * avail − actualSize > minimal (strict) and size + scheduled ≤ limit (non-strict).
 * With size = actualSize = 0 it is the disk's Schedulable condition.
 */
export function checkDiskSpace(
  disk: DiskSpace,
  size: number,
  actualSize: number,
  minimalAvailablePercentage: number,
  overProvisioningPercentage: number,
): SpaceCheck {
  const failure = spaceFailure(disk, 0, size, actualSize, minimalAvailablePercentage, overProvisioningPercentage);
  return {
    ok: failure === null,
    failure,
    minimalAvailable: minimalAvailable(disk.storageMaximum, minimalAvailablePercentage),
    provisionedLimit: provisionedLimit(disk.storageMaximum, disk.storageReserved, overProvisioningPercentage),
    currentAvailable: disk.storageAvailable - actualSize,
    scheduledTotal: size + disk.storageScheduled,
  };
}

/**
 * The same conditions without building the explanation (the hot path checks thousands of disks per decision).
 * `extraScheduled` is added to the disk's storageScheduled (in-cycle accounting).
 */
export function spaceFailure(
  disk: DiskSpace,
  extraScheduled: number,
  size: number,
  actualSize: number,
  minimalAvailablePercentage: number,
  overProvisioningPercentage: number,
): SpaceFailure | null {
  return spaceFailureWithin(disk.storageMaximum, disk.storageAvailable, disk.storageScheduled, extraScheduled, size, actualSize,
    minimalAvailable(disk.storageMaximum, minimalAvailablePercentage),
    provisionedLimit(disk.storageMaximum, disk.storageReserved, overProvisioningPercentage));
}

/** spaceFailure on the disk's figures as numbers and its two thresholds computed (a disk table's columns). */
export function spaceFailureWithin(
  storageMaximum: number,
  storageAvailable: number,
  storageScheduled: number,
  extraScheduled: number,
  size: number,
  actualSize: number,
  minimal: number,
  limit: number,
): SpaceFailure | null {
  if (storageMaximum <= 0) return 'storage_maximum_zero';
  if (storageAvailable <= 0) return 'storage_available_zero';
  if (!(storageAvailable - actualSize > minimal)) return 'actual_space_usage';
  if (!(size + storageScheduled + extraScheduled <= limit)) return 'scheduling_space';
  return null;
}

/** Longhorn's wording for a failed space check (condition messages and explain traces). */
export function describeSpaceCheck(c: SpaceCheck, disk: DiskSpace, minimalAvailablePercentage: number): string {
  switch (c.failure) {
    case 'storage_maximum_zero':
      return `Storage Max must be greater than 0 (StorageMaximum = ${disk.storageMaximum}).`;
    case 'storage_available_zero':
      return `Storage Available must be greater than 0 (StorageAvailable = ${disk.storageAvailable}).`;
    case 'actual_space_usage':
      return `Actual space usage condition failed: CurrentAvailable = ${c.currentAvailable} is less than or equal to ` +
        `MinimalAvailable = ${c.minimalAvailable} (${minimalAvailablePercentage}% of Storage Max).`;
    case 'scheduling_space':
      return `Scheduling space condition failed: ScheduledTotal = ${c.scheduledTotal} is greater than ` +
        `ProvisionedLimit = ${c.provisionedLimit}.`;
    default:
      return `CurrentAvailable = ${c.currentAvailable} > MinimalAvailable = ${c.minimalAvailable} and ` +
        `ScheduledTotal = ${c.scheduledTotal} ≤ ProvisionedLimit = ${c.provisionedLimit}.`;
  }
}

/**
 * IsSelectorsInTags: every selector tag must be among the tags (AND, exact). An empty selector matches
 * everything when allowEmpty, otherwise only an untagged node or disk.
 */
export function selectorsInTags(tags: readonly string[], selectors: readonly string[], allowEmpty: boolean): boolean {
  if (selectors.length === 0) return allowEmpty || tags.length === 0;
  for (const s of selectors) if (!tags.includes(s)) return false;
  return true;
}

/**
 * Replica auto-balance disk pressure (best-effort only): (avail − reserved) × 100 / max, in Go's int64 division
 * (truncated toward zero), below 100 − pressure%. A disk without a maximum is never under pressure (Longhorn would
 * divide by zero; Berth skips it).
 */
export function diskUnderPressure(disk: DiskSpace, pressurePercentage: number): boolean {
  if (pressurePercentage <= 0 || disk.storageMaximum <= 0) return false;
  return Math.trunc(((disk.storageAvailable - disk.storageReserved) * 100) / disk.storageMaximum) < 100 - pressurePercentage;
}

/** Usable storage of the balance selection: avail − reserved − scheduled (status figure), clamped at 0. */
export function usableStorage(disk: DiskSpace): number {
  return Math.max(disk.storageAvailable - disk.storageReserved - disk.storageScheduled, 0);
}
