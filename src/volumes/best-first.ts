// The winner of a plain decision (no explain, no explain_target) without filtering and weighing every pool, for the
// pipeline Cinder configures by default: one weigher, CapacityWeigher with a positive multiplier, and filters that
// are verdict rows (zone, capabilities) plus CapacityFilter.
//
// Why it is the full run's answer: with one weigher and a multiplier m > 0, a pool's total m × (raw − lo) / range
// never decreases with its raw weight, so walking the pools by raw weight (highest first, equal ones by row) the first
// that passes wins: the engine keeps the lowest row among equal totals. Its total is m × (hi − lo) / (hi − lo) = m
// exactly, or 0 when every pool that passed weighs hi (range 0). A lower raw weight rounds to the total m only within
// a rounding error of hi − lo: only then is lo (the lowest raw weight that passed: the walk from the other end)
// needed, and the walk goes on while the total is m. The counts the decision reports (how many passed, how many each
// filter turned away) come without a pass either: per set of verdict rows, how many pools each row stops first (once
// per table), corrected for the pools CapacityFilter may refuse — only those whose capacitySafeSize the request
// exceeds, the head of another order.
// A miss answers null (the full run gives every pool's reason), and so does a request most pools are near the
// capacity for (walking them all costs more than the engine's pass).
import { normalized, type CheckingFilter } from '../pipeline/pipeline.ts';
import { capacitySafeSize, capacityWeight, type OverProvisioningCalculation } from './capacity.ts';
import type { PoolTable, VolumeRequest } from './model.ts';
import type { PoolOrder } from './pool-order.ts';
import type { VolumesPipeline } from './scheduler.ts';

/** What a decision reports when it places: the fields of the engine's Decision the service reads. */
export interface BestDecision {
  candidates: number;
  passed: number;
  chosen: number;
  weight: number;
  rejections(): Map<string, number>;
}

/** Per set of verdict rows: how many pools each row is the first to refuse, and (last) how many pass them all. */
interface RowClass {
  rows: ReadonlyArray<ArrayLike<number> | null>;
  counts: Int32Array;
}

const ROW_CLASSES = 64;

export class BestFirst {
  readonly #pipeline: VolumesPipeline;
  readonly #multiplier: number;
  readonly #calculation: OverProvisioningCalculation;
  #table: PoolTable | undefined;
  #classes: RowClass[] = [];
  // Per request, reused: each filter's row (null: a check or nothing to check), the check and its stage.
  readonly #rows: Array<ArrayLike<number> | null> = [];
  #check: CheckingFilter | null = null;
  #checkStage = -1;
  #counts = new Int32Array(0);

  /** The share of the pools CapacityFilter's walk may cover before the engine's pass is the cheaper way. */
  readonly #walkShare: number;

  private constructor(pipeline: VolumesPipeline, calculation: OverProvisioningCalculation, walkShare: number) {
    this.#pipeline = pipeline;
    this.#walkShare = walkShare;
    this.#multiplier = pipeline.weighers[0]!.multiplier;
    this.#calculation = calculation;
  }

  /** The best-first decider for this pipeline, or null when its weighers or filters are not the ones it covers. */
  static of(pipeline: VolumesPipeline, calculation: OverProvisioningCalculation, walkShare = 0.25): BestFirst | null {
    const weighers = pipeline.weighers;
    if (weighers.length !== 1) return null;
    const weigher = weighers[0]!;
    if (weigher.name !== 'CapacityWeigher' || !(weigher.multiplier > 0)) return null;
    if (!pipeline.filters.every((f) => COVERED_FILTERS.has(f.name))) return null;
    return new BestFirst(pipeline, calculation, walkShare);
  }

  /**
   * The decision `pipeline.decide(table, request, { limit: 1 })` takes, or null: nothing fits, or so many pools are
   * near their capacity for this size that the engine's pass is the cheaper way.
   */
  decide(table: PoolTable, request: VolumeRequest): BestDecision | null {
    const n = table.length;
    if (n === 0) return null;
    this.#bind(table, request);
    const filters = this.#pipeline.filters;
    const m = filters.length;
    const { figures } = table;
    const { thin } = request;
    const calculation = this.#calculation;
    const multiplier = this.#multiplier;
    const names = ORDER_NAMES[thin ? 'thin' : 'thick'][calculation];
    // Highest raw weight first (the keys ascend).
    const weights = table.order(names.weight, (i) => -capacityWeight(figures, i, thin, multiplier, calculation));
    // An infinite or NaN weight is the engine's own business (Cinder's offsets): not walked here.
    if (weights.nonFinite > 0) return null;

    const counts = this.#countsOf(table, m);
    // Nothing passes the rows: a miss.
    if (counts[m] === 0) return null;
    const check = this.#check;
    const size = request.size;
    const { order, key } = weights;
    const top = this.#first(weights, m, check === null ? -Infinity : size);
    if (top < 0) return null;
    if (check !== null) {
      // The pools CapacityFilter may refuse: each one that passed every row before it and that it does refuse
      // moves from the row that would have stopped it (or from "passed") to CapacityFilter.
      const bounds = table.order(names.bound, (i) => capacitySafeSize(figures, i, thin, calculation));
      const near = bounds.countBelow(size);
      // Many pools near or past their capacity for this size: the engine's pass over all of them is cheaper.
      if (near > n * this.#walkShare) return null;
      const stage = this.#checkStage;
      // A thick request takes the thick path on every pool, where a finite bound is the free capacity capacityCode
      // compares, alone: below the size it refuses for sure, with no check to run. Only the −∞ bounds (infinite or
      // unknown figures, the head of the order) need it. A thick request against a thin-provisioned fleet has about
      // a tenth of the pools near (bench: 1,074 of 10,000), and the check of each cost most of its decision.
      const sure = thin ? 0 : near - bounds.countBelow(-Number.MAX_VALUE);
      const checked = near - sure;
      for (let p = 0; p < checked; p++) {
        const i = bounds.order[p]!;
        const rowsOnly = this.#stageOf(i, m, false);
        if (rowsOnly > stage && check.check(i) !== null) {
          counts[rowsOnly]!--;
          counts[stage]!++;
        }
      }
      if (this.#rows.every((row) => row === null)) {
        // No row refuses anything: every pool refused for sure moves from "passed" to CapacityFilter.
        counts[m]! -= sure;
        counts[stage]! += sure;
      } else {
        for (let p = checked; p < near; p++) {
          const rowsOnly = this.#stageOf(bounds.order[p]!, m, false);
          if (rowsOnly > stage) {
            counts[rowsOnly]!--;
            counts[stage]!++;
          }
        }
      }
    }
    const passed = counts[m]!;
    const hi = -key[order[top]!]!;
    // Every pool at the raw weight hi ties, and the order has them by row: the first that passes wins.
    let chosen = order[top]!;
    let atHi = 1;
    let p = top + 1;
    for (; p < n && -key[order[p]!]! === hi; p++) if (this.#stageOf(order[p]!, m, true) === m) atHi++;
    // Every pool that passed weighs hi: range 0, every total 0.
    if (atHi === passed) return this.#decision(n, passed, chosen, 0, counts);
    // Else the winner normalises to (hi − lo) / (hi − lo) = 1 exactly: its total is m. A lower raw weight reaches
    // the same total only within a rounding error of hi − lo (≤ hi − the lowest raw weight); then the exact lo says.
    const below = -key[order[p]!]!;
    if (hi - below <= (hi + key[order[n - 1]!]!) * 2 ** -50) {
      let bottom = n - 1;
      while (this.#stageOf(order[bottom]!, m, true) !== m) bottom--;
      const lo = -key[order[bottom]!]!;
      const range = hi - lo;
      for (; p <= bottom; p++) {
        const i = order[p]!;
        if (0 + multiplier * normalized(-key[i]!, lo, range) !== multiplier) break;
        if (i < chosen && this.#stageOf(i, m, true) === m) chosen = i;
      }
    }
    return this.#decision(n, passed, chosen, multiplier, counts);
  }

  /**
   * The position of the first pool in the weight order that passes every filter, or −1. A pool that is not infinite
   * passes CapacityFilter only if its raw weight covers `size` (the weight is the virtual free capacity the filter
   * compares, for either calculation): below that, only the infinite or unknown pools (raw weight −1) are left.
   */
  #first(weights: PoolOrder, m: number, size: number): number {
    const { order, key } = weights;
    const n = order.length;
    let p = 0;
    for (; p < n && -key[order[p]!]! >= size; p++) if (this.#stageOf(order[p]!, m, true) === m) return p;
    if (p === n || -1 >= size) return -1;
    // The pools at raw weight −1 (key 1).
    for (p = weights.countBelow(1); p < n && key[order[p]!] === 1; p++) if (this.#stageOf(order[p]!, m, true) === m) return p;
    return -1;
  }

  #decision(candidates: number, passed: number, chosen: number, weight: number, counts: Int32Array): BestDecision {
    const filters = this.#pipeline.filters;
    const rejections = new Map<string, number>();
    for (let j = 0; j < filters.length; j++) if (counts[j]! > 0) rejections.set(filters[j]!.name, counts[j]!);
    return { candidates, passed, chosen, weight, rejections: () => rejections };
  }

  /** Prepares every filter for the request: rows, and CapacityFilter's check (the one covered filter that checks). */
  #bind(table: PoolTable, request: VolumeRequest): void {
    const filters = this.#pipeline.filters;
    const rows = this.#rows;
    rows.length = 0;
    this.#check = null;
    this.#checkStage = -1;
    for (let j = 0; j < filters.length; j++) {
      const bound = filters[j]!.prepare(table, request);
      if (bound === null) {
        rows.push(null);
      } else if ('row' in bound) {
        rows.push(bound.row);
      } else {
        this.#check = bound;
        this.#checkStage = j;
        rows.push(null);
      }
    }
  }

  /** The first stage that refuses pool i (m: none): by the rows only, or `exact`ly, with the capacity check. */
  #stageOf(i: number, m: number, exact: boolean): number {
    const rows = this.#rows;
    for (let j = 0; j < m; j++) {
      const row = rows[j];
      if (row != null) {
        if (row[i] !== 0) return j;
      } else if (exact && j === this.#checkStage && this.#check!.check(i) !== null) {
        return j;
      }
    }
    return m;
  }

  /** A copy of the request's row class counts (computed over every pool once per table and set of rows). */
  #countsOf(table: PoolTable, m: number): Int32Array {
    if (this.#table !== table) {
      this.#table = table;
      this.#classes = [];
    }
    const rows = this.#rows;
    let found = this.#classes.find((c) => c.rows.every((row, j) => row === rows[j]));
    if (found === undefined) {
      const counts = new Int32Array(m + 1);
      for (let i = 0; i < table.length; i++) counts[this.#stageOf(i, m, false)]!++;
      if (this.#classes.length >= ROW_CLASSES) this.#classes = [];
      found = { rows: rows.slice(), counts };
      this.#classes.push(found);
    }
    if (this.#counts.length !== m + 1) this.#counts = new Int32Array(m + 1);
    this.#counts.set(found.counts);
    return this.#counts;
  }
}

/** The table's orders this reads, per request type and calculation (CapacityWeigher with a positive multiplier). */
const ORDER_NAMES = {
  thin: {
    cinder: { weight: 'CapacityWeigher thin cinder', bound: 'CapacityFilter thin cinder' },
    standard: { weight: 'CapacityWeigher thin standard', bound: 'CapacityFilter thin standard' },
  },
  thick: {
    cinder: { weight: 'CapacityWeigher thick cinder', bound: 'CapacityFilter thick cinder' },
    standard: { weight: 'CapacityWeigher thick standard', bound: 'CapacityFilter thick standard' },
  },
} as const;

/** The filters whose verdicts this covers: rows per request, and CapacityFilter's check. */
const COVERED_FILTERS = new Set(['AvailabilityZoneFilter', 'CapacityFilter', 'CapabilitiesFilter']);
