// The in-memory state of the volumes dialect: backends, their pools, and the volumes Berth placed.
// Pools carry figures precomputed at report/claim time so a decision is a few comparisons per pool.
import { isInfiniteOrUnknown, poolFigures, type Capacity, type PoolFigures } from './capacity.ts';
import type { CompiledSpec } from './extra-specs.ts';
import type { BackendReport } from './schemas.ts';

export interface PoolState {
  /** host#pool_name */
  readonly name: string;
  readonly backend: string;
  readonly poolName: string;
  /** Position in the candidate list (and the pool table). */
  index: number;
  /** The pool's capability dict as CapabilitiesFilter sees it: the reported pool plus backend info. */
  capabilities: Record<string, unknown>;
  /** The pool's reported dict (as stored, allocated_capacity_gb removed). */
  reported: Record<string, unknown>;
  availabilityZone: string;
  reportedAt: number;
  reportSeq: number;

  total: Capacity;
  reportedFree: Capacity;
  /** undefined: not reported, provisioned falls back to allocated. */
  reportedProvisioned: number | undefined;
  reservedPercentage: number;
  thinSupport: boolean;
  thickSupport: boolean;
  /** The effective max_over_subscription_ratio computed at the last report. */
  mosr: number;
  mosrAuto: boolean;

  /** Berth's allocated_capacity_gb: sizes of the volumes it placed here that still exist. */
  allocated: number;
  /** Sizes placed since the last report (Cinder's consume_from_volume until the next report). */
  consumed: number;
  /** The store generation of the pool record: changes with every claim or report. */
  generation: number;

  /** Derived from the above by refreshFigures. */
  free: Capacity;
  provisioned: number;
  figures: PoolFigures;
}

export interface BackendState {
  readonly host: string;
  order: number;
  report: BackendReport;
  reportedAt: number;
  reportSeq: number;
  availabilityZone: string;
  pools: PoolState[];
}

export interface VolumeRecord {
  id: string;
  size: number;
  pool: string;
  thin: boolean;
  created_at: string;
  /** Who claimed it: the token name or JWT subject; null without authentication (or placed before it existed). */
  created_by: string | null;
  /** The pool's report sequence when the volume was placed: placed since the last report iff equal. */
  report_seq: number;
}

/** What a decision is asked, pre-digested once per request. */
export interface VolumeRequest {
  size: number;
  thin: boolean;
  availabilityZone: string | undefined;
  specs: CompiledSpec[];
  /** ctx.now() at the start of the decision (for stale stats). */
  now: number;
}

/** Recomputes free, provisioned and the capacity figures after a report, claim or release. */
export function refreshFigures(pool: PoolState): void {
  pool.provisioned = pool.reportedProvisioned === undefined ? pool.allocated : pool.reportedProvisioned + pool.consumed;
  pool.free = isInfiniteOrUnknown(pool.reportedFree) ? pool.reportedFree : pool.reportedFree - pool.consumed;
  pool.figures = poolFigures({
    total: pool.total,
    free: pool.free,
    provisioned: pool.provisioned,
    reservedPercentage: pool.reservedPercentage,
    thinSupport: pool.thinSupport,
    mosr: pool.mosr,
  });
}
