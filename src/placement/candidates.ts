// GET /allocation_candidates: request groups → candidates per group → merge by anchor tree → filters → ranking.
// Follows Placement 8 (objects/allocation_candidate.py, research_context.py): the single-provider and
// multi-provider paths, sharing providers, the DB-phase order of "unknown name" (400) and "nothing found"
// (200 empty) answers, the post-merge capacity re-check. Pure over the in-memory model.
import { normalize } from '../pipeline/engine.ts';
import type { Filter, Rejection } from '../pipeline/types.ts';
import { capacity, fits, fitsMerged } from './capacity.ts';
import { badRequest } from './errors.ts';
import type { PlacementModel, Provider } from './model.ts';
import type { ParsedQuery, RequestGroup } from './query.ts';

/** One group's way of being satisfied: the providers it takes each class from, within one anchor tree. */
export interface Alloc {
  provider: Provider;
  rc: string;
  amount: number;
}

export interface GroupCandidate {
  anchor: Provider;
  /** null for a single-provider candidate: every class of the group comes from providers[0] (saves allocations). */
  allocs: Alloc[] | null;
  /** Providers that satisfied the group (the mapping). */
  providers: Provider[];
  fromSharing: boolean;
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
  weight: number;
  weighers: Record<string, { raw: number; normalized: number }>;
  /** Set when the whole request is one group served by this one provider (the serialiser reuses one fragment). */
  single?: Provider;
}

export interface SearchOptions {
  randomize: boolean;
  /** False below microversion 1.29: requests using more than one provider of a tree are dropped (§2.5). */
  nestedAware?: boolean;
  random?: () => number;
}

export interface GroupTrace {
  suffix: string;
  path: 'single-provider' | 'multi-provider';
  candidates: number;
}

export interface SearchTrace {
  groups: GroupTrace[];
  /** Why the search stopped early with no candidates, if it did. */
  stopped?: string;
  filters: Array<{ name: string; in: number; out: number; rejected: Array<{ root_provider_uuid: string; reason: string }> }>;
  merged: number;
  returned: number;
}

export interface SearchResult {
  candidates: Candidate[];
  /** Every candidate that passed, before limit (count only). */
  total: number;
  trace: SearchTrace;
}

const empty = (trace: SearchTrace, why: string): SearchResult => {
  trace.stopped = why;
  return { candidates: [], total: 0, trace };
};

function hasAllOrSets(traits: ReadonlySet<string>, orSets: readonly string[][]): boolean {
  for (const set of orSets) if (!set.some((t) => traits.has(t))) return false;
  return true;
}
function hasNone(values: ReadonlySet<string>, forbidden: ReadonlySet<string>): boolean {
  for (const f of forbidden) if (values.has(f)) return false;
  return true;
}
function inAggregates(p: Provider, memberOf: readonly string[][]): boolean {
  return hasAllOrSets(p.aggregates, memberOf);
}
function rootRequiredOk(anchor: Provider, q: ParsedQuery): boolean {
  if (!q.rootRequired) return true;
  for (const t of q.rootRequired.required) if (!anchor.traits.has(t)) return false;
  return hasNone(anchor.traits, q.rootRequired.forbidden);
}

/** The smallest index set that every candidate of a single-provider group must belong to. */
function seedProviders(model: PlacementModel, g: RequestGroup, treeRoot: Provider | null): Iterable<Provider> {
  let best: Iterable<Provider> = model.providers.values();
  let bestSize = model.providers.size;
  const consider = (set: ReadonlySet<Provider>) => {
    if (set.size < bestSize) {
      best = set;
      bestSize = set.size;
    }
  };
  for (const rc of g.resources.keys()) consider(model.providersWithClass(rc));
  for (const orSet of g.required) if (orSet.length === 1) consider(model.providersWithTrait(orSet[0]!));
  for (const orSet of g.memberOf) if (orSet.length === 1) consider(model.providersInAggregate(orSet[0]!));
  if (treeRoot) {
    const tree = model.treeOf(treeRoot);
    if (tree.length < bestSize) return tree;
  }
  return best;
}

export function allocsOf(gc: GroupCandidate, g: RequestGroup): Alloc[] {
  if (gc.allocs) return gc.allocs;
  const p = gc.providers[0]!;
  return [...g.resources].map(([rc, amount]) => ({ provider: p, rc, amount }));
}

/**
 * One provider satisfies the whole group. `free`, when given, receives per class (in the group's order) the free
 * capacity of each candidate's provider, for ranking without a second pass.
 */
function singleProviderCandidates(
  model: PlacementModel, g: RequestGroup, q: ParsedQuery, treeRoot: Provider | null, free?: number[][],
): GroupCandidate[] {
  const out: GroupCandidate[] = [];
  const resources = [...g.resources];
  const anySharing = model.sharingProviders().size > 0;
  const row = new Array<number>(resources.length);
  for (const p of seedProviders(model, g, treeRoot)) {
    if (treeRoot && p.root !== treeRoot) continue;
    let ok = true;
    for (let k = 0; k < resources.length; k++) {
      const [rc, amount] = resources[k]!;
      const inv = p.inventories.get(rc);
      const used = p.used.get(rc) ?? 0;
      if (!inv || !fits(inv, used, amount)) {
        ok = false;
        break;
      }
      row[k] = capacity(inv) - used;
    }
    if (!ok) continue;
    if (g.required.length > 0 && !hasAllOrSets(p.traits, g.required)) continue;
    if (g.forbidden.size > 0 && !hasNone(p.traits, g.forbidden)) continue;
    if (g.memberOf.length > 0 && !inAggregates(p, g.memberOf)) continue;
    if (g.forbiddenAggs.size > 0 && !hasNone(p.aggregates, g.forbiddenAggs)) continue;
    if (anySharing && model.isSharing(p)) {
      for (const anchor of model.anchorsOf(p)) {
        if (rootRequiredOk(anchor, q)) out.push({ anchor, allocs: null, providers: [p], fromSharing: true });
      }
    } else if (rootRequiredOk(p.root, q)) {
      out.push({ anchor: p.root, allocs: null, providers: [p], fromSharing: false });
      if (free) for (let k = 0; k < resources.length; k++) free[k]!.push(row[k]!);
    }
  }
  return out;
}

function multiProviderCandidates(
  model: PlacementModel, g: RequestGroup, q: ParsedQuery, treeRoot: Provider | null,
): GroupCandidate[] | 'no-capacity' {
  // Per class: anchor → providers able to supply it for that anchor.
  const perClass: Array<{ rc: string; amount: number; byAnchor: Map<Provider, Provider[]> }> = [];
  const memberOk = (p: Provider) => inAggregates(p, g.memberOf);
  for (const [rc, amount] of g.resources) {
    const byAnchor = new Map<Provider, Provider[]>();
    let withCapacity = 0;
    const add = (anchor: Provider, p: Provider) => {
      let list = byAnchor.get(anchor);
      if (!list) byAnchor.set(anchor, (list = []));
      list.push(p);
    };
    for (const p of model.providersWithClass(rc)) {
      if (!fits(p.inventories.get(rc)!, p.used.get(rc) ?? 0, amount)) continue;
      withCapacity++;
      const pairs: Array<[Provider, boolean]> = [[p.root, false]];
      if (model.isSharing(p) && !treeRoot) {
        for (const anchor of model.anchorsOf(p)) if (anchor !== p.root) pairs.push([anchor, true]);
      }
      for (const [anchor, viaSharing] of pairs) {
        if (treeRoot && anchor !== treeRoot) continue;
        // member_of: the provider or its root/anchor ("an aggregate on the root spans the tree"); a sharing
        // provider must itself be in the aggregates too.
        if (g.memberOf.length > 0) {
          if (!(memberOk(p) || memberOk(anchor))) continue;
          if (viaSharing && !memberOk(p)) continue;
        }
        if (!hasNone(p.aggregates, g.forbiddenAggs) || !hasNone(anchor.aggregates, g.forbiddenAggs)) continue;
        if (!rootRequiredOk(anchor, q)) continue;
        add(anchor, p);
      }
    }
    if (withCapacity === 0) return 'no-capacity';
    perClass.push({ rc, amount, byAnchor });
  }
  if (perClass.length === 0) return [];
  perClass.sort((a, b) => a.byAnchor.size - b.byAnchor.size);
  const out: GroupCandidate[] = [];
  for (const anchor of perClass[0]!.byAnchor.keys()) {
    const lists = perClass.map((c) => c.byAnchor.get(anchor));
    if (lists.some((l) => l === undefined)) continue;
    // Cartesian product: each class wholly from one provider.
    const choice = new Array<number>(lists.length).fill(0);
    for (;;) {
      const allocs = perClass.map((c, i) => ({ provider: lists[i]![choice[i]!]!, rc: c.rc, amount: c.amount }));
      const suppliers = [...new Set(allocs.map((a) => a.provider))];
      let ok = hasAllOrSets(unionTraits(suppliers), g.required);
      if (ok) for (const s of suppliers) if (!hasNone(s.traits, g.forbidden)) ok = false;
      if (ok) {
        out.push({ anchor, allocs, providers: suppliers, fromSharing: suppliers.some((s) => s.root !== anchor) });
      }
      if (!nextCombination(choice, lists)) break;
    }
  }
  return out;
}

function unionTraits(providers: readonly Provider[]): ReadonlySet<string> {
  if (providers.length === 1) return providers[0]!.traits;
  const all = new Set<string>();
  for (const p of providers) for (const t of p.traits) all.add(t);
  return all;
}

// ---------------------------------------------------------------- post-merge filters (pipeline Filter objects)

interface MergeContext {
  q: ParsedQuery;
  model: PlacementModel;
  suffixedCount: number;
}

export const GroupPolicyIsolateFilter: Filter<Candidate, MergeContext> = {
  name: 'GroupPolicyIsolate',
  check(c, ctx) {
    if (ctx.q.groupPolicy !== 'isolate' || ctx.suffixedCount < 2) return null;
    const seen = new Set<Provider>();
    for (const [suffix, providers] of c.mappings) {
      if (suffix === '') continue;
      for (const p of providers) {
        if (seen.has(p)) return { code: 'group_policy_isolate', message: `provider ${p.uuid} serves two suffixed groups` };
        seen.add(p);
      }
    }
    return null;
  },
};

export const SameSubtreeFilter: Filter<Candidate, MergeContext> = {
  name: 'SameSubtree',
  check(c, ctx) {
    for (const suffixes of ctx.q.sameSubtree) {
      const providers = [...new Set(suffixes.flatMap((s) => c.mappings.get(s) ?? []))];
      const top = providers.some((a) => providers.every((p) => ctx.model.isAncestorOrSelf(a, p)));
      if (!top) return { code: 'same_subtree', message: `groups ${suffixes.join(',')} are not in one subtree` };
    }
    return null;
  },
};

export const MergedCapacityFilter: Filter<Candidate, MergeContext> = {
  name: 'MergedCapacity',
  check(c) {
    for (const [p, resources] of c.allocations) {
      for (const [rc, sum] of resources) {
        const inv = p.inventories.get(rc)!;
        if (!fitsMerged(inv, p.used.get(rc) ?? 0, sum)) {
          return {
            code: 'merged_capacity_exceeded',
            message: `${rc} on ${p.uuid}: used ${p.used.get(rc) ?? 0} + requested ${sum} > capacity ${capacity(inv)} or max_unit ${inv.max_unit}`,
          };
        }
      }
    }
    return null;
  },
};

const MERGE_FILTERS = [GroupPolicyIsolateFilter, SameSubtreeFilter, MergedCapacityFilter];

function candidateKey(allocations: Map<Provider, Map<string, number>>, mappings: Map<string, Provider[]>): string {
  const parts: string[] = [];
  for (const p of [...allocations.keys()].sort((a, b) => (a.uuid < b.uuid ? -1 : 1))) {
    parts.push(p.uuid + '=' + [...allocations.get(p)!].sort().map(([rc, n]) => `${rc}:${n}`).join(','));
  }
  parts.push('|');
  for (const s of [...mappings.keys()].sort()) parts.push(s + '=' + mappings.get(s)!.map((p) => p.uuid).sort().join(','));
  return parts.join(';');
}

/** Builds the merged allocation request of one choice per group (amounts of the same provider and class summed). */
function materialise(parts: readonly GroupCandidate[], groups: readonly RequestGroup[]): Candidate {
  const allocations = new Map<Provider, Map<string, number>>();
  const mappings = new Map<string, Provider[]>();
  parts.forEach((gc, i) => {
    for (const a of allocsOf(gc, groups[i]!)) {
      let res = allocations.get(a.provider);
      if (!res) allocations.set(a.provider, (res = new Map()));
      res.set(a.rc, (res.get(a.rc) ?? 0) + a.amount);
    }
    mappings.set(groups[i]!.suffix, gc.providers);
  });
  return { anchor: parts[0]!.anchor, allocations, mappings, key: '', weight: 0, weighers: {} };
}

function merge(groupCandidates: GroupCandidate[][], groups: RequestGroup[]): Candidate[] {
  const make = (parts: GroupCandidate[]) => materialise(parts, groups);
  if (groupCandidates.length === 1) return groupCandidates[0]!.map((gc) => make([gc]));
  const byAnchor = groupCandidates.map((list) => {
    const m = new Map<Provider, GroupCandidate[]>();
    for (const gc of list) {
      let l = m.get(gc.anchor);
      if (!l) m.set(gc.anchor, (l = []));
      l.push(gc);
    }
    return m;
  });
  const smallest = byAnchor.reduce((a, b) => (a.size <= b.size ? a : b));
  const out: Candidate[] = [];
  for (const anchor of smallest.keys()) {
    const lists = byAnchor.map((m) => m.get(anchor));
    if (lists.some((l) => l === undefined)) continue;
    const choice = new Array<number>(lists.length).fill(0);
    for (;;) {
      out.push(make(lists.map((l, i) => l![choice[i]!]!)));
      if (!nextCombination(choice, lists)) break;
    }
  }
  return out;
}

// ---------------------------------------------------------------- ranking

/** Free capacity of each requested class in a candidate (the providers supplying it), before this request. */
function freeOf(c: Candidate, rc: string): number {
  let free = 0;
  for (const [p, res] of c.allocations) {
    if (!res.has(rc)) continue;
    free += capacity(p.inventories.get(rc)!) - (p.used.get(rc) ?? 0);
  }
  return free;
}

/** Most free capacity first: one weigher per requested class, each min–max normalised, summed. */
export function rank(candidates: Candidate[], classes: readonly string[]): void {
  for (const c of candidates) {
    c.weight = 0;
    c.weighers = {};
  }
  for (const rc of classes) {
    const raw = candidates.map((c) => freeOf(c, rc));
    const normalized = normalize(raw);
    const name = `FreeCapacity:${rc}`;
    candidates.forEach((c, i) => {
      c.weighers[name] = { raw: raw[i]!, normalized: normalized[i]! };
      c.weight += normalized[i]!;
    });
  }
}

/** Better first: weight, then root provider uuid, then the candidate key. */
export function compareCandidates(a: Candidate, b: Candidate): number {
  if (a.weight !== b.weight) return b.weight - a.weight;
  if (a.anchor.uuid !== b.anchor.uuid) return a.anchor.uuid < b.anchor.uuid ? -1 : 1;
  return a.key < b.key ? -1 : a.key > b.key ? 1 : 0;
}

/** The best `n` in order, through a bounded heap (O(M log n)), not a full sort. */
export function topN<T>(items: readonly T[], n: number, cmp: (a: T, b: T) => number): T[] {
  if (n >= items.length) return items.slice().sort(cmp);
  // Max-heap by "worse": heap[0] is the worst of the kept ones.
  const heap: T[] = [];
  const worse = (a: T, b: T) => cmp(a, b) > 0;
  const up = (i: number) => {
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!worse(heap[i]!, heap[parent]!)) break;
      [heap[i], heap[parent]] = [heap[parent]!, heap[i]!];
      i = parent;
    }
  };
  const down = (i: number) => {
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < heap.length && worse(heap[l]!, heap[m]!)) m = l;
      if (r < heap.length && worse(heap[r]!, heap[m]!)) m = r;
      if (m === i) break;
      [heap[i], heap[m]] = [heap[m]!, heap[i]!];
      i = m;
    }
  };
  for (const item of items) {
    if (heap.length < n) {
      heap.push(item);
      up(heap.length - 1);
    } else if (cmp(item, heap[0]!) < 0) {
      heap[0] = item;
      down(0);
    }
  }
  return heap.sort(cmp);
}

// ---------------------------------------------------------------- the search

function unknownTrait(model: PlacementModel, names: Iterable<string>): string | undefined {
  for (const t of names) if (!model.traits.has(t)) return t;
  return undefined;
}

export function findCandidates(model: PlacementModel, q: ParsedQuery, options: SearchOptions): SearchResult {
  const trace: SearchTrace = { groups: [], filters: [], merged: 0, returned: 0 };

  // DB phase, in Placement's order: root_required, then each group in order of first appearance.
  if (q.rootRequired) {
    const bad = unknownTrait(model, [...q.rootRequired.required, ...q.rootRequired.forbidden]);
    if (bad !== undefined) throw badRequest(`No such trait(s): ${bad}.`);
    let anyRoot = false;
    for (const p of model.providers.values()) {
      if (p.parent === null && rootRequiredOk(p, q)) {
        anyRoot = true;
        break;
      }
    }
    if (!anyRoot) return empty(trace, 'no root provider satisfies root_required');
  }
  const multiPossible = model.nestedCount > 0 || model.sharingProviders().size > 0;
  const perGroup: GroupCandidate[][] = [];
  let free: number[][] | undefined;
  for (const g of q.groups) {
    for (const rc of g.resources.keys()) {
      if (!model.resourceClasses.has(rc)) {
        throw badRequest(`Invalid resource class in resources parameter: No such resource class ${rc}.`);
      }
    }
    for (const orSet of g.memberOf) {
      if (!orSet.some((agg) => model.providersInAggregate(agg).size > 0)) {
        return empty(trace, `group '${g.suffix}': no provider is in any of the aggregates ${orSet.join(', ')}`);
      }
    }
    const bad = unknownTrait(model, [...g.required.flat(), ...g.forbidden]);
    if (bad !== undefined) throw badRequest(`No such trait(s): ${bad}.`);
    let treeRoot: Provider | null = null;
    if (g.inTree !== null) {
      const p = model.providers.get(g.inTree);
      if (!p) return empty(trace, `group '${g.suffix}': in_tree provider ${g.inTree} does not exist`);
      treeRoot = p.root;
    }
    // (e) no provider has room for some class: 200 empty, stop. The per-class maximum is cached until the next
    // change, so a request that fits nowhere costs no scan; finer cases are left to (f), with the same answer.
    for (const [rc, amount] of g.resources) {
      if (amount > model.maxFreeAmount(rc)) return empty(trace, `group '${g.suffix}': no provider has capacity for ${rc}:${amount}`);
    }
    const single = g.suffix !== '' || !multiPossible;
    if (q.groups.length === 1) free = [...g.resources.keys()].map(() => []);
    const found = single ? singleProviderCandidates(model, g, q, treeRoot, free) : multiProviderCandidates(model, g, q, treeRoot);
    if (found === 'no-capacity') return empty(trace, `group '${g.suffix}': no provider has capacity`);
    trace.groups.push({ suffix: g.suffix, path: single ? 'single-provider' : 'multi-provider', candidates: found.length });
    if (found.length === 0) return empty(trace, `group '${g.suffix}' has no candidates`);
    perGroup.push(found);
  }

  const needsDedup = q.groups.length > 1 || perGroup.some((l) => l.some((gc) => gc.fromSharing || gc.providers.length > 1));
  if (q.groups.length === 1 && !needsDedup && free && free[0]?.length === perGroup[0]!.length) {
    return rankSingleGroup(perGroup[0]!, free, q, options, trace);
  }

  let merged = merge(perGroup, q.groups);
  trace.merged = merged.length;
  const ctx: MergeContext = { q, model, suffixedCount: q.groups.filter((g) => g.suffix !== '').length };
  const needsFilters = q.groups.length > 1;
  if (needsFilters) {
    for (const filter of MERGE_FILTERS) {
      const before = merged.length;
      const rejected: SearchTrace['filters'][number]['rejected'] = [];
      merged = merged.filter((c) => {
        const rejection: Rejection | null = filter.check(c, ctx);
        // The trace keeps the first few reasons; the counts cover all.
        if (rejection && rejected.length < 20) rejected.push({ root_provider_uuid: c.anchor.uuid, reason: rejection.message });
        return rejection === null;
      });
      trace.filters.push({ name: filter.name, in: before, out: merged.length, rejected });
    }
  }
  // De-duplicate (sharing providers with several anchors and merged groups can repeat a request).
  const seen = new Set<string>();
  merged = merged.filter((c) => {
    c.key = candidateKey(c.allocations, c.mappings);
    if (seen.has(c.key)) return false;
    seen.add(c.key);
    return true;
  });

  if (options.nestedAware === false) {
    merged = merged.filter((c) => {
      const roots = new Set<Provider>();
      for (const p of c.allocations.keys()) {
        if (roots.has(p.root)) return false;
        roots.add(p.root);
      }
      return true;
    });
  }
  const total = merged.length;
  let kept: Candidate[];
  if (options.randomize) {
    const random = options.random ?? Math.random;
    kept = merged;
    for (let i = kept.length - 1; i > 0; i--) {
      const j = Math.floor(random() * (i + 1));
      [kept[i], kept[j]] = [kept[j]!, kept[i]!];
    }
    if (q.limit !== null) kept = kept.slice(0, q.limit);
  } else {
    const classes = [...new Set(q.groups.flatMap((g) => [...g.resources.keys()]))];
    rank(merged, classes);
    kept = topN(merged, q.limit ?? merged.length, compareCandidates);
  }
  trace.returned = kept.length;
  return { candidates: kept, total, trace };
}

/**
 * The common case (one group, each candidate one provider, no sharing): rank on parallel arrays and build only the
 * kept allocation requests, so that limit=50 over 100,000 providers does not materialise 100,000 of them.
 */
function rankSingleGroup(
  list: GroupCandidate[], free: number[][], q: ParsedQuery, options: SearchOptions, trace: SearchTrace,
): SearchResult {
  const total = list.length;
  trace.merged = total;
  const limit = q.limit ?? total;
  const classes = [...q.groups[0]!.resources.keys()];
  const lo = free.map((raw) => raw.reduce((a, b) => Math.min(a, b), Infinity));
  const hi = free.map((raw) => raw.reduce((a, b) => Math.max(a, b), -Infinity));
  // Cinder/Nova min–max normalisation per class (all equal → 0), summed.
  const norm = (k: number, i: number) => (hi[k] === lo[k] ? 0 : (free[k]![i]! - lo[k]!) / (hi[k]! - lo[k]!));
  let order: number[] = new Array<number>(total);
  for (let i = 0; i < total; i++) order[i] = i;
  const weight = new Float64Array(total);
  if (options.randomize) {
    const random = options.random ?? Math.random;
    for (let i = order.length - 1; i > 0; i--) {
      const j = Math.floor(random() * (i + 1));
      [order[i], order[j]] = [order[j]!, order[i]!];
    }
    order = order.slice(0, limit);
  } else {
    for (let k = 0; k < classes.length; k++) for (let i = 0; i < total; i++) weight[i]! += norm(k, i);
    order = topN(order, limit, (a, b) => {
      if (weight[a] !== weight[b]) return weight[b]! - weight[a]!;
      const ua = list[a]!.anchor.uuid;
      const ub = list[b]!.anchor.uuid;
      return ua < ub ? -1 : ua > ub ? 1 : 0;
    });
  }
  const candidates = order.map((i) => {
    const c = materialise([list[i]!], q.groups);
    c.single = list[i]!.providers[0]!;
    c.key = c.single.uuid;
    c.weight = weight[i]!;
    if (!options.randomize) {
      classes.forEach((rc, k) => {
        c.weighers[`FreeCapacity:${rc}`] = { raw: free[k]![i]!, normalized: norm(k, i) };
      });
    }
    return c;
  });
  trace.returned = candidates.length;
  return { candidates, total, trace };
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
