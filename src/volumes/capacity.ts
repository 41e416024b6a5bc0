// Cinder 21's capacity arithmetic (cinder/utils.py, cinder/scheduler/filters/capacity_filter.py,
// cinder/scheduler/weights/capacity.py), plus the spec's "standard" over-provisioning calculation.
// Pure: plain numbers in, plain numbers out. Reference: shared/reference/cinder.md §2–§6.
import { pyFixed, pyRound } from './pyround.ts';

/** A capacity figure as drivers report it: GiB, or one of Cinder's INFINITE_UNKNOWN_VALUES. */
export type Capacity = number | 'infinite' | 'unknown';
export type OverProvisioningCalculation = 'cinder' | 'standard';

/** utils.py INITIAL_AUTO_MOSR: the 'auto' ratio while nothing is provisioned. */
const INITIAL_AUTO_MOSR = 20;
/** weights/capacity.py OFFSET_MIN / OFFSET_MULT: how far above the finite weights an infinite one is placed. */
const OFFSET_MIN = 10000;
const OFFSET_MULT = 100;

export function isInfiniteOrUnknown(c: Capacity | null): c is 'infinite' | 'unknown' {
  return c === 'infinite' || c === 'unknown';
}

/** The ratio Cinder computes at ingest, or why it cannot (Cinder would raise). */
export type RatioResult = { ok: true; ratio: number; auto: boolean } | { ok: false; message: string };

/**
 * utils.calculate_max_over_subscription_ratio, in Cinder's order. `reported` is the pool's raw value
 * (number, numeric string or 'auto'); a falsy one (absent, 0, '') falls back to `configured`.
 */
export function maxOverSubscriptionRatio(input: {
  thinSupport: boolean;
  total: Capacity;
  free: Capacity;
  provisioned: number;
  reported: number | string | undefined | null;
  configured: number | 'auto';
}): RatioResult {
  if (!input.thinSupport) return { ok: true, ratio: 1.0, auto: false };
  if (isInfiniteOrUnknown(input.total) || isInfiniteOrUnknown(input.free)) return { ok: true, ratio: 1.0, auto: false };
  const mosr = input.reported || input.configured;
  if (mosr === 'auto') {
    if (input.provisioned === 0) return { ok: true, ratio: INITIAL_AUTO_MOSR, auto: true };
    const denominator = input.total - input.free + 1;
    if (denominator === 0) {
      return {
        ok: false,
        message: `the 'auto' max_over_subscription_ratio divides by total - free + 1 = 0 ` +
          `(total ${input.total}, free ${input.free}); Cinder raises ZeroDivisionError`,
      };
    }
    return { ok: true, ratio: 1 + input.provisioned / denominator, auto: true };
  }
  return { ok: true, ratio: Number(mosr), auto: false };
}

/** utils.calculate_capacity_factors, every figure rounded as Cinder rounds it. */
export interface CapacityFactors {
  total_capacity: number;
  free_capacity: number;
  reserved_capacity: number;
  total_reserved_available_capacity: number;
  max_over_subscription_ratio: number | null;
  total_available_capacity: number;
  provisioned_capacity: number;
  calculated_free_capacity: number;
  virtual_free_capacity: number;
  free_percent: number;
  provisioned_ratio: number;
  provisioned_type: 'thin' | 'thick';
}

export function calculateCapacityFactors(
  total: number,
  free: number,
  provisioned: number,
  thinSupport: boolean,
  mosr: number,
  reservedPercentage: number,
  thin: boolean,
): CapacityFactors {
  // Order of float operations matters: 100 * (29 / 100) = 28.999999999999996 → floor 28.
  const reserved = reservedPercentage / 100;
  const reservedCapacity = Math.floor(total * reserved);
  const totalReservedAvailable = total - reservedCapacity;
  let totalAvailable: number;
  let calculatedFree: number;
  let virtualFree: number;
  let type: 'thin' | 'thick';
  if (thin && thinSupport) {
    totalAvailable = totalReservedAvailable * mosr;
    calculatedFree = totalAvailable - provisioned;
    virtualFree = calculatedFree;
    type = 'thin';
  } else {
    totalAvailable = totalReservedAvailable;
    calculatedFree = totalAvailable - provisioned;
    virtualFree = calculatedFree;
    if (free < calculatedFree) virtualFree = free;
    type = 'thick';
  }
  let provisionedRatio = 0;
  let freePercent = 0;
  if (totalAvailable) {
    provisionedRatio = provisioned / totalAvailable;
    freePercent = (virtualFree / totalAvailable) * 100;
  }
  return {
    total_capacity: total,
    free_capacity: free,
    reserved_capacity: reservedCapacity,
    total_reserved_available_capacity: pyRound(totalReservedAvailable),
    max_over_subscription_ratio: type === 'thin' ? mosr : null,
    total_available_capacity: pyRound(totalAvailable),
    provisioned_capacity: provisioned,
    calculated_free_capacity: pyRound(calculatedFree),
    virtual_free_capacity: pyRound(virtualFree),
    free_percent: pyRound(freePercent),
    provisioned_ratio: pyRound(provisionedRatio),
    provisioned_type: type,
  };
}

/** calculate_capacity_factors' total_available_capacity alone: the same operations in the same order. */
function totalAvailableCapacity(total: number, thinSupport: boolean, mosr: number, reservedPercentage: number, thin: boolean): number {
  const totalReservedAvailable = total - Math.floor(total * (reservedPercentage / 100));
  return pyRound(thin && thinSupport ? totalReservedAvailable * mosr : totalReservedAvailable);
}

/**
 * calculate_capacity_factors' virtual_free_capacity alone, without the other figures or an object (a row per pool
 * per report or claim; headroom weighs a pool after each of many claims): the same operations in the same order.
 */
function virtualFreeCapacity(
  total: number,
  free: number,
  provisioned: number,
  thinSupport: boolean,
  mosr: number,
  reservedPercentage: number,
  thin: boolean,
): number {
  const totalReservedAvailable = total - Math.floor(total * (reservedPercentage / 100));
  if (thin && thinSupport) return pyRound(totalReservedAvailable * mosr - provisioned);
  const calculatedFree = totalReservedAvailable - provisioned;
  return pyRound(free < calculatedFree ? free : calculatedFree);
}

/** The spec's standard capacity for thin volumes on a thin pool: total × (1 − reserved/100) × ratio − provisioned. */
function standardThinVirtualFree(total: number, provisioned: number, reservedPercentage: number, mosr: number): number {
  return total * (1 - reservedPercentage / 100) * mosr - provisioned;
}

/** The state of one pool that CapacityFilter and CapacityWeigher read. */
export interface PoolCapacity {
  total: Capacity;
  /** null: Cinder's "Free capacity not set" (Berth refuses such reports; kept for the unit tests). */
  free: Capacity | null;
  provisioned: number;
  reservedPercentage: number;
  thinSupport: boolean;
  /** The effective max_over_subscription_ratio (maxOverSubscriptionRatio). */
  mosr: number;
}

// Bits of CapacityFigures.flags.
const FLAG_FREE_INFINITE = 1;
const FLAG_TOTAL_INFINITE = 2;
const FLAG_THIN_SUPPORT = 4;
/** total and free are numbers, so the factor columns are too (NaN otherwise). */
const FLAG_NUMERIC = 8;

/**
 * What CapacityFilter and CapacityWeigher read that does not depend on the request size, one column per figure and
 * a row per pool, computed once per report or claim so that a decision is a few comparisons per pool. This is the
 * only place these figures are kept; a single pool is a one-row table (CapacityFigures.of).
 */
export class CapacityFigures {
  readonly length: number;
  readonly flags: Uint8Array;
  readonly reservedPercentage: Float64Array;
  /** total_capacity_gb (NaN when infinite/unknown). */
  readonly total: Float64Array;
  readonly mosr: Float64Array;
  readonly provisioned: Float64Array;
  /** calculate_capacity_factors for a thin request (the thick formula when the pool has no thin support). */
  readonly thinTotalAvailable: Float64Array;
  readonly thinVirtualFree: Float64Array;
  /** calculate_capacity_factors' virtual free capacity for a thick request. */
  readonly thickVirtualFree: Float64Array;
  /** standardThinVirtualFree, or the thick virtual free when the pool has no thin support. */
  readonly standardFree: Float64Array;

  constructor(length: number) {
    this.length = length;
    this.flags = new Uint8Array(length);
    this.reservedPercentage = new Float64Array(length);
    this.total = new Float64Array(length);
    this.mosr = new Float64Array(length);
    this.provisioned = new Float64Array(length);
    this.thinTotalAvailable = new Float64Array(length);
    this.thinVirtualFree = new Float64Array(length);
    this.thickVirtualFree = new Float64Array(length);
    this.standardFree = new Float64Array(length);
  }

  /** The figures of one pool (tests, and checks of a single pool). */
  static of(pool: PoolCapacity): CapacityFigures {
    const f = new CapacityFigures(1);
    f.set(0, pool);
    return f;
  }

  /** Computes row i from the pool's state. */
  set(i: number, pool: PoolCapacity): void {
    const freeInf = isInfiniteOrUnknown(pool.free);
    const totalInf = isInfiniteOrUnknown(pool.total);
    const numeric = !freeInf && !totalInf && pool.free !== null;
    const total = typeof pool.total === 'number' ? pool.total : NaN;
    this.flags[i] = (freeInf ? FLAG_FREE_INFINITE : 0) | (totalInf ? FLAG_TOTAL_INFINITE : 0) |
      (pool.thinSupport ? FLAG_THIN_SUPPORT : 0) | (numeric ? FLAG_NUMERIC : 0);
    this.reservedPercentage[i] = pool.reservedPercentage;
    this.total[i] = total;
    this.mosr[i] = pool.mosr;
    this.provisioned[i] = pool.provisioned;
    if (!numeric) {
      this.thinTotalAvailable[i] = NaN;
      this.thinVirtualFree[i] = NaN;
      this.thickVirtualFree[i] = NaN;
      this.standardFree[i] = NaN;
      return;
    }
    const free = pool.free as number;
    const mosrArg = pool.thinSupport ? pool.mosr : 1;
    // calculate_capacity_factors' figures for a thin and a thick request, each computed alone (no object per row).
    const { provisioned, reservedPercentage, thinSupport } = pool;
    const thick = virtualFreeCapacity(total, free, provisioned, thinSupport, mosrArg, reservedPercentage, false);
    this.thinTotalAvailable[i] = totalAvailableCapacity(total, thinSupport, mosrArg, reservedPercentage, true);
    this.thinVirtualFree[i] = virtualFreeCapacity(total, free, provisioned, thinSupport, mosrArg, reservedPercentage, true);
    this.thickVirtualFree[i] = thick;
    this.standardFree[i] = thinSupport ? standardThinVirtualFree(total, provisioned, reservedPercentage, pool.mosr) : thick;
  }

  /** Copies row j of `from` into row i (a pool that did not change keeps its figures across a table rebuild). */
  copyRow(i: number, from: CapacityFigures, j: number): void {
    this.flags[i] = from.flags[j]!;
    this.reservedPercentage[i] = from.reservedPercentage[j]!;
    this.total[i] = from.total[j]!;
    this.mosr[i] = from.mosr[j]!;
    this.provisioned[i] = from.provisioned[j]!;
    this.thinTotalAvailable[i] = from.thinTotalAvailable[j]!;
    this.thinVirtualFree[i] = from.thinVirtualFree[j]!;
    this.thickVirtualFree[i] = from.thickVirtualFree[j]!;
    this.standardFree[i] = from.standardFree[j]!;
  }

  /** Free or total capacity is 'infinite' or 'unknown'. */
  infiniteOrUnknown(i: number): boolean {
    return (this.flags[i]! & (FLAG_FREE_INFINITE | FLAG_TOTAL_INFINITE)) !== 0;
  }

  /** The virtual free capacity a thin volume sees (what CapacityWeigher weighs); null when it is not a number. */
  thinVirtualFreeOf(i: number, calculation: OverProvisioningCalculation): number | null {
    if ((this.flags[i]! & FLAG_NUMERIC) === 0) return null;
    return calculation === 'standard' ? this.standardFree[i]! : this.thinVirtualFree[i]!;
  }
}

// Stable reason codes of CapacityFilter (the labels of cinder-cases' expected.json): the ones that pass …
export const VOL_EXISTS_ON = 'vol_exists_on';
export const REQUESTED_SIZE_ZERO = 'requested_size_zero';
export const FREE_INFINITE_OR_UNKNOWN = 'free_infinite_or_unknown';
export const TOTAL_INFINITE_OR_UNKNOWN_RESERVED_ZERO = 'total_infinite_or_unknown_reserved_zero';
export const FITS_THIN = 'fits_thin';
export const FITS_THICK = 'fits_thick';
// … and the ones that reject.
export const FREE_CAPACITY_NOT_SET = 'free_capacity_not_set';
export const TOTAL_UNKNOWN_WITH_RESERVED = 'total_unknown_with_reserved';
export const TOTAL_CAPACITY_LE_ZERO = 'total_capacity_le_zero';
export const ZERO_DIVISION = 'zero_division';
export const PROVISIONED_RATIO_EXCEEDED = 'provisioned_ratio_exceeded';
export const INSUFFICIENT_VIRTUAL_FREE_THIN = 'insufficient_virtual_free_thin';
export const INVALID_MOSR = 'invalid_mosr';
export const INSUFFICIENT_FREE = 'insufficient_free';

export type CapacityPassCode =
  | typeof VOL_EXISTS_ON | typeof REQUESTED_SIZE_ZERO | typeof FREE_INFINITE_OR_UNKNOWN
  | typeof TOTAL_INFINITE_OR_UNKNOWN_RESERVED_ZERO | typeof FITS_THIN | typeof FITS_THICK;
export type CapacityRejectCode =
  | typeof FREE_CAPACITY_NOT_SET | typeof TOTAL_UNKNOWN_WITH_RESERVED | typeof TOTAL_CAPACITY_LE_ZERO | typeof ZERO_DIVISION
  | typeof PROVISIONED_RATIO_EXCEEDED | typeof INSUFFICIENT_VIRTUAL_FREE_THIN | typeof INVALID_MOSR | typeof INSUFFICIENT_FREE;
export type CapacityCode = CapacityPassCode | CapacityRejectCode;

export type CapacityVerdict =
  | { passes: true; code: CapacityPassCode }
  | { passes: false; code: CapacityRejectCode; message: string };

export function isCapacityPass(code: CapacityCode): code is CapacityPassCode {
  // Interned constant strings: identity comparisons, cheaper than hashing on the hot path.
  return code === FITS_THIN || code === FITS_THICK || code === FREE_INFINITE_OR_UNKNOWN ||
    code === TOTAL_INFINITE_OR_UNKNOWN_RESERVED_ZERO || code === VOL_EXISTS_ON || code === REQUESTED_SIZE_ZERO;
}

/** Numbers in messages as JavaScript prints them. */
function num(x: number): string {
  return String(x);
}

/**
 * CapacityFilter.backend_passes from step 4 on (free set, requested > 0) for pool i: the verdict's code only,
 * without allocating (it runs per pool per decision). `thin` is the request's type (not provisioning:type == thick).
 */
export function capacityCode(
  f: CapacityFigures,
  i: number,
  requested: number,
  thin: boolean,
  calculation: OverProvisioningCalculation = 'cinder',
): CapacityCode {
  const flags = f.flags[i]!;
  if ((flags & FLAG_FREE_INFINITE) !== 0) return FREE_INFINITE_OR_UNKNOWN;
  if ((flags & FLAG_TOTAL_INFINITE) !== 0) {
    return f.reservedPercentage[i]! / 100 === 0 ? TOTAL_INFINITE_OR_UNKNOWN_RESERVED_ZERO : TOTAL_UNKNOWN_WITH_RESERVED;
  }
  if (f.total[i]! <= 0) return TOTAL_CAPACITY_LE_ZERO;
  const thinPath = thin && (flags & FLAG_THIN_SUPPORT) !== 0;
  if (thinPath && f.mosr[i]! >= 1) {
    if (calculation === 'standard') {
      return f.standardFree[i]! >= requested ? FITS_THIN : INSUFFICIENT_VIRTUAL_FREE_THIN;
    }
    // Cinder divides by the rounded total_available_capacity here (ZeroDivisionError when it is 0).
    const totalAvailable = f.thinTotalAvailable[i]!;
    if (totalAvailable === 0) return ZERO_DIVISION;
    const provisionedRatio = (f.provisioned[i]! + requested) / totalAvailable;
    if (provisionedRatio > f.mosr[i]!) return PROVISIONED_RATIO_EXCEEDED;
    return f.thinVirtualFree[i]! >= requested ? FITS_THIN : INSUFFICIENT_VIRTUAL_FREE_THIN;
  }
  if (thinPath) return INVALID_MOSR;
  return f.thickVirtualFree[i]! < requested ? INSUFFICIENT_FREE : FITS_THICK;
}

/**
 * A size up to which capacityCode passes pool i for sure (every requested ≤ it passes; −∞ when none is known to):
 * what lets a decision run the check only on the pools whose bound the request exceeds. The verdict is monotone in
 * the size, and the bound is the exact one where the check is one comparison; on Cinder's thin path the provisioned
 * ratio (a division) gets a margin far above its rounding error, so a pool near the edge is checked, never assumed.
 */
export function capacitySafeSize(f: CapacityFigures, i: number, thin: boolean, calculation: OverProvisioningCalculation): number {
  const flags = f.flags[i]!;
  if ((flags & FLAG_FREE_INFINITE) !== 0) return Infinity;
  if ((flags & FLAG_TOTAL_INFINITE) !== 0) return f.reservedPercentage[i]! / 100 === 0 ? Infinity : -Infinity;
  if (!(f.total[i]! > 0)) return -Infinity;
  const thinPath = thin && (flags & FLAG_THIN_SUPPORT) !== 0;
  if (thinPath && f.mosr[i]! >= 1) {
    if (calculation === 'standard') return orNone(f.standardFree[i]!);
    const totalAvailable = f.thinTotalAvailable[i]!;
    if (!(totalAvailable > 0)) return -Infinity;
    const limit = f.mosr[i]! * totalAvailable;
    const provisioned = f.provisioned[i]!;
    const ratioBound = limit - provisioned - 1e-9 * (Math.abs(limit) + Math.abs(provisioned) + 1);
    return orNone(Math.min(f.thinVirtualFree[i]!, ratioBound));
  }
  if (thinPath) return -Infinity;
  return orNone(f.thickVirtualFree[i]!);
}

/** NaN (a figure that is not a number) bounds nothing. */
function orNone(bound: number): number {
  return Number.isNaN(bound) ? -Infinity : bound;
}

/** The sentence (with Cinder's wording and the numbers) for a rejection code of capacityCode. */
export function capacityRejectionMessage(
  f: CapacityFigures,
  i: number,
  requested: number,
  calculation: OverProvisioningCalculation,
  code: CapacityRejectCode,
): string {
  switch (code) {
    case TOTAL_UNKNOWN_WITH_RESERVED:
      return `Cannot calculate GB of reserved space (${f.reservedPercentage[i]}%) with backend's reported total capacity ` +
        'that is infinite or unknown';
    case TOTAL_CAPACITY_LE_ZERO:
      return `Insufficient free space for volume creation. Total capacity is ${pyFixed(f.total[i]!)}.`;
    case ZERO_DIVISION:
      return `Total available capacity is 0 after reserving ${f.reservedPercentage[i]}%: the provisioned ratio ` +
        'divides by zero (Cinder raises ZeroDivisionError).';
    case PROVISIONED_RATIO_EXCEEDED: {
      const ratio = (f.provisioned[i]! + requested) / f.thinTotalAvailable[i]!;
      return 'Insufficient free space for thin provisioning. The ratio of provisioned capacity over total capacity ' +
        `${pyFixed(ratio)} has exceeded the maximum over subscription ratio ${pyFixed(f.mosr[i]!)}.`;
    }
    case INSUFFICIENT_VIRTUAL_FREE_THIN:
      if (calculation === 'standard') {
        return `Insufficient free virtual space (${num(f.standardFree[i]!)} GiB, standard calculation) to accommodate ` +
          `thin provisioned ${num(requested)} GiB volume.`;
      }
      return `Insufficient free virtual space (${num(f.thinVirtualFree[i]!)} GiB) to accommodate thin ` +
        `provisioned ${num(requested)} GiB volume.`;
    case INVALID_MOSR:
      return `Invalid maximum over subscription ratio of ${pyFixed(f.mosr[i]!)}. The ratio should be a minimum of 1.0.`;
    case INSUFFICIENT_FREE:
      return `Insufficient free space for volume creation (requested / avail): ${num(requested)}/` +
        `${num(f.thickVirtualFree[i]!)} GiB.`;
    case FREE_CAPACITY_NOT_SET:
      return 'Free capacity not set: volume node info collection broken.';
  }
  return code;
}

/** capacityCode with the message: the verdict as a value. */
export function capacityVerdict(
  f: CapacityFigures,
  i: number,
  requested: number,
  thin: boolean,
  calculation: OverProvisioningCalculation = 'cinder',
): CapacityVerdict {
  const code = capacityCode(f, i, requested, thin, calculation);
  if (isCapacityPass(code)) return { passes: true, code };
  return { passes: false, code, message: capacityRejectionMessage(f, i, requested, calculation, code) };
}

/** The whole of CapacityFilter.backend_passes, including the operations Berth does not expose over HTTP. */
export interface CapacityFilterRequest {
  size: number;
  /** Extend: the new size (requested = int(new_size) − int(size)). */
  newSize?: number;
  /** Retype/migrate: the backend id the volume already lives on. */
  volExistsOn?: string;
  thin: boolean;
}

/** Cinder's CapacityFilter.backend_passes for one pool, steps 1–14 (reference §4). */
export function capacityBackendPasses(
  backendId: string,
  pool: PoolCapacity,
  request: CapacityFilterRequest,
  calculation: OverProvisioningCalculation = 'cinder',
): CapacityVerdict {
  if (request.volExistsOn !== undefined && backendId === request.volExistsOn) return { passes: true, code: VOL_EXISTS_ON };
  const requested = request.newSize ? Math.trunc(request.newSize) - Math.trunc(request.size) : request.size;
  if (requested === 0) return { passes: true, code: REQUESTED_SIZE_ZERO };
  if (pool.free === null) {
    return { passes: false, code: FREE_CAPACITY_NOT_SET, message: 'Free capacity not set: volume node info collection broken.' };
  }
  return capacityVerdict(CapacityFigures.of(pool), 0, requested, request.thin, calculation);
}

/**
 * CapacityWeigher._weigh_object for pool i: the virtual free capacity for this request's type, or −1 / +∞ for an
 * infinite or unknown pool depending on the sign of the multiplier.
 */
export function capacityWeight(
  f: CapacityFigures,
  i: number,
  thin: boolean,
  multiplier: number,
  calculation: OverProvisioningCalculation = 'cinder',
): number {
  const flags = f.flags[i]!;
  if ((flags & (FLAG_FREE_INFINITE | FLAG_TOTAL_INFINITE)) !== 0) return multiplier > 0 ? -1 : Infinity;
  if (calculation === 'standard' && thin && (flags & FLAG_THIN_SUPPORT) !== 0) return f.standardFree[i]!;
  return thin ? f.thinVirtualFree[i]! : f.thickVirtualFree[i]!;
}

/**
 * capacityWeight of pools whose provisioned and free figures change claim after claim (headroom weighs a pool after
 * each of many claims): per pool, once, how it is weighed and the part of its figure no claim changes, computed with
 * the row's operations in the row's order, so weight() equals capacityWeight on a row set from the same figures, to
 * the bit.
 */
export class CapacityWeightsAfter {
  /** Per pool: WEIGH_INFINITE, WEIGH_THIN (rounded), WEIGH_STANDARD (not rounded) or WEIGH_THICK. */
  readonly #kind: Uint8Array;
  /** Per pool: the figure before provisioned is subtracted (total reserved available, × the ratio when thin). */
  readonly #base: Float64Array;
  readonly #infinite: number;

  constructor(pools: readonly PoolCapacity[], thin: boolean, multiplier: number, calculation: OverProvisioningCalculation) {
    this.#kind = new Uint8Array(pools.length);
    this.#base = new Float64Array(pools.length);
    this.#infinite = multiplier > 0 ? -1 : Infinity;
    pools.forEach((pool, p) => {
      if (isInfiniteOrUnknown(pool.free) || isInfiniteOrUnknown(pool.total)) return; // WEIGH_INFINITE (0)
      if (pool.free === null) {
        // The row's figures are NaN (Cinder's "Free capacity not set").
        this.#kind[p] = WEIGH_STANDARD;
        this.#base[p] = NaN;
        return;
      }
      const total = pool.total as number;
      const r = pool.reservedPercentage;
      if (thin && pool.thinSupport && calculation === 'standard') {
        this.#kind[p] = WEIGH_STANDARD;
        this.#base[p] = total * (1 - r / 100) * pool.mosr;
        return;
      }
      const totalReservedAvailable = total - Math.floor(total * (r / 100));
      const thinFigure = thin && pool.thinSupport;
      this.#kind[p] = thinFigure ? WEIGH_THIN : WEIGH_THICK;
      this.#base[p] = thinFigure ? totalReservedAvailable * pool.mosr : totalReservedAvailable;
    });
  }

  /** Pool p's weight with these figures (free is read for thick figures only). */
  weight(p: number, provisioned: number, free: number): number {
    const kind = this.#kind[p]!;
    if (kind === WEIGH_INFINITE) return this.#infinite;
    const rest = this.#base[p]! - provisioned;
    if (kind === WEIGH_STANDARD) return rest;
    if (kind === WEIGH_THIN) return pyRound(rest);
    return pyRound(free < rest ? free : rest);
  }
}
const WEIGH_INFINITE = 0;
const WEIGH_THIN = 1;
const WEIGH_STANDARD = 2;
const WEIGH_THICK = 3;

/**
 * CapacityWeigher.weigh_objects' treatment of infinite weights: each becomes max(finite) + (max − min) × 100
 * (or + 10000 when that offset is 0). Returns false when every weight is infinite (Cinder raises ValueError).
 * Rewrites `weights` in place.
 */
export function replaceInfiniteWeights(weights: number[] | Float64Array, count = weights.length): boolean {
  let minval = NaN;
  let maxval = NaN;
  let maxFinite = -Infinity;
  let anyFinite = false;
  for (let i = 0; i < count; i++) {
    const w = weights[i]!;
    if (i === 0 || w < minval) minval = w;
    if (i === 0 || w > maxval) maxval = w;
    if (w !== Infinity) {
      anyFinite = true;
      if (w > maxFinite) maxFinite = w;
    }
  }
  if (count === 0 || maxval !== Infinity) return true;
  if (!anyFinite) return false;
  const offset = (maxFinite - minval) * OFFSET_MULT;
  const replacement = maxFinite + (offset === 0 ? OFFSET_MIN : offset);
  for (let i = 0; i < count; i++) if (weights[i] === Infinity) weights[i] = replacement;
  return true;
}
