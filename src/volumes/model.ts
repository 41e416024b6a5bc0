// The in-memory state of the volumes dialect: backends, their pools, the volumes Berth placed, and the pool table
// every decision reads (the candidate set of the pipeline).
import type { CandidateSet } from '../pipeline/pipeline.ts';
import { CapacityFigures, isInfiniteOrUnknown, type Capacity } from './capacity.ts';
import { specsVerdict, type CompiledSpec } from './extra-specs.ts';
import { PoolOrder } from './pool-order.ts';
import type { BackendReport } from './schemas.ts';

export interface PoolState {
  /** host#pool_name */
  readonly name: string;
  readonly backend: string;
  readonly poolName: string;
  /** Row in the pool table. */
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
  /**
   * The newest store generation of the pool: its record's, or that of the newest volume placed on it (a claim on the
   * embedded store writes its volume alone). Changes with every claim, release or report.
   */
  generation: number;

  /** Derived from the above by PoolTable.refresh (Cinder's consume_from_volume until the next report). */
  free: Capacity;
  provisioned: number;
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

/**
 * Cinder's consume_from_volume: a pool's provisioned and free figures with these allocated and consumed sums
 * (provisioned falls back to allocated when not reported; free shrinks unless infinite/unknown).
 */
export function consumedFigures(pool: PoolState, allocated: number, consumed: number): { provisioned: number; free: Capacity } {
  return { provisioned: consumedProvisioned(pool.reportedProvisioned ?? NaN, allocated, consumed), free: consumedFree(pool, consumed) };
}

/**
 * consumedFigures' provisioned alone, from the reported figure (NaN: none reported): no object, for headroom, which
 * asks after each of many claims.
 */
export function consumedProvisioned(reported: number, allocated: number, consumed: number): number {
  return Number.isNaN(reported) ? allocated : reported + consumed;
}

/** consumedFigures' free alone. */
export function consumedFree(pool: PoolState, consumed: number): Capacity {
  return isInfiniteOrUnknown(pool.reportedFree) ? pool.reportedFree : pool.reportedFree - consumed;
}

/**
 * The pools as the decisions read them: one column per figure, a row per pool (backends in report order, then pools in
 * report order: Cinder's candidate order). Rebuilt at every report; a claim or release refreshes its pool's row.
 */
export class PoolTable implements CandidateSet {
  readonly pools: readonly PoolState[];
  /** The pools' names by row: an answer naming every pool reads one array, not every pool's object. */
  readonly names: readonly string[];
  readonly figures: CapacityFigures;
  readonly allocated: Float64Array;
  readonly reportedAt: Float64Array;
  /** Availability zones as small integers (see zoneId). */
  readonly zone: Int32Array;
  readonly #zones = new Map<string, number>();
  /**
   * CapabilitiesFilter verdicts per set of extra specs (a SpecsVerdict per pool), computed once per set. Capabilities
   * only change with a report, and every report builds a new table, so the cache needs no other invalidation.
   */
  readonly #capabilityRows = new Map<string, CapabilityVerdicts>();
  readonly #zoneRows = new Map<string, Uint8Array>();
  /** Orders of the pools by a figure (best-first decisions), built on first use and kept sorted by refresh. */
  readonly #orders = new Map<string, PoolOrder>();

  /**
   * A table of these pools. Rows of pools that are also in `previous` (the same objects: not re-reported since) are
   * copied from it; the others are computed.
   */
  constructor(pools: readonly PoolState[], previous?: PoolTable) {
    const n = pools.length;
    this.pools = pools;
    this.names = pools.map((pool) => pool.name);
    this.figures = new CapacityFigures(n);
    this.allocated = new Float64Array(n);
    this.reportedAt = new Float64Array(n);
    this.zone = new Int32Array(n);
    for (let i = 0; i < n; i++) {
      const pool = pools[i]!;
      const j = pool.index;
      if (previous !== undefined && j >= 0 && previous.pools[j] === pool) this.#copyRow(i, previous, j);
      else this.refresh(i);
      pool.index = i;
    }
  }

  /** A table of copies of these pools, to claim on without touching them (headroom, simulations). */
  copy(): PoolTable {
    return new PoolTable(this.pools.map((pool) => ({ ...pool })));
  }

  #copyRow(i: number, previous: PoolTable, j: number): void {
    this.figures.copyRow(i, previous.figures, j);
    this.allocated[i] = previous.allocated[j]!;
    this.reportedAt[i] = previous.reportedAt[j]!;
    this.zone[i] = this.#zoneNumber(this.pools[i]!.availabilityZone);
  }

  #zoneNumber(name: string): number {
    let zone = this.#zones.get(name);
    if (zone === undefined) {
      zone = this.#zones.size;
      this.#zones.set(name, zone);
    }
    return zone;
  }

  get length(): number {
    return this.pools.length;
  }

  /**
   * After a report, claim or release of pool i: free and provisioned as Cinder's consume_from_volume leaves them
   * (provisioned falls back to allocated when not reported; free shrinks unless infinite/unknown), then its row.
   */
  refresh(i: number): void {
    const pool = this.pools[i]!;
    const figures = consumedFigures(pool, pool.allocated, pool.consumed);
    pool.provisioned = figures.provisioned;
    pool.free = figures.free;
    this.figures.set(i, pool);
    this.allocated[i] = pool.allocated;
    this.reportedAt[i] = pool.reportedAt;
    this.zone[i] = this.#zoneNumber(pool.availabilityZone);
    for (const order of this.#orders.values()) order.update(i);
  }

  /** The pools ordered by keyOf (named, so each order is built once per table); claims keep it sorted. */
  order(name: string, keyOf: (i: number) => number): PoolOrder {
    let order = this.#orders.get(name);
    if (order === undefined) {
      order = new PoolOrder(this.pools.length, keyOf);
      this.#orders.set(name, order);
    }
    return order;
  }

  /** Per pool: 0 when it is in this availability zone, 1 when not. Cached per zone until the next report. */
  zoneRow(zone: string): Uint8Array {
    let row = this.#zoneRows.get(zone);
    if (row === undefined) {
      const id = this.#zones.get(zone) ?? -1;
      row = new Uint8Array(this.pools.length);
      for (let i = 0; i < row.length; i++) row[i] = this.zone[i] === id ? 0 : 1;
      if (this.#zoneRows.size >= 256) this.#zoneRows.clear();
      this.#zoneRows.set(zone, row);
    }
    return row;
  }

  /** For each pool, how its capabilities meet these extra specs (a SpecsVerdict). */
  capabilityRow(specs: readonly CompiledSpec[]): Uint8Array {
    return this.capabilityVerdicts(specs).row;
  }

  /** The verdicts of these extra specs on every pool, with the sentences built for them so far. */
  capabilityVerdicts(specs: readonly CompiledSpec[]): CapabilityVerdicts {
    let key = '';
    for (const spec of specs) key += `${spec.key}\u0001${spec.req}\u0002`;
    let verdicts = this.#capabilityRows.get(key);
    if (verdicts === undefined) {
      const row = new Uint8Array(this.pools.length);
      for (let i = 0; i < row.length; i++) row[i] = specsVerdict(this.pools[i]!.capabilities, specs);
      verdicts = new CapabilityVerdicts(row);
      if (this.#capabilityRows.size >= 256) this.#capabilityRows.clear();
      this.#capabilityRows.set(key, verdicts);
    }
    return verdicts;
  }
}

/**
 * One set of extra specs' verdicts on every pool (a SpecsVerdict per pool), and the sentences built for the pools it
 * rejects, each built once per table (a trace or a miss names every rejected pool) and each distinct text kept once.
 */
export class CapabilityVerdicts {
  readonly row: Uint8Array;
  /** Per pool: the index of its sentence, −1 until built. */
  readonly #sentenceOf: Int32Array;
  readonly #sentences: string[] = [];
  readonly #ids = new Map<string, number>();

  constructor(row: Uint8Array) {
    this.row = row;
    this.#sentenceOf = new Int32Array(row.length).fill(-1);
  }

  /** Pool i's sentence: build(i) the first time. */
  sentence(i: number, build: (i: number) => string): string {
    const known = this.#sentenceOf[i]!;
    if (known >= 0) return this.#sentences[known]!;
    const text = build(i);
    let id = this.#ids.get(text);
    if (id === undefined) {
      id = this.#sentences.push(text) - 1;
      this.#ids.set(text, id);
    }
    this.#sentenceOf[i] = id;
    return this.#sentences[id]!;
  }
}
