// The latest decisions, newest first, in a bounded in-memory ring: what the console's "Decisions" view reads.
// Nothing here is persisted: it is a window for operators, not an audit trail (logs and metrics are that).
import { isoTime } from '../iso-time.ts';

export type Dialect = 'volumes' | 'placement' | 'replicas';

/** What a caller records about one decision. */
export interface DecisionInput {
  dialect: Dialect;
  /** "placed", "dry_run", "no_valid_backend", "candidates", "no_candidates", "degraded", … (as in the metrics). */
  outcome: string;
  /** The HTTP status the client got (200, 409). */
  status: number;
  dry_run: boolean;
  /** A short digest of what was asked (size, volume type, resources string, …). */
  request: Record<string, unknown>;
  /** What was chosen: a pool, the best provider tree's root, one node/disk per replica; empty when nothing fit. */
  targets: string[];
  /** Milliseconds until the answer was ready. */
  duration_ms: number;
  /** Counts the answer carried, e.g. {returned: 5, total: 120} for allocation candidates. */
  counts?: Record<string, number>;
  /** The reason given to the client when nothing fit (problem detail). */
  detail?: string;
  /** The explain trace, when the decision was traced. */
  explain?: unknown;
  request_id?: string;
}

export interface DecisionEntry extends DecisionInput {
  /** Monotonic within the process: a client polls with after=<id>. */
  id: number;
  /** ISO 8601 time of recording. */
  at: string;
  /** Array items left out of the stored trace to keep the entry small (0 or absent: the trace is whole). */
  explain_omitted?: number;
}

const DEFAULT_CAPACITY = 200;
/** Each stored trace stays under this many bytes of JSON (a 10,000-pool trace is megabytes). */
export const TRACE_BUDGET_BYTES = 64 * 1024;
const REQUEST_BUDGET_CHARS = 2048;
const DETAIL_BUDGET_CHARS = 2048;

/** A copy of `value` with every array cut to `max` items; `omitted` counts what was cut. */
function clipArrays(value: unknown, max: number, omitted: { n: number }, depth = 0): unknown {
  if (value === null || typeof value !== 'object' || depth > 16) return value;
  if (Array.isArray(value)) {
    if (value.length > max) omitted.n += value.length - max;
    return value.slice(0, max).map((v) => clipArrays(v, max, omitted, depth + 1));
  }
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[k] = clipArrays(v, max, omitted, depth + 1);
  return out;
}

/**
 * The trace as stored: whole when small, otherwise with its lists cut shorter until it fits the budget (counts such
 * as a filter's in/out stay exact; only the per-candidate lists shrink). Never a reference to the caller's object.
 */
export function boundTrace(trace: unknown, budget = TRACE_BUDGET_BYTES): { explain: unknown; omitted: number } {
  for (const max of [100, 25, 5, 1]) {
    const omitted = { n: 0 };
    const clipped = clipArrays(trace, max, omitted);
    if (JSON.stringify(clipped).length <= budget) return { explain: clipped, omitted: omitted.n };
  }
  return { explain: { dropped: `the trace is larger than ${budget} bytes even cut short: ask again (a what-if) to see it` }, omitted: 0 };
}

/** copySmall's answer for a value that may not fit its budget, or is not plain JSON. */
const TOO_LARGE = Symbol('too large');

/**
 * A copy of a small JSON-shaped value (plain objects, arrays, strings, finite numbers, booleans, null), spending
 * `budget.left` by an upper bound of its JSON length (6 characters per source character, as \u escapes take);
 * TOO_LARGE when it may not fit or is shaped otherwise (then the caller goes through JSON). Copying field by field
 * keeps a decision's ring entry cheap: a digest is a handful of fields, and a JSON round trip of it cost more than
 * the rest of the entry.
 */
function copySmall(value: unknown, budget: { left: number }, depth: number): unknown {
  switch (typeof value) {
    case 'string':
      budget.left -= 6 * value.length + 2;
      return budget.left >= 0 ? value : TOO_LARGE;
    case 'number':
      budget.left -= 24;
      // -0 is written 0.
      return Number.isFinite(value) && budget.left >= 0 ? value || 0 : TOO_LARGE;
    case 'boolean':
      budget.left -= 5;
      return value;
    case 'object': {
      if (value === null) return (budget.left -= 4), null;
      if (depth > 4) return TOO_LARGE;
      if (Array.isArray(value)) {
        const out = new Array<unknown>(value.length);
        budget.left -= 2;
        for (let i = 0; i < value.length; i++) {
          const v = copySmall(value[i], budget, depth + 1);
          if (v === TOO_LARGE) return TOO_LARGE;
          out[i] = v;
          budget.left -= 1;
        }
        return budget.left >= 0 ? out : TOO_LARGE;
      }
      if (Object.getPrototypeOf(value) !== Object.prototype) return TOO_LARGE;
      const out: Record<string, unknown> = {};
      budget.left -= 2;
      for (const key of Object.keys(value)) {
        const field = (value as Record<string, unknown>)[key];
        if (field === undefined) continue;
        budget.left -= 6 * key.length + 4;
        const v = copySmall(field, budget, depth + 1);
        if (v === TOO_LARGE) return TOO_LARGE;
        out[key] = v;
      }
      return budget.left >= 0 ? out : TOO_LARGE;
    }
    default:
      return TOO_LARGE;
  }
}

/** The request digest as stored: a copy, whole when its JSON fits the budget, else that JSON cut short. */
function boundRequest(request: Record<string, unknown>): Record<string, unknown> {
  const copy = copySmall(request, { left: REQUEST_BUDGET_CHARS }, 0);
  if (copy !== TOO_LARGE) return copy as Record<string, unknown>;
  const json = JSON.stringify(request);
  return json.length <= REQUEST_BUDGET_CHARS ? JSON.parse(json) : { truncated: `${json.slice(0, REQUEST_BUDGET_CHARS)}…` };
}

export interface DecisionQuery {
  dialect?: Dialect;
  /** Only entries with a larger id (newer). */
  after?: number;
  limit?: number;
}

export class DecisionLog {
  readonly capacity: number;
  readonly #now: () => number;
  /** Ring storage: #entries[(#start + i) % capacity] is the i-th oldest. */
  readonly #entries: DecisionEntry[] = [];
  #start = 0;
  #nextId = 1;

  constructor(capacity = DEFAULT_CAPACITY, now: () => number = Date.now) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new RangeError('capacity must be a positive integer');
    this.capacity = capacity;
    this.#now = now;
  }

  get size(): number {
    return this.#entries.length;
  }

  /** Records one decision; the oldest entry goes when the ring is full. */
  record(input: DecisionInput): DecisionEntry {
    // Field by field, in DecisionEntry's order: it runs once per decision.
    const entry: DecisionEntry = {
      id: this.#nextId++,
      at: isoTime(this.#now()),
      dialect: input.dialect,
      outcome: input.outcome,
      status: input.status,
      dry_run: input.dry_run,
      request: boundRequest(input.request),
      targets: input.targets.slice(),
      duration_ms: input.duration_ms,
    };
    if (input.counts !== undefined) entry.counts = input.counts;
    if (input.detail !== undefined) {
      entry.detail = input.detail.length > DETAIL_BUDGET_CHARS ? `${input.detail.slice(0, DETAIL_BUDGET_CHARS)}…` : input.detail;
    }
    if (input.request_id !== undefined) entry.request_id = input.request_id;
    if (input.explain !== undefined) {
      const bounded = boundTrace(input.explain);
      entry.explain = bounded.explain;
      if (bounded.omitted > 0) entry.explain_omitted = bounded.omitted;
    }
    if (this.#entries.length < this.capacity) this.#entries.push(entry);
    else {
      this.#entries[this.#start] = entry;
      this.#start = (this.#start + 1) % this.capacity;
    }
    return entry;
  }

  /** Newest first. */
  list(query: DecisionQuery = {}): DecisionEntry[] {
    const limit = query.limit ?? this.capacity;
    const out: DecisionEntry[] = [];
    for (let i = this.#entries.length - 1; i >= 0 && out.length < limit; i--) {
      const e = this.#entries[(this.#start + i) % this.#entries.length]!;
      if (query.after !== undefined && e.id <= query.after) break;
      if (query.dialect !== undefined && e.dialect !== query.dialect) continue;
      out.push(e);
    }
    return out;
  }

  get(id: number): DecisionEntry | undefined {
    return this.#entries.find((e) => e.id === id);
  }
}
