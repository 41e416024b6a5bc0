// Cinder 21's capacity arithmetic (cinder/utils.py, cinder/scheduler/filters/capacity_filter.py,
// cinder/scheduler/weights/capacity.py), plus the spec's "standard" over-provisioning calculation.
// Pure: plain numbers in, plain numbers out. Reference: shared/reference/cinder.md §2–§6.
import { pyFixed, pyRound } from './pyround.ts';

/** A capacity figure as drivers report it: GiB, or one of Cinder's INFINITE_UNKNOWN_VALUES. */
export type Capacity = number | 'infinite' | 'unknown';
export type OverProvisioningCalculation = 'cinder' | 'standard';

/** utils.py INITIAL_AUTO_MOSR: the 'auto' ratio while nothing is provisioned. */
export const INITIAL_AUTO_MOSR = 20;
/** weights/capacity.py OFFSET_MIN / OFFSET_MULT: how far above the finite weights an infinite one is placed. */
export const OFFSET_MIN = 10000;
export const OFFSET_MULT = 100;

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

/** The spec's standard capacity for thin volumes on a thin pool: total × (1 − reserved/100) × ratio − provisioned. */
export function standardThinVirtualFree(total: number, provisioned: number, reservedPercentage: number, mosr: number): number {
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

/**
 * Everything CapacityFilter and CapacityWeigher need that does not depend on the request size, computed once
 * per report or claim so that a decision is a few comparisons per pool.
 */
export interface PoolFigures {
  freeInfiniteOrUnknown: boolean;
  totalInfiniteOrUnknown: boolean;
  totalNumber: number;
  reservedPercentage: number;
  thinSupport: boolean;
  mosr: number;
  /** calculate_capacity_factors for a thin request (thick formula when the pool has no thin support). */
  thinFactors: CapacityFactors | null;
  /** calculate_capacity_factors for a thick request. */
  thickFactors: CapacityFactors | null;
  /** standardThinVirtualFree, or the thick virtual free when the pool has no thin support. */
  standardThinFree: number | null;
  // The same figures flat (NaN when a capacity is infinite/unknown): the hot path reads only these.
  provisioned: number;
  thinTotalAvailable: number;
  thinVirtualFree: number;
  thickVirtualFree: number;
  standardFree: number;
}

export function poolFigures(pool: PoolCapacity): PoolFigures {
  const freeInf = isInfiniteOrUnknown(pool.free);
  const totalInf = isInfiniteOrUnknown(pool.total);
  const numeric = !freeInf && !totalInf && pool.free !== null;
  const total = typeof pool.total === 'number' ? pool.total : NaN;
  const free = typeof pool.free === 'number' ? pool.free : NaN;
  const mosrArg = pool.thinSupport ? pool.mosr : 1;
  const thinFactors = numeric
    ? calculateCapacityFactors(total, free, pool.provisioned, pool.thinSupport, mosrArg, pool.reservedPercentage, true)
    : null;
  const thickFactors = numeric
    ? calculateCapacityFactors(total, free, pool.provisioned, pool.thinSupport, mosrArg, pool.reservedPercentage, false)
    : null;
  const standardThinFree = numeric
    ? pool.thinSupport
      ? standardThinVirtualFree(total, pool.provisioned, pool.reservedPercentage, pool.mosr)
      : thickFactors!.virtual_free_capacity
    : null;
  return {
    freeInfiniteOrUnknown: freeInf,
    totalInfiniteOrUnknown: totalInf,
    totalNumber: total,
    reservedPercentage: pool.reservedPercentage,
    thinSupport: pool.thinSupport,
    mosr: pool.mosr,
    thinFactors,
    thickFactors,
    standardThinFree,
    provisioned: pool.provisioned,
    thinTotalAvailable: thinFactors ? thinFactors.total_available_capacity : NaN,
    thinVirtualFree: thinFactors ? thinFactors.virtual_free_capacity : NaN,
    thickVirtualFree: thickFactors ? thickFactors.virtual_free_capacity : NaN,
    standardFree: standardThinFree ?? NaN,
  };
}

/** Stable reason codes of CapacityFilter (the labels of cinder-cases' expected.json). */
export const CAPACITY_PASS = {
  VOL_EXISTS_ON: 'vol_exists_on',
  REQUESTED_SIZE_ZERO: 'requested_size_zero',
  FREE_INFINITE_OR_UNKNOWN: 'free_infinite_or_unknown',
  TOTAL_INFINITE_OR_UNKNOWN_RESERVED_ZERO: 'total_infinite_or_unknown_reserved_zero',
  FITS_THIN: 'fits_thin',
  FITS_THICK: 'fits_thick',
} as const;

export const CAPACITY_REJECT = {
  FREE_CAPACITY_NOT_SET: 'free_capacity_not_set',
  TOTAL_UNKNOWN_WITH_RESERVED: 'total_unknown_with_reserved',
  TOTAL_CAPACITY_LE_ZERO: 'total_capacity_le_zero',
  ZERO_DIVISION: 'zero_division',
  PROVISIONED_RATIO_EXCEEDED: 'provisioned_ratio_exceeded',
  INSUFFICIENT_VIRTUAL_FREE_THIN: 'insufficient_virtual_free_thin',
  INVALID_MOSR: 'invalid_mosr',
  INSUFFICIENT_FREE: 'insufficient_free',
} as const;

export type CapacityPassCode = (typeof CAPACITY_PASS)[keyof typeof CAPACITY_PASS];
export type CapacityRejectCode = (typeof CAPACITY_REJECT)[keyof typeof CAPACITY_REJECT];
export type CapacityCode = CapacityPassCode | CapacityRejectCode;

export type CapacityVerdict =
  | { passes: true; code: CapacityPassCode }
  | { passes: false; code: CapacityRejectCode; message: string };

const PASS_CODES: ReadonlySet<string> = new Set(Object.values(CAPACITY_PASS));

export function isCapacityPass(code: CapacityCode): code is CapacityPassCode {
  // Interned constant strings: identity comparisons, cheaper than hashing on the hot path.
  return code === CAPACITY_PASS.FITS_THIN || code === CAPACITY_PASS.FITS_THICK || code === CAPACITY_PASS.FREE_INFINITE_OR_UNKNOWN ||
    code === CAPACITY_PASS.TOTAL_INFINITE_OR_UNKNOWN_RESERVED_ZERO || code === CAPACITY_PASS.VOL_EXISTS_ON ||
    code === CAPACITY_PASS.REQUESTED_SIZE_ZERO;
}

/** Every pass code (for tests). */
export const CAPACITY_PASS_CODES: ReadonlySet<string> = PASS_CODES;

/** Numbers in messages as JavaScript prints them. */
function num(x: number): string {
  return String(x);
}

/**
 * CapacityFilter.backend_passes from step 4 on (free set, requested > 0), over precomputed figures: the verdict's
 * code only, without allocating (the hot path). `thin` is the request's type (not provisioning:type == thick).
 */
export function capacityCode(
  f: PoolFigures,
  requested: number,
  thin: boolean,
  calculation: OverProvisioningCalculation = 'cinder',
): CapacityCode {
  return capacityCodeOf(
    f.freeInfiniteOrUnknown, f.totalInfiniteOrUnknown, f.reservedPercentage, f.totalNumber, f.thinSupport, f.mosr,
    f.provisioned, f.thinTotalAvailable, f.thinVirtualFree, f.thickVirtualFree, f.standardFree,
    requested, thin, calculation === 'standard',
  );
}

/** capacityCode over plain numbers, so the pool table (typed arrays) and PoolFigures share one implementation. */
export function capacityCodeOf(
  freeInfiniteOrUnknown: boolean,
  totalInfiniteOrUnknown: boolean,
  reservedPercentage: number,
  totalNumber: number,
  thinSupport: boolean,
  mosr: number,
  provisioned: number,
  thinTotalAvailable: number,
  thinVirtualFree: number,
  thickVirtualFree: number,
  standardFree: number,
  requested: number,
  thin: boolean,
  standard: boolean,
): CapacityCode {
  if (freeInfiniteOrUnknown) return CAPACITY_PASS.FREE_INFINITE_OR_UNKNOWN;
  if (totalInfiniteOrUnknown) {
    return reservedPercentage / 100 === 0
      ? CAPACITY_PASS.TOTAL_INFINITE_OR_UNKNOWN_RESERVED_ZERO
      : CAPACITY_REJECT.TOTAL_UNKNOWN_WITH_RESERVED;
  }
  if (totalNumber <= 0) return CAPACITY_REJECT.TOTAL_CAPACITY_LE_ZERO;
  const thinPath = thin && thinSupport;
  if (thinPath && mosr >= 1) {
    if (standard) {
      return standardFree >= requested ? CAPACITY_PASS.FITS_THIN : CAPACITY_REJECT.INSUFFICIENT_VIRTUAL_FREE_THIN;
    }
    // Cinder divides by the rounded total_available_capacity here (ZeroDivisionError when it is 0).
    if (thinTotalAvailable === 0) return CAPACITY_REJECT.ZERO_DIVISION;
    const provisionedRatio = (provisioned + requested) / thinTotalAvailable;
    if (provisionedRatio > mosr) return CAPACITY_REJECT.PROVISIONED_RATIO_EXCEEDED;
    return thinVirtualFree >= requested ? CAPACITY_PASS.FITS_THIN : CAPACITY_REJECT.INSUFFICIENT_VIRTUAL_FREE_THIN;
  }
  if (thinPath) return CAPACITY_REJECT.INVALID_MOSR;
  return thickVirtualFree < requested ? CAPACITY_REJECT.INSUFFICIENT_FREE : CAPACITY_PASS.FITS_THICK;
}

/** The sentence (with Cinder's wording and the numbers) for a rejection code of capacityCode. */
export function capacityRejectionMessage(
  f: PoolFigures,
  requested: number,
  thin: boolean,
  calculation: OverProvisioningCalculation,
  code: CapacityRejectCode,
): string {
  switch (code) {
    case CAPACITY_REJECT.TOTAL_UNKNOWN_WITH_RESERVED:
      return `Cannot calculate GB of reserved space (${f.reservedPercentage}%) with backend's reported total capacity ` +
        'that is infinite or unknown';
    case CAPACITY_REJECT.TOTAL_CAPACITY_LE_ZERO:
      return `Insufficient free space for volume creation. Total capacity is ${pyFixed(f.totalNumber)}.`;
    case CAPACITY_REJECT.ZERO_DIVISION:
      return `Total available capacity is 0 after reserving ${f.reservedPercentage}%: the provisioned ratio ` +
        'divides by zero (Cinder raises ZeroDivisionError).';
    case CAPACITY_REJECT.PROVISIONED_RATIO_EXCEEDED: {
      const factors = f.thinFactors!;
      const ratio = (factors.provisioned_capacity + requested) / factors.total_available_capacity;
      return 'Insufficient free space for thin provisioning. The ratio of provisioned capacity over total capacity ' +
        `${pyFixed(ratio)} has exceeded the maximum over subscription ratio ${pyFixed(f.mosr)}.`;
    }
    case CAPACITY_REJECT.INSUFFICIENT_VIRTUAL_FREE_THIN:
      if (calculation === 'standard') {
        return `Insufficient free virtual space (${num(f.standardThinFree!)} GiB, standard calculation) to accommodate ` +
          `thin provisioned ${num(requested)} GiB volume.`;
      }
      return `Insufficient free virtual space (${num(f.thinFactors!.virtual_free_capacity)} GiB) to accommodate thin ` +
        `provisioned ${num(requested)} GiB volume.`;
    case CAPACITY_REJECT.INVALID_MOSR:
      return `Invalid maximum over subscription ratio of ${pyFixed(f.mosr)}. The ratio should be a minimum of 1.0.`;
    case CAPACITY_REJECT.INSUFFICIENT_FREE:
      return `Insufficient free space for volume creation (requested / avail): ${num(requested)}/` +
        `${num(f.thickFactors!.virtual_free_capacity)} GiB.`;
    case CAPACITY_REJECT.FREE_CAPACITY_NOT_SET:
      return 'Free capacity not set: volume node info collection broken.';
  }
  return code;
}

/** capacityCode with the message: the verdict as a value (tests, and the whole-filter function below). */
export function capacityVerdict(
  f: PoolFigures,
  requested: number,
  thin: boolean,
  calculation: OverProvisioningCalculation = 'cinder',
): CapacityVerdict {
  const code = capacityCode(f, requested, thin, calculation);
  if (isCapacityPass(code)) return { passes: true, code };
  return { passes: false, code, message: capacityRejectionMessage(f, requested, thin, calculation, code) };
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

export function capacityFilter(
  backendId: string,
  pool: PoolCapacity,
  request: CapacityFilterRequest,
  calculation: OverProvisioningCalculation = 'cinder',
): CapacityVerdict {
  if (request.volExistsOn !== undefined && backendId === request.volExistsOn) {
    return { passes: true, code: CAPACITY_PASS.VOL_EXISTS_ON };
  }
  const requested = request.newSize ? Math.trunc(request.newSize) - Math.trunc(request.size) : request.size;
  if (requested === 0) return { passes: true, code: CAPACITY_PASS.REQUESTED_SIZE_ZERO };
  if (pool.free === null) {
    return {
      passes: false,
      code: CAPACITY_REJECT.FREE_CAPACITY_NOT_SET,
      message: 'Free capacity not set: volume node info collection broken.',
    };
  }
  return capacityVerdict(poolFigures(pool), requested, request.thin, calculation);
}

/**
 * CapacityWeigher._weigh_object: the virtual free capacity for this request's type, or −1 / +∞ for an
 * infinite or unknown pool depending on the sign of the multiplier.
 */
export function capacityWeight(
  f: PoolFigures,
  thin: boolean,
  multiplier: number,
  calculation: OverProvisioningCalculation = 'cinder',
): number {
  return capacityWeightOf(
    f.freeInfiniteOrUnknown || f.totalInfiniteOrUnknown, f.thinSupport, f.thinVirtualFree, f.thickVirtualFree, f.standardFree,
    thin, multiplier, calculation === 'standard',
  );
}

/** capacityWeight over plain numbers (shared with the pool table). */
export function capacityWeightOf(
  infiniteOrUnknown: boolean,
  thinSupport: boolean,
  thinVirtualFree: number,
  thickVirtualFree: number,
  standardFree: number,
  thin: boolean,
  multiplier: number,
  standard: boolean,
): number {
  if (infiniteOrUnknown) return multiplier > 0 ? -1 : Infinity;
  if (standard && thin && thinSupport) return standardFree;
  return thin ? thinVirtualFree : thickVirtualFree;
}

/**
 * CapacityWeigher.weigh_objects' treatment of infinite weights: each becomes max(finite) + (max − min) × 100
 * (or + 10000 when that offset is 0). Returns null when every weight is infinite (Cinder raises ValueError).
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
