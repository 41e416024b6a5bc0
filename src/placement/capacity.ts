// Inventory arithmetic (Placement's capacity check, research_context._capacity_check_clause). Pure.

export interface Inventory {
  total: number;
  reserved: number;
  min_unit: number;
  max_unit: number;
  step_size: number;
  allocation_ratio: number;
}

/** The capacity Placement reports in provider summaries and re-checks after merging groups. */
export function capacity(inv: Inventory): number {
  return Math.trunc((inv.total - inv.reserved) * inv.allocation_ratio);
}

/** Why an amount does not fit, or null. Order: capacity, then min_unit, max_unit, step_size. */
type FitFailure = 'capacity' | 'min_unit' | 'max_unit' | 'step_size';

/** SQL's check: used + amount <= (total - reserved) * ratio (float), min <= amount <= max, amount % step == 0. */
export function fitFailure(inv: Inventory, used: number, amount: number): FitFailure | null {
  return fitFailureOf((inv.total - inv.reserved) * inv.allocation_ratio, inv.min_unit, inv.max_unit, inv.step_size, used, amount);
}

/** fitFailureCode's answers: 0 fits, else the failure (FIT_FAILURES[code]). */
export const FIT_FAILURES = [null, 'capacity', 'min_unit', 'max_unit', 'step_size'] as const;

/**
 * fitFailure over the inventory's numbers (`limit` = (total − reserved) × ratio), as the model's class columns hold
 * them, as a number (an index into FIT_FAILURES): what a loop over many providers compares without strings.
 */
export function fitFailureCode(limit: number, minUnit: number, maxUnit: number, stepSize: number, used: number, amount: number): number {
  if (used + amount > limit) return 1;
  if (amount < minUnit) return 2;
  if (amount > maxUnit) return 3;
  if (amount % stepSize !== 0) return 4;
  return 0;
}

/** fitFailureCode as the failure's name. */
function fitFailureOf(limit: number, minUnit: number, maxUnit: number, stepSize: number, used: number, amount: number): FitFailure | null {
  return FIT_FAILURES[fitFailureCode(limit, minUnit, maxUnit, stepSize, used, amount)] ?? null;
}

export function fits(inv: Inventory, used: number, amount: number): boolean {
  return fitFailure(inv, used, amount) === null;
}

/** The post-merge re-check: sums of several groups on one (provider, class). */
export function fitsMerged(inv: Inventory, used: number, sum: number): boolean {
  return used + sum <= capacity(inv) && sum <= inv.max_unit;
}

/** Placement's inventory defaults (max_unit defaults to MAX_INT). */
export const INVENTORY_DEFAULTS = { reserved: 0, min_unit: 1, step_size: 1, allocation_ratio: 1.0 } as const;
export const MAX_INT = 2147483647;
