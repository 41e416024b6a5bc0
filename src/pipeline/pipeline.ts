// The decision engine every dialect decides through: filters → (tiers) → weighers → normalise → select.
// Pure: no I/O, no clock, no framework, no dialect. Shaped like kube-scheduler's framework (a per-cycle prepare step,
// then cheap per-candidate checks), Cinder's handlers (filters in order, stop at zero, min–max normalisation,
// multipliers, stable order) and Nomad's AllocMetric (per-filter counts always, reasons on demand).
//
// Candidates are addressed by index into a candidate set the dialect owns (typically column arrays, so a check reads
// a few numbers and allocates nothing). Filters say *why not* with a stable code; the sentence with the numbers is
// only built when someone reads it (a trace, or the reasons of a miss), and it is built from the same run: every
// rejected candidate is recorded with its stage and code as the filters run.
//
// How each dialect maps onto it:
// - volumes (Cinder): the set is the pool table; filters AvailabilityZone/Capacity/Capabilities(/StaleStats);
//   weighers CapacityWeigher (which rejects every pool when every weight is infinite and its multiplier ≤ 0: Cinder's
//   ValueError) and AllocatedCapacityWeigher; `limit: 1` on the hot path, the whole ranking with `trace`.
// - placement (Placement + Nova): a pre-merge stage over each group's provider candidates and a post-merge stage over
//   the merged allocation candidates, each a Pipeline whose filters are named (GroupPolicyIsolate, SameSubtree,
//   MergedCapacity, …) so that `explain` names them; ranking weighers per requested resource class normalised like
//   Nova's weighers (min–max, optional fixed `minval`/`maxval`); `limit` keeps the best N without a full sort;
//   `tieBreak` orders equal weights by root provider uuid; `random` is randomize_allocation_candidates (a random
//   sample of `limit`, not ranked).
// - replicas (Longhorn): the set is the disks; node and disk checks are filters (their codes are Longhorn's reason
//   keys); `tiers` ranks each disk by its node's tier (new node in a new zone, new node, …; free disk before a disk
//   holding a replica under soft disk anti-affinity) and keeps only the best tier present; `selector` is the balance
//   score selection over that tier, in place of weighers.
// - headroom ("how many more identical requests fit"): decide with `limit: 1`, apply the claim to a copy of the set,
//   repeat; prepare is per request and the workspace is reused, so each round costs one scan.

/** A stable reason constant, e.g. 'insufficient_free': what clients, metrics and tests branch on. */
export type Code = string;

/** The candidates of one decision: anything with a length, addressed by index 0 … length − 1. */
export interface CandidateSet {
  readonly length: number;
}

/**
 * A filter bound to one request's prepared state: a check per candidate, or a row of verdicts computed for the
 * request (or cached across requests, e.g. per set of extra specs) that the engine reads without a call.
 */
export type BoundFilter = CheckingFilter | VerdictRow;

export interface CheckingFilter {
  /** null when candidate i passes, else why not. Runs per candidate: must not allocate or format. */
  check(i: number): Code | null;
  /** The sentence with the numbers for a rejection check(i) returned; only built for a trace or a miss. */
  reason(i: number, code: Code): string;
}

export interface VerdictRow {
  /** Per candidate index: 0 passes, v > 0 is rejected with codes[v]. */
  row: ArrayLike<number>;
  codes: readonly Code[];
  reason(i: number, code: Code): string;
}

export interface Filter<S extends CandidateSet, R> {
  readonly name: string;
  /**
   * Once per request, before the first check: precompute what every check reads (a capability row for the request's
   * extra specs, a zone id, parsed selectors). null when this request cannot be rejected by the filter (nothing
   * requested): the candidates pass without a check, and the trace still lists the filter.
   */
  prepare(set: S, request: R): BoundFilter | null;
}

/** A weigher bound to one request. */
export interface BoundWeigher {
  /**
   * Writes the raw weight of candidates at[0 … count) into out[0 … count) (it may rewrite them relative to each other,
   * as Cinder's CapacityWeigher does with infinite weights). Returns null, or a code when these candidates cannot be
   * weighed at all: then every one of them is rejected under the weigher's name (Cinder would raise).
   */
  weigh(at: Int32Array, count: number, out: Float64Array): Code | null;
  /** The sentence for a code weigh() returned. */
  reason?(i: number, code: Code): string;
}

export interface Weigher<S extends CandidateSet, R> {
  readonly name: string;
  /** Σ multiplier × normalised weight; negative stacks instead of spreading. */
  readonly multiplier: number;
  /** Fixed normalisation bounds (Nova's minval/maxval); by default the weighed candidates' own minimum and maximum. */
  readonly minval?: number;
  readonly maxval?: number;
  prepare(set: S, request: R): BoundWeigher;
}

/** Preference classes before weighing: only the candidates in the best (lowest) tier present are weighed and chosen. */
export interface Tiers<S extends CandidateSet, R> {
  readonly name: string;
  prepare(set: S, request: R): (i: number) => number;
}

/** A selection that replaces weighing (Longhorn's balance score): returns the position in at[0 … count) or −1. */
export interface Selector<S extends CandidateSet, R> {
  readonly name: string;
  prepare(set: S, request: R): (at: Int32Array, count: number) => number;
}

export interface PipelineSpec<S extends CandidateSet, R> {
  filters: ReadonlyArray<Filter<S, R>>;
  weighers?: ReadonlyArray<Weigher<S, R>>;
  tiers?: Tiers<S, R>;
  selector?: Selector<S, R>;
}

export interface DecideOptions {
  /** Build the trace: each stage's verdicts with sentences, each ranked candidate's raw and normalised weights. */
  trace?: boolean;
  /**
   * How many of the best to rank (top-N selection, not a full sort); default all. 1 finds the winner in one pass.
   * 0 decides feasibility only: filters run, nothing is weighed or chosen (`passed` says how many fit).
   */
  limit?: number;
  /** Start from these candidate indices (in this order) instead of the whole set: kube's PreFilter narrowing. */
  among?: ArrayLike<number>;
  /** A random sample instead of a ranking (Fisher–Yates with this source, then the first `limit`); no weighing. */
  random?: () => number;
  /** Orders candidates of equal weight (by index); default their order in the set, as Cinder's stable sort. */
  tieBreak?: (a: number, b: number) => number;
  /**
   * tieBreak as a number per candidate index, lowest first (read in place of calling tieBreak: a precomputed order,
   * for large sets with many ties).
   */
  tieOrder?: ArrayLike<number>;
  /**
   * Where `ranked` is written: an array of `n` the caller owns for as long as it reads the decision (scratch reused
   * from one search to the next); default a new one.
   */
  rankedInto?: (n: number) => Int32Array;
}

export type StageKind = 'filter' | 'tiers' | 'weigher';

/** What one stage did. Filters appear once they run (the engine stops once no candidate is left). */
export interface StageRecord {
  readonly name: string;
  readonly kind: StageKind;
  readonly in: number;
  readonly out: number;
}

/** A candidate turned away, by the first stage that rejected it. */
export interface Rejected {
  readonly index: number;
  readonly stage: string;
  readonly code: Code;
}

export interface TraceStage extends StageRecord {
  rejected: Array<{ index: number; code: Code; reason: string }>;
}

export interface WeigherScore {
  raw: number;
  normalized: number;
}

export interface TraceWeighed {
  index: number;
  weight: number;
  weighers: Record<string, WeigherScore>;
}

export interface Trace {
  /** Every stage that ran, in order (a weigher appears here only when it rejected). */
  filters: TraceStage[];
  /** The ranked candidates, best first. */
  weighed: TraceWeighed[];
}

/** How a caller shapes a trace's entries (Decision.traceAs): one value per rejected and per ranked candidate. */
export interface TraceShape<X, W> {
  rejected(index: number, code: Code, reason: string, stage: string): X;
  weighed(index: number, weight: number, weighers: Record<string, WeigherScore>): W;
}

/** A trace with the caller's entries: the stages as Trace lists them, then the ranked candidates, best first. */
export interface ShapedTrace<X, W> {
  filters: Array<StageRecord & { rejected: X[] }>;
  weighed: W[];
}

export interface Decision {
  /** Candidates considered. */
  readonly candidates: number;
  /** Candidates left after every filter, tier and weigher stage: the ones ranked (before `limit`). */
  readonly passed: number;
  /** The best candidate's index, or −1. */
  readonly chosen: number;
  /** The chosen candidate's total weight (0 when none, or not weighed). */
  readonly weight: number;
  /** The best first, at most `limit` (indices), and their total weights. */
  readonly ranked: Int32Array;
  readonly weights: Float64Array;
  readonly stages: readonly StageRecord[];
  readonly trace: Trace | null;
  /** Rejections per stage name (only stages that rejected), for metrics. */
  rejections(): Map<string, number>;
  /** Every rejected candidate, stage by stage in candidate order. Valid until the pipeline's next decision. */
  rejected(): Rejected[];
  /** The sentence for a rejection. Valid until the pipeline's next decision. */
  reason(r: Rejected): string;
  /**
   * What `trace` holds, with the caller's entries built directly (a dialect's trace names candidates its own way:
   * no intermediate objects per candidate), for a decision taken with or without `trace`. Valid until the
   * pipeline's next decision.
   */
  traceAs<X, W>(shape: TraceShape<X, W>): ShapedTrace<X, W>;
}

// ---------------------------------------------------------------- normalisation

/**
 * Cinder's and Nova's `normalize` (base_weight.py): (w − min) / (max − min), every weight 0 when max = min.
 * `range` is max − min. The one place this formula lives.
 */
export function normalized(w: number, lo: number, range: number): number {
  return range === 0 ? 0 : (w - lo) / range;
}

/** The min–max bounds of values[from … from + count), or the fixed ones: [lo, range]. */
function bounds(values: ArrayLike<number>, from: number, count: number, minval?: number, maxval?: number): [number, number] {
  let lo = minval ?? values[from]!;
  let hi = maxval ?? values[from]!;
  if (minval === undefined || maxval === undefined) {
    for (let k = from + 1; k < from + count; k++) {
      const v = values[k]!;
      if (minval === undefined && v < lo) lo = v;
      if (maxval === undefined && v > hi) hi = v;
    }
  }
  return [lo, lo === hi ? 0 : hi - lo];
}

/**
 * The bounds normalisation reads, kept over a changing multiset of weights (headroom follows many claims, each
 * changing one candidate's weights): the least value, the greatest finite one, the count of infinite ones, and how
 * many values sit at each extreme. Removing a value that is not the last at its extreme leaves them exact; when the
 * last one went, `stale` says the bounds must be counted again (clear, then add every value).
 */
export class Extremes {
  lo = Infinity;
  hi = -Infinity;
  infinite = 0;
  #atLo = 0;
  #atHi = 0;

  add(v: number): void {
    if (v === Infinity) this.infinite++;
    if (v < this.lo) {
      this.lo = v;
      this.#atLo = 1;
    } else if (v === this.lo) {
      this.#atLo++;
    }
    if (v === Infinity) return;
    if (v > this.hi) {
      this.hi = v;
      this.#atHi = 1;
    } else if (v === this.hi) {
      this.#atHi++;
    }
  }

  remove(v: number): void {
    if (v === Infinity) this.infinite--;
    if (v === this.lo) this.#atLo--;
    if (v === this.hi) this.#atHi--;
  }

  /** A bound's last value went (or nothing was added): lo or hi is no longer exact (hi has no value to hold only
   * when every value is infinite). */
  get stale(): boolean {
    return this.#atLo === 0 || (this.#atHi === 0 && this.lo !== Infinity);
  }

  clear(): void {
    this.lo = Infinity;
    this.hi = -Infinity;
    this.infinite = 0;
    this.#atLo = 0;
    this.#atHi = 0;
  }
}

/** Normalises a whole list (minval/maxval default to the list's own extremes). */
export function normalize(weights: readonly number[], minval?: number, maxval?: number): number[] {
  if (weights.length === 0) return [];
  const [lo, range] = bounds(weights, 0, weights.length, minval, maxval);
  return weights.map((w) => normalized(w, lo, range));
}

// ---------------------------------------------------------------- the engine

/** Buffers reused from one decision to the next (decisions are synchronous). */
class Workspace {
  epoch = 0;
  at = new Int32Array(0);
  out = new Int32Array(0);
  codes: Code[] = [];
  raw = new Float64Array(0);
  total = new Float64Array(0);
  order = new Int32Array(0);
  lo = new Float64Array(0);
  range = new Float64Array(0);
  /** For the candidate-major filter runs: the bound checks, each rejection's stage, a second rejection buffer. */
  readonly segment: Array<CheckingFilter | null> = [];
  stageOf = new Int32Array(0);
  spareOut = new Int32Array(0);
  spareCodes: Code[] = [];
  stageStart = new Int32Array(0);
  #perStage = new Int32Array(0);
  /** For the full ranking's radix sort (sortFully): each position's key as two 32-bit digits, a second order, counts. */
  keyHigh = new Uint32Array(0);
  keyLow = new Uint32Array(0);
  spareOrder = new Int32Array(0);
  /** For the merge sort of a small set (at most MERGE_SORT_MAX positions): each position's tie order. */
  readonly tie = new Float64Array(MERGE_SORT_MAX);
  readonly digitCounts = new Int32Array(1 << DIGIT_BITS);

  /** Zeroed rejection counts for `stages` stages. */
  perStage(stages: number): Int32Array {
    if (this.#perStage.length < stages) {
      this.#perStage = new Int32Array(stages);
      this.stageStart = new Int32Array(stages);
    }
    this.#perStage.fill(0, 0, stages);
    return this.#perStage;
  }

  ensure(n: number, weighers: number): void {
    if (this.lo.length < weighers) {
      this.lo = new Float64Array(weighers);
      this.range = new Float64Array(weighers);
    }
    if (this.at.length < n) {
      const size = Math.max(16, n * 2);
      this.at = new Int32Array(size);
      this.out = new Int32Array(size);
      this.total = new Float64Array(size);
      this.order = new Int32Array(size);
      this.stageOf = new Int32Array(size);
      this.spareOut = new Int32Array(size);
      this.keyHigh = new Uint32Array(size);
      this.keyLow = new Uint32Array(size);
      this.spareOrder = new Int32Array(size);
    }
    const need = n * Math.max(1, weighers);
    if (this.raw.length < need) this.raw = new Float64Array(need * 2);
  }
}

interface StageRun extends StageRecord {
  /** The rejections of this stage in the workspace's out/codes: [from, to). */
  from: number;
  to: number;
  /** Who gives the sentences (the bound filter or weigher); null when the stage rejected nothing. */
  source: { reason?(i: number, code: Code): string } | null;
}

const EMPTY_INT = new Int32Array(0);
const EMPTY_FLOAT = new Float64Array(0);
/** radixSort's digit: 11 bits, so six passes cover a 64-bit key. */
const DIGIT_BITS = 11;

export class Pipeline<S extends CandidateSet, R> {
  readonly filters: ReadonlyArray<Filter<S, R>>;
  readonly weighers: ReadonlyArray<Weigher<S, R>>;
  readonly tiers: Tiers<S, R> | undefined;
  readonly selector: Selector<S, R> | undefined;
  readonly #ws = new Workspace();

  constructor(spec: PipelineSpec<S, R>) {
    this.filters = spec.filters;
    this.weighers = spec.weighers ?? [];
    this.tiers = spec.tiers;
    this.selector = spec.selector;
    const names = [...this.filters, ...this.weighers].map((s) => s.name);
    const duplicate = names.find((name, i) => names.indexOf(name) !== i);
    if (duplicate !== undefined) throw new Error(`a pipeline names each stage once: ${duplicate} appears twice`);
  }

  decide(set: S, request: R, options: DecideOptions = {}): Decision {
    const ws = this.#ws;
    const epoch = ++ws.epoch;
    const among = options.among;
    const n = among ? among.length : set.length;
    const nw = this.weighers.length;
    ws.ensure(n, nw);
    const at = ws.at;
    if (among) for (let k = 0; k < n; k++) at[k] = among[k]!;
    else for (let k = 0; k < n; k++) at[k] = k;

    const run: Run = { ws, count: n, rejected: 0, kept: 0, stages: [], weighed: false };
    this.#filter(run, set, request);
    if (run.count > 0 && this.tiers) keepBestTier(run, this.tiers.prepare(set, request), this.tiers.name);
    const limit = options.limit ?? Infinity;
    if (run.count > 0 && limit > 0 && !options.random && !this.selector && nw > 0) this.#weigh(run, set, request);

    // Selection over positions 0 … count − 1 of `at`.
    let positions: Int32Array = EMPTY_INT;
    const count = run.count;
    if (count > 0 && limit > 0) {
      const keep = Math.min(limit, count);
      if (options.random) {
        shuffle(at, count, options.random);
        positions = identity(ws.order, keep);
      } else if (this.selector) {
        const pos = this.selector.prepare(set, request)(at, count);
        positions = pos >= 0 ? Int32Array.of(pos) : EMPTY_INT;
      } else {
        // Without weighers every candidate weighs 0: the order is the tie order (the set's, unless tieBreak says).
        if (!run.weighed && !options.tieBreak && !options.tieOrder) {
          positions = identity(ws.order, keep);
        } else {
          if (!run.weighed) ws.total.fill(0, 0, count);
          positions = rank(ws, count, keep, options.tieBreak, options.tieOrder);
        }
      }
    }

    const ranked = options.rankedInto ? options.rankedInto(positions.length) : new Int32Array(positions.length);
    for (let k = 0; k < positions.length; k++) ranked[k] = at[positions[k]!]!;
    // Unweighed, every weight is 0: the Outcome makes them only if read. A filters-only decision over 50,000
    // survivors (Placement's single-provider step at 100,000 providers) otherwise made 400 KB of zeros a request,
    // which V8 counts as external memory and answers with scavenges ("external memory pressure").
    let weights: Float64Array | null = null;
    if (run.weighed) {
      weights = positions.length > 0 ? new Float64Array(positions.length) : EMPTY_FLOAT;
      for (let k = 0; k < positions.length; k++) weights[k] = ws.total[positions[k]!]!;
    }
    const outcome = new Outcome(ws, epoch, run.stages, n, count, ranked, weights, positions, run.weighed ? this.weighers : []);
    if (options.trace) outcome.trace = outcome.traceAs(TRACE_SHAPE);
    return outcome;
  }

  /**
   * One candidate's row of a trace without ranking the others (explain_target): its raw and normalised weights and
   * total weight among `among` (the candidates that passed every filter, `index` one of them), and its rank (1 is
   * chosen). null when a weigher cannot weigh these candidates (it rejects them all). Reuses the workspace: earlier
   * decisions' rejections can no longer be read.
   */
  weightsOf(set: S, request: R, among: ArrayLike<number>, index: number): (TraceWeighed & { rank: number }) | null {
    const ws = this.#ws;
    ++ws.epoch;
    const n = among.length;
    ws.ensure(n, this.weighers.length);
    let position = -1;
    for (let k = 0; k < n; k++) {
      ws.at[k] = among[k]!;
      if (among[k] === index) position = k;
    }
    if (position < 0) throw new Error('weightsOf: the candidate is not among the given ones');
    const run: Run = { ws, count: n, rejected: 0, kept: 0, stages: [], weighed: false };
    if (this.weighers.length > 0) {
      this.#weigh(run, set, request);
      if (run.count === 0) return null;
    } else {
      ws.total.fill(0, 0, n);
    }
    const { raw, lo, range, total } = ws;
    const weighers: Record<string, WeigherScore> = {};
    this.weighers.forEach((weigher, w) => {
      const r = raw[w * n + position]!;
      weighers[weigher.name] = { raw: r, normalized: normalized(r, lo[w]!, range[w]!) };
    });
    // Better candidates come first: a higher total, or an equal one earlier in the order (the stable ranking).
    let rank = 1;
    for (let k = 0; k < n; k++) if (total[k]! > total[position]! || (total[k] === total[position] && k < position)) rank++;
    return { index, weight: total[position]!, weighers, rank };
  }

  /**
   * Filters in order, each over the survivors of the previous one, compacting `at` in place (order is kept) and
   * recording every rejection. Like Cinder's handler, stop once nothing is left: later filters have nothing to say.
   * Consecutive checking filters run candidate-major (every check of one candidate, then the next): one visit per
   * candidate keeps its data in cache, which a pass per filter over a large set does not. The verdicts, counts and
   * rejections are the ones filter-by-filter passes give.
   */
  #filter(run: Run, set: S, request: R): void {
    const filters = this.filters;
    let next: BoundFilter | null | undefined;
    for (let j = 0; j < filters.length && run.count > 0; ) {
      const bound = next !== undefined ? next : filters[j]!.prepare(set, request);
      next = undefined;
      if (bound === null || 'row' in bound) {
        this.#verdicts(run, filters[j]!.name, bound);
        j++;
      } else {
        const ran = this.#checks(run, set, request, j, bound);
        j += ran.stages;
        next = ran.next;
      }
    }
  }

  /** One verdict-row filter (or one with nothing to check) over the survivors. */
  #verdicts(run: Run, name: string, bound: VerdictRow | null): void {
    const { at, out, codes } = run.ws;
    const before = run.count;
    const from = run.rejected;
    let rejected = from;
    if (bound !== null) {
      // Verdicts precomputed for the request: no call per candidate.
      const { row, codes: verdictCodes } = bound;
      let kept = 0;
      for (let k = 0; k < before; k++) {
        const i = at[k]!;
        const v = row[i]!;
        if (v === 0) {
          at[kept++] = i;
        } else {
          out[rejected] = i;
          codes[rejected++] = verdictCodes[v]!;
        }
      }
      run.count = kept;
      run.rejected = rejected;
    }
    run.stages.push({ name, kind: 'filter', in: before, out: run.count, from, to: rejected, source: bound });
  }

  /**
   * The checking filters from `first` on, candidate-major: each candidate goes through the checks until one refuses
   * it. The filter after the last check is prepared when the first candidate reaches it (so, as with passes, only if
   * one does): a checking one (or one with nothing to check) joins the run, a verdict row ends it and is returned
   * as `next` for its own pass. A check with no checking filter after it runs as a tight loop of its own (volumes'
   * row, check, row, check). The rejections are then laid out stage by stage, each in candidate order, and the
   * stages recorded up to the first that left nothing, exactly as a pass per filter would.
   */
  #checks(run: Run, set: S, request: R, first: number, bound: CheckingFilter): { stages: number; next: VerdictRow | undefined } {
    const ws = run.ws;
    const { at, out, codes, stageOf } = ws;
    const checks = ws.segment;
    checks.length = 0;
    checks.push(bound);
    const before = run.count;
    const from = run.rejected;
    let kept = 0;
    let next: VerdictRow | undefined;
    // Up to the first candidate it passes, this filter alone: what follows it is prepared only once one does.
    run.kept = 0;
    let k = checkPass(run, bound, 0, before, true);
    let rejected = run.rejected;
    // The next filter that checks anything (one with nothing to check passes everyone: the candidate reaches the
    // one after it too).
    let following: BoundFilter | null | undefined;
    if (k < before) {
      for (let j = first + 1; j < this.filters.length; j++) {
        following = this.filters[j]!.prepare(set, request);
        if (following !== null) break;
        checks.push(null);
      }
    }
    const tight = following === undefined || following === null || 'row' in following;
    if (following === undefined || following === null || 'row' in following) {
      // Nothing to run with it: a tight loop over the rest, the verdict row (if any) in a pass of its own.
      next = following ?? undefined;
      checkPass(run, bound, k, before, false);
      kept = run.kept;
      rejected = run.rejected;
    } else {
      stageOf.fill(0, from, rejected);
      checks.push(following);
      const open = this.filters.length - first;
      for (; k < before; k++) {
        const i = at[k]!;
        let code: Code | null = null;
        let s = 0;
        for (;; s++) {
          if (s === checks.length) {
            if (s === open || next !== undefined) break;
            const b = this.filters[first + s]!.prepare(set, request);
            if (b !== null && 'row' in b) {
              next = b;
              break;
            }
            checks.push(b);
          }
          const check = checks[s]!;
          if (check !== null && (code = check.check(i)) !== null) break;
        }
        if (code === null) {
          at[kept++] = i;
        } else {
          stageOf[rejected] = s;
          out[rejected] = i;
          codes[rejected++] = code;
        }
      }
    }
    const m = checks.length;
    const perStage = ws.perStage(m);
    if (tight) perStage[0] = rejected - from;
    else for (let r = from; r < rejected; r++) perStage[stageOf[r]!]!++;
    if (!tight && rejected > from) {
      // Counting sort by stage (stable: candidate order within a stage).
      const { stageStart: start, spareOut, spareCodes } = ws;
      let offset = from;
      for (let s = 0; s < m; s++) {
        start[s] = offset;
        offset += perStage[s]!;
      }
      for (let r = from; r < rejected; r++) {
        const slot = start[stageOf[r]!]!++;
        spareOut[slot] = out[r]!;
        spareCodes[slot] = codes[r]!;
      }
      for (let r = from; r < rejected; r++) {
        out[r] = spareOut[r]!;
        codes[r] = spareCodes[r]!;
      }
    }
    let count = before;
    let to = from;
    for (let s = 0; s < m; s++) {
      const n = perStage[s]!;
      run.stages.push({ name: this.filters[first + s]!.name, kind: 'filter', in: count, out: count - n, from: to, to: to + n, source: checks[s] ?? null });
      count -= n;
      to += n;
    }
    run.count = kept;
    run.rejected = rejected;
    return { stages: m, next };
  }

  /** Raw weights per weigher, then Σ multiplier × normalised into ws.total; a weigher that cannot weigh rejects all. */
  #weigh(run: Run, set: S, request: R): void {
    const { ws } = run;
    const { at, raw, total, lo, range } = ws;
    const count = run.count;
    const weighers = this.weighers;
    for (let w = 0; w < weighers.length; w++) {
      const weigher = weighers[w]!;
      const bound = weigher.prepare(set, request);
      const code = bound.weigh(at, count, raw.subarray(w * count, (w + 1) * count));
      if (code !== null) {
        const from = run.rejected;
        for (let k = 0; k < count; k++) {
          ws.out[run.rejected] = at[k]!;
          ws.codes[run.rejected++] = code;
        }
        run.stages.push({ name: weigher.name, kind: 'weigher', in: count, out: 0, from, to: run.rejected, source: bound });
        run.count = 0;
        return;
      }
    }
    total.fill(0, 0, count);
    for (let w = 0; w < weighers.length; w++) {
      const weigher = weighers[w]!;
      const base = w * count;
      const [l, r] = bounds(raw, base, count, weigher.minval, weigher.maxval);
      lo[w] = l;
      range[w] = r;
      const m = weigher.multiplier;
      for (let k = 0; k < count; k++) total[k]! += m * normalized(raw[base + k]!, l, r);
    }
    run.weighed = true;
  }
}

/** One decision in progress: the survivors are ws.at[0 … count), the rejections ws.out/codes[0 … rejected). */
interface Run {
  readonly ws: Workspace;
  count: number;
  rejected: number;
  /** Survivors so far of the filter running (checkPass). */
  kept: number;
  readonly stages: StageRun[];
  /** ws.total holds the candidates' total weights. */
  weighed: boolean;
}

/**
 * One check over at[k … end): survivors compacted to at[run.kept …], rejections appended at run.rejected. Small on
 * purpose, so that the engine inlines the dialect's check into it. With `untilPass`, stops at the first candidate
 * the check passes (returned, not yet kept); else returns end.
 */
function checkPass(run: Run, bound: CheckingFilter, k: number, end: number, untilPass: boolean): number {
  const { at, out, codes } = run.ws;
  let kept = run.kept;
  let rejected = run.rejected;
  for (; k < end; k++) {
    const i = at[k]!;
    const code = bound.check(i);
    if (code === null) {
      if (untilPass) break;
      at[kept++] = i;
    } else {
      out[rejected] = i;
      codes[rejected++] = code;
    }
  }
  run.kept = kept;
  run.rejected = rejected;
  return k;
}

/** Keeps only the candidates of the best (lowest) tier present; the others are not rejected, only not preferred. */
function keepBestTier(run: Run, tierOf: (i: number) => number, name: string): void {
  const at = run.ws.at;
  const before = run.count;
  let best = Infinity;
  for (let k = 0; k < before; k++) best = Math.min(best, tierOf(at[k]!));
  let kept = 0;
  for (let k = 0; k < before; k++) if (tierOf(at[k]!) === best) at[kept++] = at[k]!;
  run.count = kept;
  run.stages.push({ name, kind: 'tiers', in: before, out: kept, from: run.rejected, to: run.rejected, source: null });
}

/** Fisher–Yates, from the end (as Placement's and Berth's random samples always were). */
function shuffle(at: Int32Array, count: number, random: () => number): void {
  for (let k = count - 1; k > 0; k--) {
    const j = Math.floor(random() * (k + 1));
    const x = at[k]!;
    at[k] = at[j]!;
    at[j] = x;
  }
}

class Outcome implements Decision {
  readonly #ws: Workspace;
  readonly #epoch: number;
  readonly #stages: readonly StageRun[];
  readonly candidates: number;
  readonly passed: number;
  readonly chosen: number;
  readonly weight: number;
  readonly ranked: Int32Array;
  /** The ranked candidates' total weights; null until read when nothing was weighed (all 0). */
  #weights: Float64Array | null;
  trace: Trace | null = null;
  /** The ranked candidates' positions among the passed ones (their raw weights' place in the workspace). */
  readonly #positions: Int32Array;
  /** The weighers whose raw weights the workspace holds (none when nothing was weighed). */
  readonly #weighers: ReadonlyArray<{ readonly name: string }>;

  constructor(ws: Workspace, epoch: number, stages: readonly StageRun[], candidates: number, passed: number,
    ranked: Int32Array, weights: Float64Array | null, positions: Int32Array, weighers: ReadonlyArray<{ readonly name: string }>) {
    this.#ws = ws;
    this.#epoch = epoch;
    this.#stages = stages;
    this.candidates = candidates;
    this.passed = passed;
    this.ranked = ranked;
    this.#weights = weights;
    this.chosen = ranked.length > 0 ? ranked[0]! : -1;
    this.weight = weights !== null && weights.length > 0 ? weights[0]! : 0;
    this.#positions = positions;
    this.#weighers = weighers;
  }

  get weights(): Float64Array {
    return (this.#weights ??= this.ranked.length > 0 ? new Float64Array(this.ranked.length) : EMPTY_FLOAT);
  }

  get stages(): readonly StageRecord[] {
    return this.#stages;
  }

  rejections(): Map<string, number> {
    const counts = new Map<string, number>();
    for (const s of this.#stages) if (s.to > s.from) counts.set(s.name, (counts.get(s.name) ?? 0) + s.to - s.from);
    return counts;
  }

  rejected(): Rejected[] {
    const { out, codes } = this.#current();
    const list: Rejected[] = [];
    for (const s of this.#stages) for (let r = s.from; r < s.to; r++) list.push({ index: out[r]!, stage: s.name, code: codes[r]! });
    return list;
  }

  reason(r: Rejected): string {
    this.#current();
    return sentence(this.#stages.find((s) => s.name === r.stage)?.source ?? null, r.index, r.code);
  }

  traceAs<X, W>(shape: TraceShape<X, W>): ShapedTrace<X, W> {
    const { out, codes, raw, lo, range } = this.#current();
    const filters = this.#stages.map((s) => {
      const rejected: X[] = [];
      for (let r = s.from; r < s.to; r++) {
        const index = out[r]!;
        const code = codes[r]!;
        rejected.push(shape.rejected(index, code, sentence(s.source, index, code), s.name));
      }
      return { name: s.name, kind: s.kind, in: s.in, out: s.out, rejected };
    });
    const positions = this.#positions;
    const weighers = this.#weighers;
    const count = this.passed;
    const weighed: W[] = [];
    for (let k = 0; k < positions.length; k++) {
      const p = positions[k]!;
      const scores: Record<string, WeigherScore> = {};
      for (let w = 0; w < weighers.length; w++) {
        const r = raw[w * count + p]!;
        scores[weighers[w]!.name] = { raw: r, normalized: normalized(r, lo[w]!, range[w]!) };
      }
      weighed.push(shape.weighed(this.ranked[k]!, this.weights[k]!, scores));
    }
    return { filters, weighed };
  }

  #current(): Workspace {
    if (this.#ws.epoch !== this.#epoch) throw new Error("a decision's rejections were read after its pipeline decided again");
    return this.#ws;
  }
}

function sentence(source: StageRun['source'], index: number, code: Code): string {
  return source?.reason ? source.reason(index, code) : code;
}

/** The entries of `Decision.trace`. */
const TRACE_SHAPE: TraceShape<TraceStage['rejected'][number], TraceWeighed> = {
  rejected: (index, code, reason) => ({ index, code, reason }),
  weighed: (index, weight, weighers) => ({ index, weight, weighers }),
};

function identity(buffer: Int32Array, count: number): Int32Array {
  const view = buffer.subarray(0, count);
  for (let k = 0; k < count; k++) view[k] = k;
  return view;
}

/**
 * The best `keep` positions by total weight, highest first; ties by tieBreak on the candidate indices, else by
 * position (the set's order). One pass for keep = 1, a bounded heap for keep < count, a sort otherwise.
 */
function rank(ws: Workspace, count: number, keep: number, tieBreak?: (a: number, b: number) => number,
  tieOrder?: ArrayLike<number>): Int32Array {
  const { total, at } = ws;
  // Better first: −1 when position p ranks before q.
  const cmp = (p: number, q: number): number => {
    const tp = total[p]!;
    const tq = total[q]!;
    if (tp !== tq) return tp > tq ? -1 : 1;
    if (tieOrder) {
      const c = tieOrder[at[p]!]! - tieOrder[at[q]!]!;
      if (c !== 0) return c;
    } else if (tieBreak) {
      const c = tieBreak(at[p]!, at[q]!);
      if (c !== 0) return c;
    }
    return p - q;
  };
  if (keep === 1) {
    let best = 0;
    if (tieBreak || tieOrder) {
      for (let k = 1; k < count; k++) if (cmp(k, best) < 0) best = k;
    } else {
      // The first of the highest (set order breaks ties): one pass, no comparator calls.
      let bestWeight = total[0]!;
      for (let k = 1; k < count; k++) {
        if (total[k]! > bestWeight) {
          best = k;
          bestWeight = total[k]!;
        }
      }
    }
    const one = ws.order.subarray(0, 1);
    one[0] = best;
    return one;
  }
  if (keep >= count) {
    // (tieOrder is read in place of tieBreak.)
    if ((tieOrder || !tieBreak) && sortFully(ws, count, tieOrder)) return ws.order.subarray(0, count);
    return identity(ws.order, count).sort(cmp);
  }
  // A max-heap by "worse": heap[0] is the worst of the best `keep` so far.
  const heap = ws.order.subarray(0, keep);
  let size = 0;
  const worse = (a: number, b: number) => cmp(a, b) > 0;
  const swap = (a: number, b: number) => {
    const x = heap[a]!;
    heap[a] = heap[b]!;
    heap[b] = x;
  };
  const down = (from: number) => {
    let i = from;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < size && worse(heap[l]!, heap[m]!)) m = l;
      if (r < size && worse(heap[r]!, heap[m]!)) m = r;
      if (m === i) return;
      swap(i, m);
      i = m;
    }
  };
  for (let k = 0; k < count; k++) {
    if (size < keep) {
      heap[size] = k;
      let i = size++;
      while (i > 0) {
        const parent = (i - 1) >> 1;
        if (!worse(heap[i]!, heap[parent]!)) break;
        swap(i, parent);
        i = parent;
      }
    } else if (!(total[k]! < total[heap[0]!]!) && cmp(k, heap[0]!) < 0) {
      // (A lower total than the worst kept never ranks before it: no comparator call for most of a large set.)
      heap[0] = k;
      down(0);
    }
  }
  return heap.sort(cmp);
}

/**
 * rank's full sort without a tieBreak call: positions 0 … count − 1 into ws.order in the comparator sort's order
 * (highest total first, then the lowest tieOrder when given, then position; −0 counts as +0). False, with nothing
 * sorted, when a total is NaN or a tie order is not an integer in [0, 2^53) (the comparator sort then decides).
 * A small set is merge-sorted with the comparisons written out; a large one radix-sorted, by the tie order first and
 * then stably by the totals (2026-12-05, this VM kind, random data: at 400 positions 17 µs against 35 for the tie
 * order's native sort of keys and the radix sort by total it replaces; at 10,000, 0.67 ms against 1.3).
 */
function sortFully(ws: Workspace, count: number, tieOrder: ArrayLike<number> | undefined): boolean {
  if (count <= MERGE_SORT_MAX) return mergeSortByTotal(ws, count, tieOrder);
  let presorted = false;
  if (tieOrder) {
    if (!tieKeys(ws, count, tieOrder)) return false;
    radixSort(ws, count, false, TIE_HIGH_BITS);
    presorted = true;
  }
  if (!totalKeys(ws, count)) return false;
  radixSort(ws, count, presorted, 32);
  return true;
}

/** Up to this many positions, sortFully merge-sorts (a radix pass costs its 2^DIGIT_BITS counts whatever the count). */
const MERGE_SORT_MAX = 1024;
/** Insertion-sorted runs the merge sort starts from. */
const INSERTION_RUN = 16;
/** What sortFully can sort by: an integer in [0, 2^53). */
const isTieOrder = (t: number): boolean => Number.isSafeInteger(t) && t >= 0;
/** The bits of a tie order above its low 32 (it is below 2^53). */
const TIE_HIGH_BITS = 21;

/** sortFully for a small set: each position's tie order read once into ws.tie, then a bottom-up merge sort. */
function mergeSortByTotal(ws: Workspace, count: number, tieOrder: ArrayLike<number> | undefined): boolean {
  const { total, at, tie } = ws;
  for (let p = 0; p < count; p++) {
    if (total[p] !== total[p]) return false;
    const t = tieOrder ? tieOrder[at[p]!]! : 0;
    if (!isTieOrder(t)) return false;
    tie[p] = t;
  }
  // Whether position p ranks before position q.
  const before = (p: number, q: number): boolean => {
    const tp = total[p]!;
    const tq = total[q]!;
    if (tp !== tq) return tp > tq;
    const a = tie[p]!;
    const b = tie[q]!;
    return a !== b ? a < b : p < q;
  };
  let from = ws.order;
  let to = ws.spareOrder;
  for (let p = 0; p < count; p++) from[p] = p;
  for (let s = 0; s < count; s += INSERTION_RUN) {
    const e = Math.min(count, s + INSERTION_RUN);
    for (let i = s + 1; i < e; i++) {
      const x = from[i]!;
      let j = i - 1;
      for (; j >= s && before(x, from[j]!); j--) from[j + 1] = from[j]!;
      from[j + 1] = x;
    }
  }
  for (let width = INSERTION_RUN; width < count; width *= 2) {
    for (let s = 0; s < count; s += 2 * width) {
      const m = Math.min(count, s + width);
      const e = Math.min(count, s + 2 * width);
      let i = s;
      let j = m;
      let k = s;
      while (i < m && j < e) to[k++] = before(from[j]!, from[i]!) ? from[j++]! : from[i++]!;
      while (i < m) to[k++] = from[i++]!;
      while (j < e) to[k++] = from[j++]!;
    }
    [from, to] = [to, from];
  }
  if (from !== ws.order) ws.order.set(from.subarray(0, count));
  return true;
}

/** Each position's tie order as two 32-bit digits of the radix sort's keys; false unless every one is an integer in [0, 2^53). */
function tieKeys(ws: Workspace, count: number, tieOrder: ArrayLike<number>): boolean {
  const { at, keyHigh, keyLow } = ws;
  for (let p = 0; p < count; p++) {
    const t = tieOrder[at[p]!]!;
    if (!isTieOrder(t)) return false;
    keyHigh[p] = Math.floor(t / 2 ** 32);
    keyLow[p] = t >>> 0;
  }
  return true;
}

/**
 * Each position's total as the radix sort's keys: its bits, mapped so that unsigned order is descending numeric
 * order (−0 as +0). False when a total is NaN.
 */
function totalKeys(ws: Workspace, count: number): boolean {
  const { total, keyHigh, keyLow } = ws;
  const bits = TOTAL_BITS;
  const [low, high] = IS_LITTLE_ENDIAN ? [0, 1] : [1, 0];
  for (let p = 0; p < count; p++) {
    const t = total[p]!;
    if (t !== t) return false;
    TOTAL_WORD[0] = t + 0;
    // Descending: a negative total keeps its bits (larger magnitude, larger key); a positive one flips them.
    const negative = (bits[high]! & 0x80000000) !== 0;
    keyHigh[p] = negative ? bits[high]! : ~bits[high]! & 0x7fffffff;
    keyLow[p] = negative ? bits[low]! : ~bits[low]! >>> 0;
  }
  return true;
}

/**
 * A stable least-significant-digit radix sort of positions 0 … count − 1 (from ws.order as it is when `presorted`,
 * else from position order) by the keys keyLow (32 bits) then keyHigh (its low `highBits`), into ws.order.
 */
function radixSort(ws: Workspace, count: number, presorted: boolean, highBits: number): void {
  const { keyHigh, keyLow, digitCounts: counts } = ws;
  let from = ws.order;
  let to = ws.spareOrder;
  if (!presorted) for (let p = 0; p < count; p++) from[p] = p;
  const mask = (1 << DIGIT_BITS) - 1;
  for (const [keys, width] of [[keyLow, 32], [keyHigh, highBits]] as const) {
    for (let shift = 0; shift < width; shift += DIGIT_BITS) {
      counts.fill(0);
      for (let p = 0; p < count; p++) counts[(keys[p]! >>> shift) & mask]!++;
      // Every key has this digit: the pass would keep the order.
      if (counts[(keys[0]! >>> shift) & mask] === count) continue;
      let sum = 0;
      for (let d = 0; d <= mask; d++) {
        const c = counts[d]!;
        counts[d] = sum;
        sum += c;
      }
      for (let k = 0; k < count; k++) {
        const p = from[k]!;
        to[counts[(keys[p]! >>> shift) & mask]!++] = p;
      }
      [from, to] = [to, from];
    }
  }
  if (from !== ws.order) ws.order.set(from.subarray(0, count));
}

/** One double and its two 32-bit halves (in the platform's byte order). */
const TOTAL_WORD = new Float64Array(1);
const TOTAL_BITS = new Uint32Array(TOTAL_WORD.buffer);
/** The platform's byte order: the one typed arrays read and write words in. */
export const IS_LITTLE_ENDIAN = new Uint8Array(Uint16Array.of(1).buffer)[0] === 1;
