// The hot-path view of the pools: one typed array per figure, indexed like the candidate list, refreshed at each
// report, claim and release. A decision scans these arrays instead of chasing objects (10,000 pools per decision).
import { matchesExtraSpecs, type CompiledSpec } from './extra-specs.ts';
import type { PoolState } from './model.ts';

const FREE_INF = 1;
const TOTAL_INF = 2;
const THIN_SUPPORT = 4;

export class PoolTable {
  readonly pools: readonly PoolState[];
  readonly flags: Uint8Array;
  readonly reservedPercentage: Float64Array;
  readonly total: Float64Array;
  readonly mosr: Float64Array;
  readonly provisioned: Float64Array;
  readonly thinTotalAvailable: Float64Array;
  readonly thinVirtualFree: Float64Array;
  readonly thickVirtualFree: Float64Array;
  readonly standardFree: Float64Array;
  readonly allocated: Float64Array;
  readonly reportedAt: Float64Array;
  /** Availability zones as small integers (see zoneId). */
  readonly zone: Int32Array;
  readonly #zones = new Map<string, number>();
  /**
   * CapabilitiesFilter verdicts per volume type (1 = match), computed once per set of extra specs. Capabilities only
   * change with a report, and every report builds a new table, so the cache needs no other invalidation.
   */
  readonly #capabilityMatches = new Map<string, Uint8Array>();

  constructor(pools: readonly PoolState[]) {
    const n = pools.length;
    this.pools = pools;
    this.flags = new Uint8Array(n);
    this.reservedPercentage = new Float64Array(n);
    this.total = new Float64Array(n);
    this.mosr = new Float64Array(n);
    this.provisioned = new Float64Array(n);
    this.thinTotalAvailable = new Float64Array(n);
    this.thinVirtualFree = new Float64Array(n);
    this.thickVirtualFree = new Float64Array(n);
    this.standardFree = new Float64Array(n);
    this.allocated = new Float64Array(n);
    this.reportedAt = new Float64Array(n);
    this.zone = new Int32Array(n);
    for (let i = 0; i < n; i++) this.update(i);
  }

  /** The zone's number, or −1 when no pool is in it. */
  zoneId(zone: string): number {
    return this.#zones.get(zone) ?? -1;
  }

  /** Copies pool i's current figures (after refreshFigures) into the arrays. */
  update(i: number): void {
    const pool = this.pools[i]!;
    const f = pool.figures;
    this.flags[i] = (f.freeInfiniteOrUnknown ? FREE_INF : 0) | (f.totalInfiniteOrUnknown ? TOTAL_INF : 0) |
      (f.thinSupport ? THIN_SUPPORT : 0);
    this.reservedPercentage[i] = f.reservedPercentage;
    this.total[i] = f.totalNumber;
    this.mosr[i] = f.mosr;
    this.provisioned[i] = f.provisioned;
    this.thinTotalAvailable[i] = f.thinTotalAvailable;
    this.thinVirtualFree[i] = f.thinVirtualFree;
    this.thickVirtualFree[i] = f.thickVirtualFree;
    this.standardFree[i] = f.standardFree;
    this.allocated[i] = pool.allocated;
    this.reportedAt[i] = pool.reportedAt;
    let zone = this.#zones.get(pool.availabilityZone);
    if (zone === undefined) {
      zone = this.#zones.size;
      this.#zones.set(pool.availabilityZone, zone);
    }
    this.zone[i] = zone;
  }

  /** For each pool, whether its capabilities satisfy these extra specs. */
  capabilityMatches(specs: readonly CompiledSpec[]): Uint8Array {
    let key = '';
    for (const spec of specs) key += `${spec.key}\u0001${spec.req}\u0002`;
    let row = this.#capabilityMatches.get(key);
    if (row === undefined) {
      row = new Uint8Array(this.pools.length);
      for (let i = 0; i < row.length; i++) row[i] = matchesExtraSpecs(this.pools[i]!.capabilities, specs) ? 1 : 0;
      if (this.#capabilityMatches.size >= 256) this.#capabilityMatches.clear();
      this.#capabilityMatches.set(key, row);
    }
    return row;
  }

  freeInfiniteOrUnknown(i: number): boolean {
    return (this.flags[i]! & FREE_INF) !== 0;
  }
  totalInfiniteOrUnknown(i: number): boolean {
    return (this.flags[i]! & TOTAL_INF) !== 0;
  }
  thinSupport(i: number): boolean {
    return (this.flags[i]! & THIN_SUPPORT) !== 0;
  }
}
