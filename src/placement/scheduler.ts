// GET /allocation_candidates through the engine: request groups → each group's choices decided by a pre-merge
// Pipeline → merge by anchor tree → the post-merge Pipeline (named filters, FreeCapacity weighers, `limit` top-N,
// ties by root provider uuid, a random sample for randomize_allocation_candidates). Follows Placement 8
// (objects/allocation_candidate.py, research_context.py): the single-provider and multi-provider paths, sharing
// providers, the DB-phase order of "unknown name" (400) and "nothing found" (200 empty) answers. Pure over the
// in-memory model.
import { Pipeline, type Decision, type Rejected } from '../pipeline/pipeline.ts';
import { badRequest } from './errors.ts';
import {
  CLASS_SUPPLIER_FILTERS, COMBINATION_FILTERS, Combinations, MERGED_FILTERS, ProviderChoices, rootRequiredCheck,
  SINGLE_PROVIDER_FILTERS, type Alloc, type Candidate, type GroupRequest, type MergedCandidates, type MergeRequest,
} from './filters.ts';
import type { PlacementModel, Provider } from './model.ts';
import type { ParsedQuery, RequestGroup } from './query.ts';
import { PLACEMENT_WEIGHERS } from './weighers.ts';

/** One group's way of being satisfied: the providers it takes each class from, within one anchor tree. */
interface GroupCandidate {
  anchor: Provider;
  /** null for a single-provider candidate: every class of the group comes from providers[0] (saves allocations). */
  allocs: Alloc[] | null;
  /** Providers that satisfied the group (the mapping). */
  providers: Provider[];
}

export interface SearchOptions {
  randomize: boolean;
  /** False below microversion 1.29: requests using more than one provider of a tree are dropped (§2.5). */
  nestedAware?: boolean;
  random?: () => number;
  /** The FreeCapacity weighers' multiplier (default 1: most free capacity first). */
  freeCapacityMultiplier?: number;
  /** Keep the first rejections of every stage with their sentences, and each returned candidate's weights. */
  explain?: boolean;
  /** explain_target: follow this provider alone through every stage (its sentences only), and its weights. */
  target?: Provider;
  /**
   * Every candidate that passes, in no particular order, without weighing (headroom regroups them by tree and
   * ranks them itself): the post-merge filters only. Not with explain, target, randomize or limit.
   */
  unranked?: boolean;
}

interface StageTrace {
  name: string;
  /** The requested class, for the multi-provider path's per-class stages. */
  class?: string;
  in: number;
  out: number;
  rejected: Array<{ provider_uuid?: string; root_provider_uuid: string; code: string; reason: string }>;
}

interface GroupTrace {
  suffix: string;
  path: 'single-provider' | 'multi-provider';
  candidates: number;
  filters: StageTrace[];
}

interface WeighedTrace {
  index: number;
  root_provider_uuid: string;
  weight: number;
  weighers: Record<string, { raw: number; normalized: number }>;
}

interface SearchTrace {
  groups: GroupTrace[];
  /** Why the search stopped early with no candidates, if it did. */
  stopped?: string;
  /** The post-merge stages. */
  filters: StageTrace[];
  merged: number;
  returned: number;
  /** With `explain`: the returned candidates' weights, best first (or 'randomized'). */
  weighed?: WeighedTrace[] | 'randomized';
}

/** One choice the target took part in, through the stages of one decision: each filter it passed, or the one that refused it. */
interface TargetStep {
  name: string;
  class?: string;
  /** The anchor tree of the choice (a sharing provider is a choice once per tree it serves). */
  root_provider_uuid: string;
  passed: boolean;
  code?: string;
  reason?: string;
}

interface TargetGroup {
  suffix: string;
  path: GroupTrace['path'];
  /**
   * false when the search never looked at the provider (an index of the class, trait, aggregate or tree it lacks
   * ruled it out): `filters` then says what the filters make of it alone.
   */
  indexed: boolean;
  filters: TargetStep[];
}

/** explain_target: one provider's verdict, per request group and after the merge, and its weights. */
export interface TargetTrace {
  provider_uuid: string;
  groups: TargetGroup[];
  /** The post-merge stages, for every merged candidate the provider is part of. */
  filters: TargetStep[];
  /** The returned candidates it is part of (index into allocation_requests), with their weights. */
  weighed: WeighedTrace[] | 'randomized';
  /** Why the search stopped early with no candidates, if it did. */
  stopped?: string;
}

export interface SearchResult {
  candidates: Candidate[];
  /** Every candidate that passed, before limit (count only). */
  total: number;
  trace: SearchTrace;
  /** With `target`: that provider's verdict. */
  target?: TargetTrace;
}

const empty = (trace: SearchTrace, why: string, target?: TargetTrace): SearchResult => {
  trace.stopped = why;
  if (target) target.stopped = why;
  return { candidates: [], total: 0, trace, ...(target ? { target } : {}) };
};

/** The trace keeps the first few rejections of each stage; the counts cover all. */
const TRACE_REJECTIONS = 20;

// ---------------------------------------------------------------- the pipelines

const singleProviderPipeline = new Pipeline<ProviderChoices, GroupRequest>({ filters: SINGLE_PROVIDER_FILTERS });
const classSupplierPipeline = new Pipeline<ProviderChoices, GroupRequest>({ filters: CLASS_SUPPLIER_FILTERS });
const combinationPipeline = new Pipeline<Combinations, GroupRequest>({ filters: COMBINATION_FILTERS });

/** The post-merge filters alone (an unranked search). */
const mergedFiltersPipeline = new Pipeline<MergedCandidates, MergeRequest>({ filters: MERGED_FILTERS });

/** The post-merge pipeline per set of requested classes (one FreeCapacity weigher each) and multiplier. */
const mergedPipelines = new Map<string, Pipeline<MergedCandidates, MergeRequest>>();
function mergedPipeline(classes: readonly string[], multiplier: number): Pipeline<MergedCandidates, MergeRequest> {
  const key = `${classes.join(',')}|${multiplier}`;
  let pipeline = mergedPipelines.get(key);
  if (!pipeline) {
    // Class sets are few in practice; a bound keeps an adversarial client from growing the cache.
    if (mergedPipelines.size >= 256) mergedPipelines.clear();
    pipeline = new Pipeline({ filters: MERGED_FILTERS, weighers: classes.map((rc) => PLACEMENT_WEIGHERS.FreeCapacity(rc, multiplier)) });
    mergedPipelines.set(key, pipeline);
  }
  return pipeline;
}

/** A decision's stages for the trace; with `explain`, their first rejections with sentences (read before the next). */
function stagesOf(
  d: Decision, explain: boolean, who: (i: number) => { provider_uuid?: string; root_provider_uuid: string }, rc?: string,
): StageTrace[] {
  const rejected = explain ? d.rejected() : [];
  return d.stages.map((s) => {
    const stage: StageTrace = { name: s.name, ...(rc === undefined ? {} : { class: rc }), in: s.in, out: s.out, rejected: [] };
    for (const r of rejected) {
      if (r.stage !== s.name) continue;
      if (stage.rejected.length >= TRACE_REJECTIONS) break;
      stage.rejected.push({ ...who(r.index), code: r.code, reason: d.reason(r) });
    }
    return stage;
  });
}

/**
 * The target's steps through one decision: for each candidate `isTarget` picks, the filters it passed up to the
 * stage that refused it (only its sentences are built). Read before the pipeline's next decision.
 */
function targetSteps(
  d: Decision, n: number, isTarget: (i: number) => boolean, rootOf: (i: number) => string, rc?: string,
): TargetStep[] {
  const mine = new Map<number, Rejected>();
  for (const r of d.rejected()) if (isTarget(r.index)) mine.set(r.index, r);
  const steps: TargetStep[] = [];
  for (let i = 0; i < n; i++) {
    if (!isTarget(i)) continue;
    const refused = mine.get(i);
    const base = { ...(rc === undefined ? {} : { class: rc }), root_provider_uuid: rootOf(i) };
    for (const stage of d.stages) {
      if (refused && stage.name === refused.stage) {
        steps.push({ name: stage.name, ...base, passed: false, code: refused.code, reason: d.reason(refused) });
        break;
      }
      if (stage.kind === 'filter') steps.push({ name: stage.name, ...base, passed: true });
    }
  }
  return steps;
}

const choiceOf = (set: ProviderChoices) => (i: number) => ({ provider_uuid: set.provider(i).uuid, root_provider_uuid: set.anchor(i).uuid });

// ---------------------------------------------------------------- per group

/** Where a single-provider group's choices come from: an index of the model, or a tree. */
type Seeds = ReadonlySet<Provider> | ReadonlyMap<string, Provider> | readonly Provider[];
const isTree = (seeds: Seeds): seeds is readonly Provider[] => Array.isArray(seeds);

/**
 * The smallest index set that every candidate of a single-provider group must belong to, and the trait when it is
 * that trait's index (every seed has it).
 */
function seedProviders(model: PlacementModel, g: RequestGroup, treeRoot: Provider | null): { seeds: Seeds; trait: string | null } {
  let best: Seeds = model.providers;
  let bestSize = model.providers.size;
  let trait: string | null = null;
  const consider = (set: ReadonlySet<Provider>, of: string | null) => {
    if (set.size < bestSize) {
      best = set;
      bestSize = set.size;
      trait = of;
    }
  };
  for (const rc of g.resources.keys()) consider(model.providersWithClass(rc), null);
  for (const orSet of g.required) if (orSet.length === 1) consider(model.providersWithTrait(orSet[0]!), orSet[0]!);
  for (const orSet of g.memberOf) if (orSet.length === 1) consider(model.providersInAggregate(orSet[0]!), null);
  if (treeRoot) {
    const tree = model.treeOf(treeRoot);
    if (tree.length < bestSize) return { seeds: tree, trait: null };
  }
  return { seeds: best, trait };
}

function allocsOf(gc: GroupCandidate, g: RequestGroup): Alloc[] {
  if (gc.allocs) return gc.allocs;
  const p = gc.providers[0]!;
  return [...g.resources].map(([rc, amount]) => ({ provider: p, rc, amount }));
}

/** A single-provider group's decision: the choices that passed, and whether a sharing provider is among them. */
interface SingleProviderDecision {
  choices: ProviderChoices;
  chosen: Int32Array;
  sharing: boolean;
}

/** explain_target within one group: the provider followed and where its steps go. */
interface Follow {
  provider: Provider;
  group: TargetGroup;
}

/** One provider satisfies the whole group; a sharing provider once per anchor tree it serves. */
function singleProviderCandidates(
  model: PlacementModel, g: RequestGroup, q: ParsedQuery, treeRoot: Provider | null, trace: GroupTrace, explain: boolean,
  follow: Follow | null,
): SingleProviderDecision {
  const { seeds, trait } = seedProviders(model, g, treeRoot);
  const anySharing = model.sharingProviders().size > 0;
  const set = new ProviderChoices(model, false, [...g.resources.keys()], trait, isTree(seeds) ? seeds.length : seeds.size);
  const choicesOf = (into: ProviderChoices, p: Provider) => {
    if (anySharing && model.isSharing(p)) for (const anchor of model.anchorsOf(p)) into.add(p, anchor, anchor !== p.root);
    else into.add(p, p.root, false);
  };
  if (anySharing || isTree(seeds)) {
    for (const p of seeds.values()) choicesOf(set, p);
  } else {
    // Without sharing providers every choice is (provider, its root): from the index's slots, no provider visited.
    set.addOwnRoots(model.slotsOf(seeds));
  }
  const request: GroupRequest = { query: q, group: g, treeRoot };
  // The choices that pass, in a search's own array like the choices themselves (at 100,000 providers 200 KB a
  // request that V8 would count as external memory).
  const d = singleProviderPipeline.decide(set, request, { rankedInto: (n) => model.scratchRows.int32s(n) });
  trace.filters = stagesOf(d, explain, choiceOf(set));
  if (follow) {
    const isTarget = (i: number) => set.provider(i) === follow.provider;
    follow.group.filters.push(...targetSteps(d, set.length, isTarget, (i) => set.anchor(i).uuid));
    if (follow.group.filters.length === 0) {
      // Ruled out by the seed index: decide it alone (a check per candidate, so the verdict is its own). The
      // group's rejections were read above (this reuses the workspace); its ranking is its own array.
      const alone = new ProviderChoices(model, false, set.classes);
      choicesOf(alone, follow.provider);
      const own = singleProviderPipeline.decide(alone, request);
      follow.group.indexed = false;
      follow.group.filters.push(...targetSteps(own, alone.length, () => true, (i) => alone.anchor(i).uuid));
    }
  }
  const chosen = d.ranked;
  let sharing = false;
  if (anySharing) for (let k = 0; k < chosen.length && !sharing; k++) sharing = model.isSharing(set.provider(chosen[k]!));
  return { choices: set, chosen, sharing };
}

function groupCandidatesOf({ choices, chosen }: SingleProviderDecision): GroupCandidate[] {
  return Array.from(chosen, (i): GroupCandidate => ({ anchor: choices.anchor(i), allocs: null, providers: [choices.provider(i)] }));
}

/**
 * Items (0 … n − 1) grouped by their anchor slot without a map or list per tree: each anchor's items as a list
 * linked in item order, and the anchors in order of first appearance.
 */
class ByAnchor {
  /** Per anchor slot: how many items, and the first (−1 if none). */
  readonly count: Int32Array;
  readonly head: Int32Array;
  readonly #next: Int32Array;
  readonly anchors: Int32Array;
  anchorCount = 0;
  constructor(slotCount: number, n: number, anchorOf: (k: number) => number) {
    this.count = new Int32Array(slotCount);
    this.head = new Int32Array(slotCount).fill(-1);
    const tail = new Int32Array(slotCount);
    this.#next = new Int32Array(n).fill(-1);
    this.anchors = new Int32Array(n);
    for (let k = 0; k < n; k++) {
      const a = anchorOf(k);
      if (this.count[a]!++ === 0) {
        this.head[a] = k;
        this.anchors[this.anchorCount++] = a;
      } else {
        this.#next[tail[a]!] = k;
      }
      tail[a] = k;
    }
  }
  /** Anchor slot a's items, in order, mapped into `out`. */
  listInto<T>(a: number, out: T[], item: (k: number) => T): void {
    out.length = 0;
    for (let k = this.head[a]!; k !== -1; k = this.#next[k]!) out.push(item(k));
  }
}

/** One class's suppliers (a decision's ranked choices) per anchor, in the decision's order. */
class ClassSuppliers extends ByAnchor {
  /** Per supplier: its provider's slot. */
  readonly providerSlots: Int32Array;
  constructor(model: PlacementModel, readonly rc: string, readonly amount: number, set: ProviderChoices, ranked: Int32Array) {
    super(model.slotCount, ranked.length, (k) => set.anchorSlots[ranked[k]!]!);
    // (A loop: Int32Array.from with a mapping function takes the iterator's slow path.)
    this.providerSlots = new Int32Array(ranked.length);
    for (let k = 0; k < ranked.length; k++) this.providerSlots[k] = set.slots[ranked[k]!]!;
  }
}

/** A multi-provider group's decision: its combinations, and the ones that passed (in order). */
interface MultiProviderDecision {
  combinations: Combinations;
  chosen: Int32Array;
}

/** Each class independently from a provider of the tree or shared with it; every combination is a candidate. */
function multiProviderCandidates(
  model: PlacementModel, g: RequestGroup, q: ParsedQuery, treeRoot: Provider | null, trace: GroupTrace, explain: boolean,
  follow: Follow | null,
): MultiProviderDecision | 'no-capacity' {
  const anySharing = model.sharingProviders().size > 0;
  // Per class: the providers able to supply it, per anchor tree, in the decision's order.
  const perClass: ClassSuppliers[] = [];
  for (const [rc, amount] of g.resources) {
    const set = new ProviderChoices(model, true, [rc]);
    for (const p of model.providersWithClass(rc)) {
      set.add(p, p.root, false);
      // Sharing candidates are skipped under in_tree.
      if (anySharing && model.isSharing(p) && !treeRoot) for (const anchor of model.anchorsOf(p)) if (anchor !== p.root) set.add(p, anchor, true);
    }
    const d = classSupplierPipeline.decide(set, { query: q, group: g, treeRoot });
    const stages = stagesOf(d, explain, choiceOf(set), rc);
    trace.filters.push(...stages);
    if (follow) follow.group.filters.push(...targetSteps(d, set.length, (i) => set.provider(i) === follow.provider, (i) => set.anchor(i).uuid, rc));
    if ((stages.find((s) => s.name === 'Capacity')?.out ?? 0) === 0) return 'no-capacity';
    perClass.push(new ClassSuppliers(model, rc, amount, set, d.ranked));
  }
  // The class with the fewest anchors leads (stable: ties keep the request's order), its anchors in its order.
  perClass.sort((a, b) => a.anchorCount - b.anchorCount);
  const C = perClass.length;
  const combinations = new Combinations(model, perClass.map((c) => c.rc), perClass.map((c) => c.amount));
  if (C === 0) return { combinations, chosen: new Int32Array(0) };
  const lead = perClass[0]!;
  // Per class, one tree's supplier slots (reused from tree to tree).
  const lists: number[][] = Array.from({ length: C }, () => []);
  const choice = new Array<number>(C).fill(0);
  for (let k = 0; k < lead.anchorCount; k++) {
    const a = lead.anchors[k]!;
    let product = 1;
    for (let c = 0; c < C; c++) product *= perClass[c]!.count[a]!;
    if (product === 0) continue;
    if (product === 1) {
      // One supplier per class: one combination (most trees).
      const i = combinations.add(a);
      for (let c = 0; c < C; c++) combinations.supplierSlots[i * C + c] = perClass[c]!.providerSlots[perClass[c]!.head[a]!]!;
      continue;
    }
    for (let c = 0; c < C; c++) {
      const suppliers = perClass[c]!;
      suppliers.listInto(a, lists[c]!, (k) => suppliers.providerSlots[k]!);
    }
    // Cartesian product: each class wholly from one provider.
    choice.fill(0);
    for (;;) {
      const i = combinations.add(a);
      for (let c = 0; c < C; c++) combinations.supplierSlots[i * C + c] = lists[c]![choice[c]!]!;
      if (!nextCombination(choice, lists)) break;
    }
  }
  const d = combinationPipeline.decide(combinations, { query: q, group: g, treeRoot });
  trace.filters.push(...stagesOf(d, explain, (i) => ({ root_provider_uuid: combinations.anchor(i).uuid })));
  if (follow) {
    follow.group.filters.push(...targetSteps(d, combinations.length, (i) => combinations.suppliers(i).includes(follow.provider),
      (i) => combinations.anchor(i).uuid));
  }
  return { combinations, chosen: d.ranked };
}

/** A multi-provider group's chosen combinations as group candidates, for the merge with other groups. */
function combinationGroupCandidates({ combinations, chosen }: MultiProviderDecision): GroupCandidate[] {
  const { model, classes, amounts, supplierSlots } = combinations;
  const C = classes.length;
  const out: GroupCandidate[] = new Array<GroupCandidate>(chosen.length);
  for (let k = 0; k < chosen.length; k++) {
    const i = chosen[k]!;
    const anchor = combinations.anchor(i);
    const allocs: Alloc[] = [];
    for (let c = 0; c < C; c++) allocs.push({ provider: model.providerAt(supplierSlots[i * C + c]!), rc: classes[c]!, amount: amounts[c]! });
    out[k] = { anchor, allocs, providers: combinations.suppliers(i) };
  }
  return out;
}

// ---------------------------------------------------------------- merging

/**
 * A merged candidate's identity, written in pieces (joined, they are its key): its providers by uuid, each with its
 * "class:amount" sorted by class, then each group's suffix (in suffix order) with its providers' uuids sorted. The
 * items are the first `n` summed amounts in the scratch lists, sorted here (a candidate has a handful). Every kind
 * of candidate writes its key through these two, so the formats cannot drift apart.
 */
function writeKeyItems(n: number, visit: (piece: string) => void, items?: readonly string[]): void {
  const order = keyOrder;
  order.length = n;
  for (let k = 0; k < n; k++) order[k] = k;
  // By provider uuid, then class (distinct within a provider): insertion sort.
  for (let k = 1; k < n; k++) {
    const x = order[k]!;
    const ux = scratchProviders[x]!.uuid;
    const rx = scratchClasses[x]!;
    let j = k - 1;
    for (; j >= 0; j--) {
      const y = order[j]!;
      const uy = scratchProviders[y]!.uuid;
      if (uy < ux || (uy === ux && scratchClasses[y]! < rx)) break;
      order[j + 1] = y;
    }
    order[j + 1] = x;
  }
  for (let k = 0; k < n; k++) {
    const x = order[k]!;
    const p = scratchProviders[x]!;
    if (k > 0 && scratchProviders[order[k - 1]!] === p) {
      visit(',');
    } else {
      if (k > 0) visit(';');
      visit(p.uuid);
      visit('=');
    }
    // Item x's "class:amount" when the kind of candidate built it up front, else in its pieces.
    if (items) {
      visit(items[x]!);
    } else {
      visit(scratchClasses[x]!);
      visit(':');
      visit(String(scratchAmounts[x]!));
    }
  }
  visit(n > 0 ? ';|' : '|');
}

/** One group's part of the key: ";suffix=" and its providers' uuids sorted, apart by commas. */
function writeKeyGroup(suffix: string, providers: readonly Provider[], visit: (piece: string) => void): void {
  visit(';');
  visit(suffix);
  visit('=');
  if (providers.length === 1) {
    visit(providers[0]!.uuid);
  } else if (providers.length === 2) {
    // (Two suppliers, the multi-provider path's usual case: no array sorted.)
    const a = providers[0]!.uuid;
    const b = providers[1]!.uuid;
    visit(b < a ? b : a);
    visit(',');
    visit(b < a ? a : b);
  } else {
    visit(providers.map((p) => p.uuid).sort().join(','));
  }
}

/** A candidate's key: its pieces joined. */
function joinedKey(c: { keyPieces(visit: (piece: string) => void): void }): string {
  joined = '';
  c.keyPieces(join);
  const key = joined;
  joined = '';
  return key;
}
let joined = '';
const join = (piece: string): void => {
  joined += piece;
};
const keyOrder: number[] = [];

/** The groups' positions in suffix order: the same for every candidate of a search, so kept for the last groups seen. */
function suffixOrder(groups: readonly RequestGroup[]): readonly number[] {
  if (groups !== lastGroups) {
    lastGroups = groups;
    lastOrder = groups.length === 1 ? [0] : [...groups.keys()].sort((a, b) => (groups[a]!.suffix < groups[b]!.suffix ? -1 : 1));
  }
  return lastOrder;
}
let lastGroups: readonly RequestGroup[] | null = null;
let lastOrder: readonly number[] = [];

/**
 * A merged allocation request: one choice per group. Its maps and key are built when first read (the serialiser,
 * a tie within its tree, de-duplication, a weigher): an unranked search over many candidates reads none of them.
 */
class MergedCandidate implements Candidate {
  #key: string | undefined;
  #allocations: Map<Provider, Map<string, number>> | undefined;
  #mappings: Map<string, Provider[]> | undefined;
  constructor(readonly anchor: Provider, readonly parts: readonly GroupCandidate[], readonly groups: readonly RequestGroup[]) {}
  get key(): string {
    return (this.#key ??= joinedKey(this));
  }
  keyPieces(visit: (piece: string) => void): void {
    writeKeyItems(this.summed(), visit);
    for (const i of suffixOrder(this.groups)) writeKeyGroup(this.groups[i]!.suffix, this.parts[i]!.providers, visit);
  }
  /** Amounts of the same provider and class summed, providers and classes in order of first appearance. */
  get allocations(): Map<Provider, Map<string, number>> {
    if (this.#allocations) return this.#allocations;
    const allocations = new Map<Provider, Map<string, number>>();
    this.parts.forEach((gc, i) => {
      for (const a of allocsOf(gc, this.groups[i]!)) {
        let res = allocations.get(a.provider);
        if (!res) allocations.set(a.provider, (res = new Map()));
        res.set(a.rc, (res.get(a.rc) ?? 0) + a.amount);
      }
    });
    return (this.#allocations = allocations);
  }
  get mappings(): Map<string, Provider[]> {
    if (this.#mappings) return this.#mappings;
    const mappings = new Map<string, Provider[]>();
    this.parts.forEach((gc, i) => mappings.set(this.groups[i]!.suffix, gc.providers));
    return (this.#mappings = mappings);
  }
  /**
   * Each (provider, class) of the request once with its summed amount, in no particular order, without building
   * the maps (an unranked search's filters and headroom read every candidate's amounts).
   */
  eachSummed(visit: (provider: Provider, rc: string, amount: number) => void): void {
    const n = this.summed();
    // (`visit` must not read another candidate's: the list is shared.)
    for (let k = 0; k < n; k++) visit(scratchProviders[k]!, scratchClasses[k]!, scratchAmounts[k]!);
  }
  /** The summed amounts into the shared scratch list (from the maps once built); their count. */
  summed(): number {
    let n = 0;
    if (this.#allocations) {
      for (const [p, res] of this.#allocations) {
        for (const [rc, amount] of res) {
          scratchProviders[n] = p;
          scratchClasses[n] = rc;
          scratchAmounts[n++] = amount;
        }
      }
      return n;
    }
    if (this.parts.length === 1) {
      // One group names each class once: its amounts are distinct (provider, class) already.
      const gc = this.parts[0]!;
      if (gc.allocs) {
        for (const a of gc.allocs) {
          scratchProviders[n] = a.provider;
          scratchClasses[n] = a.rc;
          scratchAmounts[n++] = a.amount;
        }
      } else {
        const p = gc.providers[0]!;
        for (const [rc, amount] of this.groups[0]!.resources) {
          scratchProviders[n] = p;
          scratchClasses[n] = rc;
          scratchAmounts[n++] = amount;
        }
      }
      return n;
    }
    // A candidate has a handful of amounts: summed in a list searched in order.
    for (let i = 0; i < this.parts.length; i++) {
      const gc = this.parts[i]!;
      if (gc.allocs) for (const a of gc.allocs) n = addSummed(n, a.provider, a.rc, a.amount);
      else for (const [rc, amount] of this.groups[i]!.resources) n = addSummed(n, gc.providers[0]!, rc, amount);
    }
    return n;
  }
}
const scratchProviders: Provider[] = [];
const scratchClasses: string[] = [];
const scratchAmounts: number[] = [];
/** Adds an amount to the first `n` summed ones; the new count. */
function addSummed(n: number, p: Provider, rc: string, amount: number): number {
  for (let k = 0; k < n; k++) {
    if (scratchProviders[k] === p && scratchClasses[k] === rc) {
      scratchAmounts[k]! += amount;
      return n;
    }
  }
  scratchProviders[n] = p;
  scratchClasses[n] = rc;
  scratchAmounts[n] = amount;
  return n + 1;
}

/** The candidates of every group combined per anchor tree (cartesian product), de-duplicated, in order. */
function merge(groupCandidates: GroupCandidate[][], groups: RequestGroup[], sharing: boolean): Candidate[] {
  const out: Candidate[] = [];
  // Sharing providers with several anchors can repeat a request (and, kept to be safe, merged groups one of which
  // takes classes from several providers). Without sharing providers, one group cannot (its candidates differ in
  // the provider of some class), nor can groups each served by one provider (their candidates differ in some
  // group's provider, which the mappings name): then no key is built here.
  const repeats = sharing || (groupCandidates.length > 1 && groupCandidates.some((list) => list.some((gc) => gc.allocs !== null)));
  const seen = repeats ? new Set<string>() : null;
  const add = (parts: GroupCandidate[]) => {
    const c = new MergedCandidate(parts[0]!.anchor, parts, groups);
    if (seen) {
      if (seen.has(c.key)) return;
      seen.add(c.key);
    }
    out.push(c);
  };
  if (groupCandidates.length === 1) {
    for (const gc of groupCandidates[0]!) add([gc]);
    return out;
  }
  // (Every list has a candidate: an empty group ended the search.)
  const slots = Math.max(...groupCandidates.map(maxAnchorSlot)) + 1;
  const byAnchor = groupCandidates.map((list) => new ByAnchor(slots, list.length, (k) => list[k]!.anchor.slot));
  // The group with the fewest anchors leads (the first of equals), its anchors in its order.
  const lead = byAnchor.reduce((a, b) => (a.anchorCount <= b.anchorCount ? a : b));
  const G = groupCandidates.length;
  const lists: GroupCandidate[][] = Array.from({ length: G }, () => []);
  const choice = new Array<number>(G).fill(0);
  for (let k = 0; k < lead.anchorCount; k++) {
    const a = lead.anchors[k]!;
    let product = 1;
    for (let i = 0; i < G; i++) product *= byAnchor[i]!.count[a]!;
    if (product === 0) continue;
    if (product === 1) {
      // One choice per group in this tree (most trees): one request.
      add(groupCandidates.map((list, i) => list[byAnchor[i]!.head[a]!]!));
      continue;
    }
    for (let i = 0; i < G; i++) byAnchor[i]!.listInto(a, lists[i]!, (k) => groupCandidates[i]![k]!);
    choice.fill(0);
    for (;;) {
      add(lists.map((l, i) => l[choice[i]!]!));
      if (!nextCombination(choice, lists)) break;
    }
  }
  return out;
}

function maxAnchorSlot(list: readonly GroupCandidate[]): number {
  let max = -1;
  for (const gc of list) if (gc.anchor.slot > max) max = gc.anchor.slot;
  return max;
}

/** Merged candidates built up front. */
class BuiltCandidates implements MergedCandidates {
  readonly oneProviderEach = false;
  constructor(readonly model: PlacementModel, readonly list: readonly Candidate[]) {}
  get length(): number {
    return this.list.length;
  }
  candidate(i: number): Candidate {
    return this.list[i]!;
  }
  anchor(i: number): Provider {
    return this.list[i]!.anchor;
  }
  key(i: number): string {
    return this.list[i]!.key;
  }
  freeInto(rc: string, at: Int32Array, count: number, out: Float64Array): void {
    out.fill(0, 0, count);
    // capacity() and usage from the class's column (without one no provider has the class: no candidate takes it).
    const free = this.model.column(rc)?.free;
    if (!free) return;
    for (let k = 0; k < count; k++) {
      for (const [p, res] of this.list[at[k]!]!.allocations) {
        if (res.has(rc)) out[k]! += free[p.slot]!;
      }
    }
  }
}

/**
 * One multi-provider group's chosen combinations as the candidates (candidate i is combination chosen[i]), built
 * only when read (the serialiser's, a tie's, an unranked search's), each once.
 */
class CombinationCandidates implements MergedCandidates {
  readonly oneProviderEach = false;
  readonly #keys: CombinationKeys;
  readonly #chosen: Int32Array;
  readonly #built: Array<CombinationCandidate | undefined>;
  constructor({ combinations, chosen }: MultiProviderDecision, suffix: string) {
    const { classes, amounts } = combinations;
    this.#keys = { combinations, suffix, items: classes.map((rc, c) => rc + ':' + amounts[c]!) };
    this.#chosen = chosen;
    this.#built = new Array<CombinationCandidate | undefined>(chosen.length);
  }
  get length(): number {
    return this.#chosen.length;
  }
  candidate(i: number): Candidate {
    return (this.#built[i] ??= new CombinationCandidate(this.#keys, this.#chosen[i]!));
  }
  anchor(i: number): Provider {
    return this.#keys.combinations.anchor(this.#chosen[i]!);
  }
  key(i: number): string {
    return this.candidate(i).key;
  }
  freeInto(rc: string, at: Int32Array, count: number, out: Float64Array): void {
    const { combinations } = this.#keys;
    const c = combinations.classes.indexOf(rc);
    const C = combinations.classes.length;
    // Each class comes wholly from one supplier, which passed its Capacity check (so it has the class's column).
    const free = c === -1 ? undefined : combinations.model.column(rc)?.free;
    if (!free) {
      out.fill(0, 0, count);
      return;
    }
    const slots = combinations.supplierSlots;
    const chosen = this.#chosen;
    for (let k = 0; k < count; k++) out[k] = free[slots[chosen[at[k]!]! * C + c]!]!;
  }
}

/** What one group's combinations as candidates share. */
interface CombinationKeys {
  combinations: Combinations;
  suffix: string;
  /** Per class (the combinations' order, the scratch lists' while a key is written): "class:amount", the key's item. */
  items: readonly string[];
}

/**
 * Combination `index` of one multi-provider group as a candidate: each class wholly from one supplier. Its maps
 * and key are built when first read, like a MergedCandidate's, and the same (a merge of this group alone).
 */
class CombinationCandidate implements Candidate {
  readonly anchor: Provider;
  #key: string | undefined;
  #allocations: Map<Provider, Map<string, number>> | undefined;
  #mappings: Map<string, Provider[]> | undefined;
  constructor(readonly keys: CombinationKeys, readonly index: number) {
    this.anchor = keys.combinations.anchor(index);
  }
  /** Class c's supplier's slot. */
  #slot(c: number): number {
    const { classes, supplierSlots } = this.keys.combinations;
    return supplierSlots[this.index * classes.length + c]!;
  }
  /** Providers in order of first appearance, each with its classes in the combinations' class order. */
  get allocations(): Map<Provider, Map<string, number>> {
    if (this.#allocations) return this.#allocations;
    const allocations = new Map<Provider, Map<string, number>>();
    const { model, classes, amounts } = this.keys.combinations;
    for (let c = 0; c < classes.length; c++) {
      const p = model.providerAt(this.#slot(c));
      let res = allocations.get(p);
      if (!res) allocations.set(p, (res = new Map()));
      res.set(classes[c]!, amounts[c]!);
    }
    return (this.#allocations = allocations);
  }
  get mappings(): Map<string, Provider[]> {
    return (this.#mappings ??= new Map([[this.keys.suffix, this.keys.combinations.suppliers(this.index)]]));
  }
  get key(): string {
    return (this.#key ??= joinedKey(this));
  }
  /** Each class's (supplier, class, amount): the (provider, class) pairs are distinct, the classes being so. */
  eachSummed(visit: (provider: Provider, rc: string, amount: number) => void): void {
    const { model, classes, amounts } = this.keys.combinations;
    for (let c = 0; c < classes.length; c++) visit(model.providerAt(this.#slot(c)), classes[c]!, amounts[c]!);
  }
  /** The key a merge of this group alone gives its candidate: the same writers. */
  keyPieces(visit: (piece: string) => void): void {
    const { model, classes, amounts } = this.keys.combinations;
    const C = classes.length;
    for (let c = 0; c < C; c++) {
      scratchProviders[c] = model.providerAt(this.#slot(c));
      scratchClasses[c] = classes[c]!;
      scratchAmounts[c] = amounts[c]!;
    }
    writeKeyItems(C, visit, this.keys.items);
    writeKeyGroup(this.keys.suffix, this.keys.combinations.suppliers(this.index), visit);
  }
}

/**
 * One provider serving the one group: its maps are built only if read (the serialiser reads `single`), and its key
 * too: reading the uuid when each candidate is made was a read of every kept provider's object, right after a
 * request's syscalls had emptied the caches and TLB (1,000 providers, 400 candidates, each timed after the server's
 * own answer: about 48 µs of 1.3 ms, 2026-12-05).
 */
class OneProviderCandidate implements Candidate {
  #allocations: Map<Provider, Map<string, number>> | undefined;
  #mappings: Map<string, Provider[]> | undefined;
  constructor(readonly anchor: Provider, readonly single: Provider, readonly resources: Map<string, number>, readonly suffix: string) {}
  get key(): string {
    return this.single.uuid;
  }
  get allocations(): Map<Provider, Map<string, number>> {
    return (this.#allocations ??= new Map([[this.single, this.resources]]));
  }
  get mappings(): Map<string, Provider[]> {
    return (this.#mappings ??= new Map([[this.suffix, [this.single]]]));
  }
}

/**
 * The common case (one group, each candidate one provider, no sharing): read straight from the group's choices
 * (candidate i is choice chosen[i]); candidates are built only for the ones kept, so that limit=50 over 100,000
 * providers does not materialise 100,000 of them.
 */
class OneProviderCandidates implements MergedCandidates {
  readonly oneProviderEach = true;
  readonly #choices: ProviderChoices;
  readonly #chosen: Int32Array;
  readonly #suffix: string;
  /** Every candidate requests the same amounts: one map for all (read only). */
  readonly #resources: Map<string, number>;
  constructor(decision: SingleProviderDecision, group: RequestGroup) {
    this.#choices = decision.choices;
    this.#chosen = decision.chosen;
    this.#suffix = group.suffix;
    this.#resources = new Map(group.resources);
  }
  get length(): number {
    return this.#chosen.length;
  }
  /** Built on demand: no filter reads it here, so only the kept candidates are built (once each). */
  candidate(i: number): Candidate {
    return new OneProviderCandidate(this.anchor(i), this.#choices.provider(this.#chosen[i]!), this.#resources, this.#suffix);
  }
  anchor(i: number): Provider {
    return this.#choices.anchor(this.#chosen[i]!);
  }
  key(i: number): string {
    return this.#choices.provider(this.#chosen[i]!).uuid;
  }
  /**
   * The tie order (anchor uuid, then key) as one number per candidate, from the model's uuid ranks. Scratch: read
   * only while this search ranks (about 400 KB at 100,000 providers, which V8 counted as external allocation).
   */
  tieOrder(): Float64Array {
    const { model, slots, anchorSlots } = this.#choices;
    const ranks = model.uuidRanks();
    const base = model.slotCount;
    const order = model.scratchRows.float64s(this.#chosen.length);
    for (let i = 0; i < order.length; i++) {
      const c = this.#chosen[i]!;
      order[i] = ranks[anchorSlots[c]!]! * base + ranks[slots[c]!]!;
    }
    return order;
  }
  freeInto(rc: string, at: Int32Array, count: number, out: Float64Array): void {
    // Every candidate passed the Capacity check of rc: its provider has the class's column.
    const free = this.#choices.model.column(rc)!.free;
    const slots = this.#choices.slots;
    const chosen = this.#chosen;
    for (let k = 0; k < count; k++) out[k] = free[slots[chosen[at[k]!]!]!]!;
  }
}

// ---------------------------------------------------------------- the search

function unknownTrait(model: PlacementModel, names: Iterable<string>): string | undefined {
  for (const t of names) if (!model.traits.has(t)) return t;
  return undefined;
}

export function findCandidates(model: PlacementModel, q: ParsedQuery, options: SearchOptions): SearchResult {
  // The arrays of the last search (its choices, verdict rows, hit counts) are done with: nothing returned keeps one.
  model.scratchRows.begin();
  const trace: SearchTrace = { groups: [], filters: [], merged: 0, returned: 0 };
  const explain = options.explain === true;
  const target: TargetTrace | undefined = options.target
    ? { provider_uuid: options.target.uuid, groups: [], filters: [], weighed: [] }
    : undefined;

  // DB phase, in Placement's order: root_required, then each group in order of first appearance.
  if (q.rootRequired) {
    const bad = unknownTrait(model, [...q.rootRequired.required, ...q.rootRequired.forbidden]);
    if (bad !== undefined) throw badRequest(`No such trait(s): ${bad}.`);
    let anyRoot = false;
    const rootOk = rootRequiredCheck(q);
    for (const p of model.providers.values()) {
      if (p.parent === null && rootOk(p)) {
        anyRoot = true;
        break;
      }
    }
    if (!anyRoot) return empty(trace, 'no root provider satisfies root_required', target);
  }
  const multiPossible = model.nestedCount > 0 || model.sharingProviders().size > 0;
  const perGroup: GroupCandidate[][] = [];
  let onlyGroup: SingleProviderDecision | null = null;
  let onlyCombinations: MultiProviderDecision | null = null;
  for (const g of q.groups) {
    for (const rc of g.resources.keys()) {
      if (!model.resourceClasses.has(rc)) {
        throw badRequest(`Invalid resource class in resources parameter: No such resource class ${rc}.`);
      }
    }
    for (const orSet of g.memberOf) {
      if (!orSet.some((agg) => model.providersInAggregate(agg).size > 0)) {
        return empty(trace, `group '${g.suffix}': no provider is in any of the aggregates ${orSet.join(', ')}`, target);
      }
    }
    const bad = unknownTrait(model, [...g.required.flat(), ...g.forbidden]);
    if (bad !== undefined) throw badRequest(`No such trait(s): ${bad}.`);
    let treeRoot: Provider | null = null;
    if (g.inTree !== null) {
      const p = model.providers.get(g.inTree);
      if (!p) return empty(trace, `group '${g.suffix}': in_tree provider ${g.inTree} does not exist`, target);
      treeRoot = p.root;
    }
    // (e) no provider has room for some class: 200 empty, stop. The per-class maximum is cached until the next
    // change, so a request that fits nowhere costs no scan; finer cases are left to (f), with the same answer.
    for (const [rc, amount] of g.resources) {
      if (amount > model.maxFreeAmount(rc)) return empty(trace, `group '${g.suffix}': no provider has capacity for ${rc}:${amount}`, target);
    }
    const single = g.suffix !== '' || !multiPossible;
    const groupTrace: GroupTrace = { suffix: g.suffix, path: single ? 'single-provider' : 'multi-provider', candidates: 0, filters: [] };
    trace.groups.push(groupTrace);
    const follow: Follow | null = options.target
      ? { provider: options.target, group: { suffix: g.suffix, path: groupTrace.path, indexed: true, filters: [] } }
      : null;
    if (follow) target!.groups.push(follow.group);
    if (single) {
      const decided = singleProviderCandidates(model, g, q, treeRoot, groupTrace, explain, follow);
      groupTrace.candidates = decided.chosen.length;
      if (decided.chosen.length === 0) return empty(trace, `group '${g.suffix}' has no candidates`, target);
      // One group served by single non-sharing providers: nothing to merge.
      if (q.groups.length === 1 && !decided.sharing) onlyGroup = decided;
      else perGroup.push(groupCandidatesOf(decided));
    } else {
      const found = multiProviderCandidates(model, g, q, treeRoot, groupTrace, explain, follow);
      if (found === 'no-capacity') return empty(trace, `group '${g.suffix}': no provider has capacity`, target);
      groupTrace.candidates = found.chosen.length;
      if (found.chosen.length === 0) return empty(trace, `group '${g.suffix}' has no candidates`, target);
      // One group, no sharing provider (no request repeats): its combinations are the candidates, nothing to merge.
      if (q.groups.length === 1 && model.sharingProviders().size === 0) onlyCombinations = found;
      else perGroup.push(combinationGroupCandidates(found));
    }
  }

  const one = onlyGroup ? new OneProviderCandidates(onlyGroup, q.groups[0]!) : null;
  const set: MergedCandidates = one ?? (onlyCombinations ? new CombinationCandidates(onlyCombinations, q.groups[0]!.suffix)
    : new BuiltCandidates(model, merge(perGroup, q.groups, model.sharingProviders().size > 0)));
  trace.merged = set.length;

  const mergeRequest: MergeRequest = { query: q, model, nestedAware: options.nestedAware !== false };
  if (options.unranked) {
    const passed = mergedFiltersPipeline.decide(set, mergeRequest).ranked;
    return { candidates: Array.from(passed, (i) => set.candidate(i)), total: passed.length, trace };
  }
  const classes = [...new Set(q.groups.flatMap((g) => [...g.resources.keys()]))];
  const pipeline = mergedPipeline(classes, options.freeCapacityMultiplier ?? 1);
  const d = pipeline.decide(set, mergeRequest, {
    limit: q.limit ?? undefined,
    random: options.randomize ? options.random ?? Math.random : undefined,
    tieBreak: (a, b) => {
      const ua = set.anchor(a).uuid;
      const ub = set.anchor(b).uuid;
      if (ua !== ub) return ua < ub ? -1 : 1;
      const ka = set.key(a);
      const kb = set.key(b);
      return ka < kb ? -1 : ka > kb ? 1 : 0;
    },
    ...(one && !options.randomize ? { tieOrder: one.tieOrder() } : {}),
    trace: explain && !options.randomize,
  });
  trace.filters = stagesOf(d, explain, (i) => ({ root_provider_uuid: set.anchor(i).uuid }));
  if (explain) {
    trace.weighed = options.randomize ? 'randomized' : d.trace!.weighed.map((w, k) => ({
      index: k, root_provider_uuid: set.anchor(w.index).uuid, weight: w.weight, weighers: w.weighers,
    }));
  }
  const candidates: Candidate[] = [];
  for (let k = 0; k < d.ranked.length; k++) candidates.push(set.candidate(d.ranked[k]!));
  trace.returned = candidates.length;
  if (options.target) {
    const p = options.target;
    const hasTarget = (i: number) => (set.oneProviderEach ? set.key(i) === p.uuid : involves(set.candidate(i), p));
    target!.filters = targetSteps(d, set.length, hasTarget, (i) => set.anchor(i).uuid);
    target!.weighed = options.randomize ? 'randomized' : targetWeights(pipeline, set, mergeRequest, d, hasTarget);
  }
  return { candidates, total: d.passed, trace, ...(target ? { target } : {}) };
}

/** The provider supplies the candidate or is named in one of its mappings (a resourceless group). */
function involves(c: Candidate, p: Provider): boolean {
  if (c.allocations.has(p)) return true;
  for (const providers of c.mappings.values()) if (providers.includes(p)) return true;
  return false;
}

/** The weights of the returned candidates `hasTarget` picks, normalised among every candidate that passed (as ranked). */
function targetWeights(
  pipeline: Pipeline<MergedCandidates, MergeRequest>, set: MergedCandidates, request: MergeRequest, d: Decision,
  hasTarget: (i: number) => boolean,
): WeighedTrace[] {
  const out: WeighedTrace[] = [];
  const picked = Array.from(d.ranked.keys()).filter((k) => hasTarget(d.ranked[k]!));
  if (picked.length === 0) return out;
  const refused = new Uint8Array(set.length);
  for (const r of d.rejected()) refused[r.index] = 1;
  const passing = Int32Array.from({ length: set.length }, (_, i) => i).filter((i) => refused[i] === 0);
  for (const k of picked) {
    const w = pipeline.weightsOf(set, request, passing, d.ranked[k]!);
    out.push({ index: k, root_provider_uuid: set.anchor(d.ranked[k]!).uuid, weight: d.weights[k]!, weighers: w?.weighers ?? {} });
  }
  return out;
}

/** Advances `choice` like an odometer over the cartesian product of `lists`; false once every combination was seen. */
function nextCombination(choice: number[], lists: ReadonlyArray<{ length: number } | undefined>): boolean {
  for (let i = 0; i < lists.length; i++) {
    choice[i]!++;
    if (choice[i]! < lists[i]!.length) return true;
    choice[i] = 0;
  }
  return false;
}
