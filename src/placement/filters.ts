// The checks of GET /allocation_candidates as the engine's named filters (so `explain` names them), and the registry
// that names them. Pre-merge: per request group over (provider, anchor) choices — Placement's SQL filters of
// research_context.py, on the provider itself (single-provider path) or spanning its tree (multi-provider path) —
// and the trait checks over the multi-provider path's combinations. Post-merge: over the merged allocation requests
// (objects/allocation_candidate.py's group_policy, same_subtree and capacity re-check). Pure.
import type { CandidateSet, Code, Filter } from '../pipeline/pipeline.ts';
import { capacity, FIT_FAILURES, fitFailure, fitFailureCode, fitsMerged } from './capacity.ts';
import {
  CAPACITY, grown, MAX_UNIT, MIN_UNIT, SLOT_FIELDS, STEP_SIZE, unitsFitAll, USED, type ClassColumn, type PlacementModel, type Provider,
} from './model.ts';
import type { ParsedQuery, RequestGroup } from './query.ts';

// ---------------------------------------------------------------- reason codes
// Part of every answer's contract (explain, metrics), so exported even where no module imports them (@public tells
// knip).

/** @public */
export const NOT_IN_TREE = 'not_in_tree';
/** @public */
export const NO_INVENTORY = 'no_inventory';
/** @public */
export const INSUFFICIENT_CAPACITY = 'insufficient_capacity';
/** @public */
export const BELOW_MIN_UNIT = 'below_min_unit';
/** @public */
export const ABOVE_MAX_UNIT = 'above_max_unit';
/** @public */
export const NOT_A_STEP = 'not_a_multiple_of_step_size';
/** @public */
export const MISSING_REQUIRED_TRAIT = 'missing_required_trait';
/** @public */
export const HAS_FORBIDDEN_TRAIT = 'has_forbidden_trait';
/** @public */
export const NOT_MEMBER_OF = 'not_member_of';
/** @public */
export const IN_FORBIDDEN_AGGREGATE = 'in_forbidden_aggregate';
/** @public */
export const ROOT_REQUIRED_UNMET = 'root_required_unmet';
/** @public */
export const GROUP_POLICY_ISOLATE = 'group_policy_isolate';
/** @public */
export const SAME_SUBTREE = 'same_subtree';
/** @public */
export const MERGED_CAPACITY_EXCEEDED = 'merged_capacity_exceeded';
/** @public */
export const NESTED_PROVIDERS = 'nested_providers_before_1_29';

const FIT_CODES = {
  capacity: INSUFFICIENT_CAPACITY, min_unit: BELOW_MIN_UNIT, max_unit: ABOVE_MAX_UNIT, step_size: NOT_A_STEP,
} as const;

// ---------------------------------------------------------------- candidate sets

/** Candidates whose suppliers' traits the trait filters judge together. */
interface TraitHolders extends CandidateSet {
  /** The traits of the providers supplying candidate i, together. */
  traits(i: number): ReadonlySet<string>;
  /** A trait every candidate's suppliers are known to have (the set was seeded from that trait's index), or null. */
  readonly seedTrait: string | null;
}

/**
 * One group's (provider, anchor) choices for the requested classes. A sharing provider appears once per anchor tree
 * it can serve. `spansTree`: the multi-provider path, where aggregates on the anchor root count for the whole tree.
 */
export class ProviderChoices implements TraitHolders {
  /** Choice i: the model slots of its provider and anchor (the columns' and per-slot marks' index). */
  slots: Int32Array;
  anchorSlots: Int32Array;
  /** 1 when the provider serves the anchor as a sharing provider from another tree. */
  viaSharing: Uint8Array;
  #length = 0;
  /** The model's columns of `classes` (undefined for a class no provider has). */
  readonly #columns: ReadonlyArray<ClassColumn | undefined>;
  /**
   * `seedTrait`: the choices' providers were taken from this trait's index, so every one of them has it (a
   * RequiredTraits OR-set naming it needs no check).
   */
  constructor(readonly model: PlacementModel, readonly spansTree: boolean, readonly classes: readonly string[],
    readonly seedTrait: string | null = null, expected = 16) {
    this.#columns = classes.map((rc) => model.column(rc));
    // A search's own (model.scratchRows): nothing keeps a choice set past its search.
    this.slots = model.scratchRows.int32s(expected);
    this.anchorSlots = model.scratchRows.int32s(expected);
    this.viaSharing = model.scratchRows.bytes(expected);
  }
  get length(): number {
    return this.#length;
  }
  provider(i: number): Provider {
    return this.model.providerAt(this.slots[i]!);
  }
  anchor(i: number): Provider {
    return this.model.providerAt(this.anchorSlots[i]!);
  }
  add(provider: Provider, anchor: Provider, viaSharing: boolean): void {
    this.addSlot(provider.slot, anchor.slot, viaSharing ? 1 : 0);
  }
  addSlot(slot: number, anchorSlot: number, viaSharing: number): void {
    const i = this.#length;
    if (i === this.slots.length) this.#reserve(i + 1);
    this.#length = i + 1;
    this.slots[i] = slot;
    this.anchorSlots[i] = anchorSlot;
    this.viaSharing[i] = viaSharing;
  }
  /** Room for at least `n` choices in the three arrays (doubling, so that adding one at a time stays linear). */
  #reserve(n: number): void {
    const size = Math.max(16, this.slots.length * 2, n);
    const grow = <T extends Int32Array | Uint8Array>(a: T): T => {
      const b = new (a.constructor as new (n: number) => T)(size);
      b.set(a.subarray(0, this.#length));
      return b;
    };
    this.slots = grow(this.slots);
    this.anchorSlots = grow(this.anchorSlots);
    this.viaSharing = grow(this.viaSharing);
  }
  /** One choice per slot, each provider with its own root as anchor (no sharing provider): a copy per array, no call per choice. */
  addOwnRoots(slots: Int32Array): void {
    const from = this.#length;
    const n = from + slots.length;
    if (n > this.slots.length) this.#reserve(n);
    this.slots.set(slots, from);
    const model = this.model;
    const anchors = this.anchorSlots;
    for (let k = 0; k < slots.length; k++) anchors[from + k] = model.rootSlot(slots[k]!);
    this.viaSharing.fill(0, from, n);
    this.#length = n;
  }
  traits(i: number): ReadonlySet<string> {
    return this.provider(i).traits;
  }
  /**
   * The Capacity verdict of every choice for the group's `amounts` (in the order of `classes`), from the class
   * columns, class by class: per choice 0 (fits) or the first failing class's code (CAPACITY_CODES), in a tight loop
   * over typed arrays (no call, closure or Map per choice).
   */
  capacityRow(amounts: readonly number[]): Uint8Array {
    const n = this.#length;
    const row = this.model.scratchRows.bytes(n);
    const slots = this.slots;
    for (let k = 0; k < amounts.length; k++) {
      const c = this.#columns[k];
      if (c === undefined) {
        // No provider has the class: every choice that fitted the classes before it fails here.
        for (let i = 0; i < n; i++) if (row[i] === 0) row[i] = NO_INVENTORY_VERDICT;
        break;
      }
      const { has, limit, used, values } = c;
      const amount = amounts[k]!;
      if (unitsFitAll(c, amount)) {
        // Only the capacity can fail (fitFailureCode's first test): two numbers a choice.
        for (let i = 0; i < n; i++) {
          if (row[i] !== 0) continue;
          const s = slots[i]!;
          if (has[s] === 0) row[i] = NO_INVENTORY_VERDICT;
          else if (used[s]! + amount > limit[s]!) row[i] = CAPACITY_VERDICT;
        }
        continue;
      }
      for (let i = 0; i < n; i++) {
        if (row[i] !== 0) continue;
        const s = slots[i]!;
        if (has[s] === 0) {
          row[i] = NO_INVENTORY_VERDICT;
          continue;
        }
        const at = s * SLOT_FIELDS;
        const failure = fitFailureCode(limit[s]!, values[at + MIN_UNIT]!, values[at + MAX_UNIT]!, values[at + STEP_SIZE]!, used[s]!, amount);
        if (failure !== 0) row[i] = failure + 1;
      }
    }
    return row;
  }
}

/** capacityRow's verdicts: 1 no inventory, then fitFailureCode + 1 (2 is the capacity). */
const NO_INVENTORY_VERDICT = 1;
const CAPACITY_VERDICT = 2;
const CAPACITY_CODES: readonly Code[] = ['', NO_INVENTORY, ...FIT_FAILURES.slice(1).map((f) => FIT_CODES[f!])];

/**
 * Per provider slot, how many of `orSets` it meets, counted from the model's indexes (`index` of a name): the cost
 * is the sizes of the sets named, not the number of candidates checked.
 */
function slotHits(model: PlacementModel, orSets: ReadonlyArray<readonly string[]>, index: (name: string) => ReadonlySet<Provider>): ArrayLike<number> {
  // Bytes while the counts fit (a few OR-sets): kept between searches, less to zero per request.
  const small = orSets.length < 255;
  const perSlot = () => (small ? model.scratchRows.bytes(model.slotCount) : model.scratchRows.int32s(model.slotCount));
  const hits = perSlot();
  // The OR-set that last counted a slot, so that a provider with two names of one OR-set counts once.
  const last = orSets.some((orSet) => orSet.length > 1) ? perSlot() : null;
  orSets.forEach((orSet, j) => {
    for (const name of orSet) {
      // The index's slots (kept by the model until its members change): no provider visited.
      const slots = model.slotsOf(index(name));
      for (let k = 0; k < slots.length; k++) {
        const s = slots[k]!;
        if (last !== null) {
          if (last[s] === j + 1) continue;
          last[s] = j + 1;
        }
        hits[s]!++;
      }
    }
  });
  return hits;
}

/** A verdict row's codes: 0 passes, 1 is rejected with `code`. */
const rejectedAs = (code: Code): readonly Code[] => ['', code];
const IN_TREE_CODES = rejectedAs(NOT_IN_TREE);
const REQUIRED_TRAIT_CODES = rejectedAs(MISSING_REQUIRED_TRAIT);
const FORBIDDEN_TRAIT_CODES = rejectedAs(HAS_FORBIDDEN_TRAIT);
const MEMBER_OF_CODES = rejectedAs(NOT_MEMBER_OF);
const FORBIDDEN_AGGREGATE_CODES = rejectedAs(IN_FORBIDDEN_AGGREGATE);
const ROOT_REQUIRED_CODES = rejectedAs(ROOT_REQUIRED_UNMET);

/** The verdict row of `set`'s choices whose slot (in `slots`) must have `want` hits: 0 where hits[slots[i]] = want, else 1. */
function hitsRow(set: ProviderChoices, slots: Int32Array, hits: ArrayLike<number>, want: number): Uint8Array {
  const n = set.length;
  const row = set.model.scratchRows.bytes(n);
  for (let i = 0; i < n; i++) if (hits[slots[i]!] !== want) row[i] = 1;
  return row;
}

/** The multi-provider path's combinations: each requested class wholly from one provider of (or shared with) a tree. */
export interface Alloc {
  provider: Provider;
  rc: string;
  amount: number;
}

/**
 * The multi-provider path's combinations in flat arrays (an object, allocation array and supplier list each made a
 * large fleet's search mostly garbage collection): combination i is anchored at anchorSlots[i] and takes class c of
 * `classes` wholly from the provider at supplierSlots[i × classes.length + c].
 */
export class Combinations implements TraitHolders {
  readonly seedTrait = null;
  length = 0;
  anchorSlots = new Int32Array(64);
  supplierSlots: Int32Array;
  constructor(readonly model: PlacementModel, readonly classes: readonly string[], readonly amounts: readonly number[]) {
    this.supplierSlots = new Int32Array(64 * classes.length);
  }
  /** A new combination anchored at `anchorSlot`, its suppliers to be written at supplierSlots[i × C …]; its index. */
  add(anchorSlot: number): number {
    const i = this.length++;
    if (i === this.anchorSlots.length) {
      this.anchorSlots = grown(this.anchorSlots, i + 1);
      this.supplierSlots = grown(this.supplierSlots, this.anchorSlots.length * this.classes.length);
    }
    this.anchorSlots[i] = anchorSlot;
    return i;
  }
  anchor(i: number): Provider {
    return this.model.providerAt(this.anchorSlots[i]!);
  }
  /** Combination i's distinct suppliers, in class order (of first appearance). */
  suppliers(i: number): Provider[] {
    const C = this.classes.length;
    const out: Provider[] = [];
    for (let c = 0; c < C; c++) {
      const p = this.model.providerAt(this.supplierSlots[i * C + c]!);
      if (!out.includes(p)) out.push(p);
    }
    return out;
  }
  /** Built only when a trait filter asks (the suppliers' union; one supplier's own set). */
  traits(i: number): ReadonlySet<string> {
    const C = this.classes.length;
    const first = this.supplierSlots[i * C]!;
    let one = true;
    for (let c = 1; c < C && one; c++) one = this.supplierSlots[i * C + c] === first;
    return one ? this.model.providerAt(first).traits : unionTraits(this.suppliers(i));
  }
}

function unionTraits(providers: readonly Provider[]): ReadonlySet<string> {
  if (providers.length === 1) return providers[0]!.traits;
  const all = new Set<string>();
  for (const p of providers) for (const t of p.traits) all.add(t);
  return all;
}

/** A merged allocation request. */
export interface Candidate {
  anchor: Provider;
  /** provider → class → amount (amounts of several groups summed). */
  allocations: Map<Provider, Map<string, number>>;
  /** suffix → providers */
  mappings: Map<string, Provider[]>;
  /** Stable identity used for de-duplication and as the last tie-break. */
  key: string;
  /** Set when the whole request is one group served by this one provider (the serialiser writes every request from one template). */
  single?: Provider;
  /** `allocations`' entries, in no particular order, without building the maps when they are not yet. */
  eachSummed?(visit: (provider: Provider, rc: string, amount: number) => void): void;
  /**
   * `key` in pieces, in order (the key is their concatenation), without building it: headroom orders a tree's tied
   * candidates by comparing their characters.
   */
  keyPieces?(visit: (piece: string) => void): void;
}

/** Each (provider, class, summed amount) of a candidate, in no particular order. */
export function eachSummed(c: Candidate, visit: (provider: Provider, rc: string, amount: number) => void): void {
  if (c.eachSummed) return c.eachSummed(visit);
  for (const [p, res] of c.allocations) for (const [rc, amount] of res) visit(p, rc, amount);
}

/** The merged allocation requests a decision ranks: built up front, or lazily from one group's providers. */
export interface MergedCandidates extends CandidateSet {
  /** Every candidate is one provider (one group, no sharing): nothing to merge or re-check. */
  readonly oneProviderEach: boolean;
  candidate(i: number): Candidate;
  anchor(i: number): Provider;
  key(i: number): string;
  /**
   * The free capacity of `rc` on the providers supplying candidates at[0 … count), before this request, into
   * out[0 … count).
   */
  freeInto(rc: string, at: Int32Array, count: number, out: Float64Array): void;
}

// ---------------------------------------------------------------- requests

/** What the pre-merge filters read: one request group of the query. */
export interface GroupRequest {
  query: ParsedQuery;
  group: RequestGroup;
  /** in_tree's root, or null. */
  treeRoot: Provider | null;
}

/** What the post-merge filters read. */
export interface MergeRequest {
  query: ParsedQuery;
  model: PlacementModel;
  /** False below microversion 1.29 (exclude_nested_providers). */
  nestedAware: boolean;
}

// ---------------------------------------------------------------- helpers

/** True when `values` holds at least one member of every OR-set. */
export function hasAllOrSets(values: ReadonlySet<string>, orSets: ReadonlyArray<readonly string[]>): boolean {
  for (let s = 0; s < orSets.length; s++) {
    const set = orSets[s]!;
    let hit = false;
    for (let k = 0; k < set.length && !hit; k++) hit = values.has(set[k]!);
    if (!hit) return false;
  }
  return true;
}

/** True when `values` holds none of `forbidden`. */
export function hasNone(values: ReadonlySet<string>, forbidden: readonly string[]): boolean {
  for (let k = 0; k < forbidden.length; k++) if (values.has(forbidden[k]!)) return false;
  return true;
}

/** root_required, its traits as arrays (prepared once per request). */
interface RootTraits {
  required: readonly string[];
  forbidden: readonly string[];
}
const rootTraitsOf = (q: ParsedQuery): RootTraits | null =>
  q.rootRequired && { required: [...q.rootRequired.required], forbidden: [...q.rootRequired.forbidden] };

function rootTraitsOk(root: Provider, traits: RootTraits): boolean {
  for (let k = 0; k < traits.required.length; k++) if (!root.traits.has(traits.required[k]!)) return false;
  return hasNone(root.traits, traits.forbidden);
}

/** The query's root_required as a check of a root provider. */
export function rootRequiredCheck(q: ParsedQuery): (root: Provider) => boolean {
  const traits = rootTraitsOf(q);
  return traits === null ? () => true : (root) => rootTraitsOk(root, traits);
}

const unmetOrSet = (values: ReadonlySet<string>, orSets: readonly string[][]) => orSets.find((set) => !set.some((t) => values.has(t)))!;
const present = (values: ReadonlySet<string>, forbidden: Iterable<string>) => [...forbidden].filter((f) => values.has(f));
const label = (suffix: string) => `group '${suffix}'`;

// ---------------------------------------------------------------- pre-merge filters

type ChoiceFilter = Filter<ProviderChoices, GroupRequest>;
type TraitFilter = Filter<TraitHolders, GroupRequest>;

/** in_tree: the choice must be in the tree of the given provider (its anchor in the multi-provider path). */
const inTreeFilter: ChoiceFilter = {
  name: 'InTree',
  prepare(set, req) {
    const root = req.treeRoot;
    if (root === null) return null;
    const treeOf = (i: number) => (set.spansTree ? set.anchor(i) : set.provider(i).root);
    // The tree's root slot against each choice's anchor, or its provider's root.
    const model = set.model;
    const roots = set.spansTree ? set.anchorSlots : set.slots;
    const row = model.scratchRows.bytes(set.length);
    for (let i = 0; i < row.length; i++) {
      const s = roots[i]!;
      if ((set.spansTree ? s : model.rootSlot(s)) !== root.slot) row[i] = 1;
    }
    return {
      row,
      codes: IN_TREE_CODES,
      reason: (i) => `${set.provider(i).uuid} is in the tree of ${treeOf(i).uuid}, not of ${req.group.inTree}`,
    };
  },
};

/** The SQL capacity check per class: used + amount ≤ (total − reserved) × ratio, min_unit, max_unit, step_size. */
const providerCapacityFilter: ChoiceFilter = {
  name: 'Capacity',
  prepare(set, req) {
    const amounts = set.classes.map((rc) => req.group.resources.get(rc)!);
    return {
      row: set.capacityRow(amounts),
      codes: CAPACITY_CODES,
      reason(i, code) {
        const p = set.provider(i);
        // The first class that does not fit.
        const k = set.classes.findIndex((rc, k) => {
          const inv = p.inventories.get(rc);
          return inv === undefined || fitFailure(inv, p.used.get(rc) ?? 0, amounts[k]!) !== null;
        });
        const rc = set.classes[k]!;
        const amount = amounts[k]!;
        const inv = p.inventories.get(rc);
        if (!inv) return `${p.uuid} has no ${rc} inventory`;
        if (code === INSUFFICIENT_CAPACITY) {
          return `${rc} on ${p.uuid}: used ${p.used.get(rc) ?? 0} + requested ${amount} > (total ${inv.total} - reserved ${inv.reserved}) × ratio ${inv.allocation_ratio}`;
        }
        if (code === BELOW_MIN_UNIT) return `${rc} on ${p.uuid}: requested ${amount} < min_unit ${inv.min_unit}`;
        if (code === ABOVE_MAX_UNIT) return `${rc} on ${p.uuid}: requested ${amount} > max_unit ${inv.max_unit}`;
        return `${rc} on ${p.uuid}: requested ${amount} is not a multiple of step_size ${inv.step_size}`;
      },
    };
  },
};

/** required traits (AND of OR-sets): on the provider, or collectively on a combination's suppliers. */
const requiredTraitsFilter: TraitFilter = {
  name: 'RequiredTraits',
  prepare(set, req) {
    const required = req.group.required;
    // An OR-set naming the trait the set was seeded from holds for every candidate.
    const seed = set.seedTrait;
    const toCheck = seed === null ? required : required.filter((orSet) => !orSet.includes(seed));
    if (toCheck.length === 0) return null;
    const reason = (i: number) => `${label(req.group.suffix)}: none of ${unmetOrSet(set.traits(i), required).join(', ')} is present`;
    if (set instanceof ProviderChoices) {
      const hits = slotHits(set.model, toCheck, (t) => set.model.providersWithTrait(t));
      return { row: hitsRow(set, set.slots, hits, toCheck.length), codes: REQUIRED_TRAIT_CODES, reason };
    }
    return { check: (i) => (hasAllOrSets(set.traits(i), toCheck) ? null : MISSING_REQUIRED_TRAIT), reason };
  },
};

/** forbidden traits: absent on the provider, or on each of a combination's suppliers. */
const forbiddenTraitsFilter: TraitFilter = {
  name: 'ForbiddenTraits',
  prepare(set, req) {
    if (req.group.forbidden.size === 0) return null;
    const forbidden = [...req.group.forbidden];
    const reason = (i: number) => `${label(req.group.suffix)}: forbidden trait(s) ${present(set.traits(i), forbidden).join(', ')} present`;
    if (set instanceof ProviderChoices) {
      const hits = slotHits(set.model, [forbidden], (t) => set.model.providersWithTrait(t));
      return { row: hitsRow(set, set.slots, hits, 0), codes: FORBIDDEN_TRAIT_CODES, reason };
    }
    return { check: (i) => (hasNone(set.traits(i), forbidden) ? null : HAS_FORBIDDEN_TRAIT), reason };
  },
};

/**
 * member_of (AND of OR-sets): the provider itself (single-provider path), or the provider or its anchor root ("an
 * aggregate on the root spans the tree"), a sharing provider being itself in the aggregates too.
 */
const memberOfFilter: ChoiceFilter = {
  name: 'MemberOf',
  prepare(set, req) {
    const memberOf = req.group.memberOf;
    if (memberOf.length === 0) return null;
    const hits = slotHits(set.model, memberOf, (agg) => set.model.providersInAggregate(agg));
    const want = memberOf.length;
    const row = hitsRow(set, set.slots, hits, want);
    if (set.spansTree) {
      const { anchorSlots, viaSharing } = set;
      for (let i = 0; i < row.length; i++) if (row[i] === 1 && viaSharing[i] === 0 && hits[anchorSlots[i]!] === want) row[i] = 0;
    }
    return {
      row,
      codes: MEMBER_OF_CODES,
      reason: (i) => `${set.provider(i).uuid}${set.spansTree ? ` (anchor ${set.anchor(i).uuid})` : ''} is not in any of ` +
        unmetOrSet(set.provider(i).aggregates, memberOf).join(', '),
    };
  },
};

/** forbidden aggregates: not on the provider (nor, in the multi-provider path, on its anchor root). */
const forbiddenAggregatesFilter: ChoiceFilter = {
  name: 'ForbiddenAggregates',
  prepare(set, req) {
    if (req.group.forbiddenAggs.size === 0) return null;
    const forbidden = [...req.group.forbiddenAggs];
    const hits = slotHits(set.model, [forbidden], (agg) => set.model.providersInAggregate(agg));
    const row = hitsRow(set, set.slots, hits, 0);
    if (set.spansTree) {
      const anchorSlots = set.anchorSlots;
      for (let i = 0; i < row.length; i++) if (hits[anchorSlots[i]!] !== 0) row[i] = 1;
    }
    return {
      row,
      codes: FORBIDDEN_AGGREGATE_CODES,
      reason(i) {
        const p = set.provider(i);
        const where = hasNone(p.aggregates, forbidden) ? set.anchor(i) : p;
        return `${where.uuid} is in forbidden aggregate(s) ${present(where.aggregates, forbidden).join(', ')}`;
      },
    };
  },
};

/** root_required: on the anchor root of the choice. */
const rootRequiredFilter: ChoiceFilter = {
  name: 'RootRequired',
  prepare(set, req) {
    const traits = rootTraitsOf(req.query);
    if (traits === null) return null;
    const index = (t: string) => set.model.providersWithTrait(t);
    const required = traits.required.length > 0 ? slotHits(set.model, traits.required.map((t) => [t]), index) : null;
    const forbidden = traits.forbidden.length > 0 ? slotHits(set.model, [traits.forbidden], index) : null;
    const row = required === null ? set.model.scratchRows.bytes(set.length) : hitsRow(set, set.anchorSlots, required, traits.required.length);
    if (forbidden !== null) {
      const anchorSlots = set.anchorSlots;
      for (let i = 0; i < row.length; i++) if (forbidden[anchorSlots[i]!] !== 0) row[i] = 1;
    }
    return {
      row,
      codes: ROOT_REQUIRED_CODES,
      reason(i) {
        const root = set.anchor(i);
        const missing = traits.required.filter((t) => !root.traits.has(t));
        const forbidden = present(root.traits, traits.forbidden);
        return `root ${root.uuid}: ${missing.length > 0 ? `lacks ${missing.join(', ')}` : `has forbidden ${forbidden.join(', ')}`}`;
      },
    };
  },
};

// ---------------------------------------------------------------- post-merge filters

type MergedFilter = Filter<MergedCandidates, MergeRequest>;

const suffixedCount = (q: ParsedQuery) => q.groups.reduce((n, g) => n + (g.suffix === '' ? 0 : 1), 0);

/** group_policy=isolate: the suffixed groups use pairwise distinct providers (the unsuffixed one may share). */
const groupPolicyIsolateFilter: MergedFilter = {
  name: 'GroupPolicyIsolate',
  prepare(set, req) {
    if (req.query.groupPolicy !== 'isolate' || suffixedCount(req.query) < 2) return null;
    const shared = (i: number): Provider | null => {
      const seen = new Set<Provider>();
      for (const [suffix, providers] of set.candidate(i).mappings) {
        if (suffix === '') continue;
        for (const p of providers) {
          if (seen.has(p)) return p;
          seen.add(p);
        }
      }
      return null;
    };
    return {
      check: (i) => (shared(i) === null ? null : GROUP_POLICY_ISOLATE),
      reason: (i) => `provider ${shared(i)!.uuid} serves two suffixed groups`,
    };
  },
};

/** same_subtree: the providers of the listed groups all lie under one of them. */
const sameSubtreeFilter: MergedFilter = {
  name: 'SameSubtree',
  prepare(set, req) {
    if (req.query.groups.length < 2 || req.query.sameSubtree.length === 0) return null;
    const broken = (i: number): string[] | null => {
      const mappings = set.candidate(i).mappings;
      for (const suffixes of req.query.sameSubtree) {
        const providers = [...new Set(suffixes.flatMap((s) => mappings.get(s) ?? []))];
        if (!providers.some((a) => providers.every((p) => req.model.isAncestorOrSelf(a, p)))) return suffixes;
      }
      return null;
    };
    return {
      check: (i) => (broken(i) === null ? null : SAME_SUBTREE),
      reason: (i) => `groups ${broken(i)!.join(',')} are not in one subtree`,
    };
  },
};

/** Whether some resource class is requested by more than one group. */
function classSharedByGroups(groups: readonly RequestGroup[]): boolean {
  if (groups.length < 2) return false;
  const seen = new Set<string>();
  for (const g of groups) {
    for (const rc of g.resources.keys()) {
      if (seen.has(rc)) return true;
      seen.add(rc);
    }
  }
  return false;
}

/** The post-merge capacity re-check: sums of several groups on one (provider, class). */
const mergedCapacityFilter: MergedFilter = {
  name: 'MergedCapacity',
  prepare(set, req) {
    // Groups naming disjoint classes put at most one amount on each (provider, class), which its group's Capacity
    // check passed already: only a class two groups ask for can sum past what one of them checked.
    if (!classSharedByGroups(req.query.groups)) return null;
    const exceeded = (i: number): [Provider, string, number] | null => {
      for (const [p, resources] of set.candidate(i).allocations) {
        for (const [rc, sum] of resources) if (!fitsMerged(p.inventories.get(rc)!, p.used.get(rc) ?? 0, sum)) return [p, rc, sum];
      }
      return null;
    };
    // The verdict needs no order (nor maps); the sentence names the first sum that does not fit, in the maps' order.
    // (From the class columns, which hold fitsMerged's numbers: capacity, usage, max_unit.)
    let over = false;
    let lastClass = '';
    let values: Float64Array | undefined;
    const visit = (p: Provider, rc: string, sum: number) => {
      if (rc !== lastClass) {
        lastClass = rc;
        values = req.model.column(rc)!.values;
      }
      const at = p.slot * SLOT_FIELDS;
      if (values![at + USED]! + sum > values![at + CAPACITY]! || sum > values![at + MAX_UNIT]!) over = true;
    };
    return {
      check(i) {
        over = false;
        eachSummed(set.candidate(i), visit);
        return over ? MERGED_CAPACITY_EXCEEDED : null;
      },
      reason(i) {
        const [p, rc, sum] = exceeded(i)!;
        const inv = p.inventories.get(rc)!;
        return `${rc} on ${p.uuid}: used ${p.used.get(rc) ?? 0} + requested ${sum} > capacity ${capacity(inv)} or max_unit ${inv.max_unit}`;
      },
    };
  },
};

/** Below microversion 1.29 (exclude_nested_providers): a request may use one provider per tree only. */
const excludeNestedFilter: MergedFilter = {
  name: 'ExcludeNested',
  prepare(set, req) {
    if (req.nestedAware || set.oneProviderEach) return null;
    const repeated = (i: number): Provider | null => {
      const roots = new Set<Provider>();
      for (const p of set.candidate(i).allocations.keys()) {
        if (roots.has(p.root)) return p.root;
        roots.add(p.root);
      }
      return null;
    };
    return {
      check: (i) => (repeated(i) === null ? null : NESTED_PROVIDERS),
      reason: (i) => `uses more than one provider of the tree of ${repeated(i)!.uuid} (microversion < 1.29)`,
    };
  },
};

// ---------------------------------------------------------------- registry

/** The filters by the name `explain` shows: before the merge (per group), and after it. */
const GROUP_FILTERS = {
  Capacity: providerCapacityFilter,
  InTree: inTreeFilter,
  RequiredTraits: requiredTraitsFilter,
  ForbiddenTraits: forbiddenTraitsFilter,
  MemberOf: memberOfFilter,
  ForbiddenAggregates: forbiddenAggregatesFilter,
  RootRequired: rootRequiredFilter,
} as const;
const MERGE_FILTERS = {
  GroupPolicyIsolate: groupPolicyIsolateFilter,
  SameSubtree: sameSubtreeFilter,
  MergedCapacity: mergedCapacityFilter,
  ExcludeNested: excludeNestedFilter,
} as const;

const groupStages = (...names: Array<keyof typeof GROUP_FILTERS>): ChoiceFilter[] => names.map((name) => GROUP_FILTERS[name]);

/** The single-provider path: one provider satisfies the whole group. */
export const SINGLE_PROVIDER_FILTERS = groupStages(
  'Capacity', 'InTree', 'RequiredTraits', 'ForbiddenTraits', 'MemberOf', 'ForbiddenAggregates', 'RootRequired');
/** The multi-provider path, per requested class: the providers able to supply it, per anchor tree. */
export const CLASS_SUPPLIER_FILTERS = groupStages('Capacity', 'InTree', 'MemberOf', 'ForbiddenAggregates', 'RootRequired');
/** The multi-provider path's combinations: traits judged on the providers that supply resources. */
export const COMBINATION_FILTERS: readonly TraitFilter[] = [GROUP_FILTERS.RequiredTraits, GROUP_FILTERS.ForbiddenTraits];
/** After the groups are merged. */
export const MERGED_FILTERS: readonly MergedFilter[] = Object.values(MERGE_FILTERS);
