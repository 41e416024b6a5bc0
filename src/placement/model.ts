// Placement's state in memory, with the indexes the candidate search uses: providers by resource class, trait and
// aggregate, and each provider's tree. Mutations here are in-memory only; the service writes through to the store
// first and then applies the same change here.
import { capacity, type Inventory } from './capacity.ts';
import { SHARING_TRAIT, STANDARD_RESOURCE_CLASSES, STANDARD_TRAITS } from './standard.ts';

export interface Provider {
  uuid: string;
  name: string;
  generation: number;
  parent: Provider | null;
  root: Provider;
  children: Set<Provider>;
  inventories: Map<string, Inventory>;
  traits: Set<string>;
  aggregates: Set<string>;
  /** Σ allocations per resource class (all consumers). */
  used: Map<string, number>;
  /** Consumers holding allocations here. */
  consumers: Set<string>;
}

export interface Consumer {
  uuid: string;
  project_id: string;
  user_id: string;
  consumer_type: string | null;
  generation: number;
  /** provider uuid → resource class → amount */
  allocations: Map<string, Map<string, number>>;
}

/** What the store holds for a provider. */
export interface ProviderRecord {
  uuid: string;
  name: string;
  parent_provider_uuid: string | null;
  generation: number;
  inventories: Record<string, Inventory>;
  traits: string[];
  aggregates: string[];
}

export interface ConsumerRecord {
  uuid: string;
  project_id: string;
  user_id: string;
  consumer_type: string | null;
  generation: number;
  allocations: Record<string, Record<string, number>>;
}

function addToIndex<K>(index: Map<K, Set<Provider>>, key: K, p: Provider): void {
  let set = index.get(key);
  if (!set) index.set(key, (set = new Set()));
  set.add(p);
}

function removeFromIndex<K>(index: Map<K, Set<Provider>>, key: K, p: Provider): void {
  const set = index.get(key);
  if (!set) return;
  set.delete(p);
  if (set.size === 0) index.delete(key);
}

const EMPTY: ReadonlySet<Provider> = new Set();

export class PlacementModel {
  readonly providers = new Map<string, Provider>();
  readonly byName = new Map<string, Provider>();
  readonly byResourceClass = new Map<string, Set<Provider>>();
  readonly byTrait = new Map<string, Set<Provider>>();
  readonly byAggregate = new Map<string, Set<Provider>>();
  readonly consumers = new Map<string, Consumer>();
  readonly traits = new Set<string>(STANDARD_TRAITS);
  readonly resourceClasses = new Set<string>(STANDARD_RESOURCE_CLASSES);
  /** Nova host-aggregate metadata, by aggregate uuid (isolate_aggregates). */
  readonly aggregateMetadata = new Map<string, Record<string, string>>();
  /** How many providers have a parent: with none (and no sharing provider) the unsuffixed group is single-provider. */
  nestedCount = 0;
  /** Bumped by every change of providers or allocations (invalidates derived caches). */
  version = 0;
  #maxFree = new Map<string, number>();
  #maxFreeVersion = -1;

  /**
   * The largest amount of `rc` any single provider could still take: max over providers of
   * min((total - reserved) * ratio - used, max_unit). A request above it cannot fit anywhere.
   */
  maxFreeAmount(rc: string): number {
    if (this.#maxFreeVersion !== this.version) {
      this.#maxFree.clear();
      this.#maxFreeVersion = this.version;
    }
    let max = this.#maxFree.get(rc);
    if (max === undefined) {
      max = -Infinity;
      for (const p of this.providersWithClass(rc)) {
        const inv = p.inventories.get(rc)!;
        const room = Math.min((inv.total - inv.reserved) * inv.allocation_ratio - (p.used.get(rc) ?? 0), inv.max_unit);
        if (room > max) max = room;
      }
      this.#maxFree.set(rc, max);
    }
    return max;
  }

  providersWithClass(rc: string): ReadonlySet<Provider> {
    return this.byResourceClass.get(rc) ?? EMPTY;
  }
  providersWithTrait(trait: string): ReadonlySet<Provider> {
    return this.byTrait.get(trait) ?? EMPTY;
  }
  providersInAggregate(agg: string): ReadonlySet<Provider> {
    return this.byAggregate.get(agg) ?? EMPTY;
  }
  sharingProviders(): ReadonlySet<Provider> {
    return this.providersWithTrait(SHARING_TRAIT);
  }
  isSharing(p: Provider): boolean {
    return p.traits.has(SHARING_TRAIT);
  }

  /** Roots of every provider that shares an aggregate with the sharing provider `s` (its own root included). */
  anchorsOf(s: Provider): Set<Provider> {
    const anchors = new Set<Provider>();
    for (const agg of s.aggregates) for (const member of this.providersInAggregate(agg)) anchors.add(member.root);
    return anchors;
  }

  /** Every provider of the tree rooted at `root`, root first (depth-first). */
  treeOf(root: Provider): Provider[] {
    const out: Provider[] = [];
    const stack = [root];
    while (stack.length > 0) {
      const p = stack.pop()!;
      out.push(p);
      for (const c of p.children) stack.push(c);
    }
    return out;
  }

  /** True when `ancestor` is `p` or one of its ancestors. */
  isAncestorOrSelf(ancestor: Provider, p: Provider): boolean {
    for (let cur: Provider | null = p; cur; cur = cur.parent) if (cur === ancestor) return true;
    return false;
  }

  // ---- applying records (after the store accepted them, or at load time) ----

  /** Creates or replaces a provider from its record. The parent must already exist. */
  applyProvider(rec: ProviderRecord): Provider {
    this.version++;
    let p = this.providers.get(rec.uuid);
    if (!p) {
      const parent = rec.parent_provider_uuid ? this.providers.get(rec.parent_provider_uuid) ?? null : null;
      p = {
        uuid: rec.uuid, name: rec.name, generation: rec.generation, parent,
        root: undefined as unknown as Provider, children: new Set(), inventories: new Map(), traits: new Set(),
        aggregates: new Set(), used: new Map(), consumers: new Set(),
      };
      p.root = parent ? parent.root : p;
      if (parent) {
        parent.children.add(p);
        this.nestedCount++;
      }
      this.providers.set(p.uuid, p);
    } else {
      this.byName.delete(p.name);
      for (const rc of p.inventories.keys()) removeFromIndex(this.byResourceClass, rc, p);
      for (const t of p.traits) removeFromIndex(this.byTrait, t, p);
      for (const a of p.aggregates) removeFromIndex(this.byAggregate, a, p);
    }
    p.name = rec.name;
    p.generation = rec.generation;
    p.inventories = new Map(Object.entries(rec.inventories));
    p.traits = new Set(rec.traits);
    p.aggregates = new Set(rec.aggregates);
    this.byName.set(p.name, p);
    for (const rc of p.inventories.keys()) addToIndex(this.byResourceClass, rc, p);
    for (const t of p.traits) addToIndex(this.byTrait, t, p);
    for (const a of p.aggregates) addToIndex(this.byAggregate, a, p);
    return p;
  }

  removeProvider(uuid: string): void {
    this.version++;
    const p = this.providers.get(uuid);
    if (!p) return;
    for (const rc of p.inventories.keys()) removeFromIndex(this.byResourceClass, rc, p);
    for (const t of p.traits) removeFromIndex(this.byTrait, t, p);
    for (const a of p.aggregates) removeFromIndex(this.byAggregate, a, p);
    if (p.parent) {
      p.parent.children.delete(p);
      this.nestedCount--;
    }
    this.byName.delete(p.name);
    this.providers.delete(uuid);
  }

  /** Replaces a consumer's allocations (null deletes the consumer), keeping provider usage in step. */
  applyConsumer(uuid: string, rec: ConsumerRecord | null): void {
    this.version++;
    const old = this.consumers.get(uuid);
    if (old) {
      for (const [rpUuid, resources] of old.allocations) {
        const p = this.providers.get(rpUuid);
        if (!p) continue;
        for (const [rc, n] of resources) p.used.set(rc, (p.used.get(rc) ?? 0) - n);
        p.consumers.delete(uuid);
      }
      this.consumers.delete(uuid);
    }
    if (!rec) return;
    const allocations = new Map<string, Map<string, number>>();
    for (const [rpUuid, resources] of Object.entries(rec.allocations)) {
      const map = new Map(Object.entries(resources));
      allocations.set(rpUuid, map);
      const p = this.providers.get(rpUuid);
      if (!p) continue;
      for (const [rc, n] of map) p.used.set(rc, (p.used.get(rc) ?? 0) + n);
      p.consumers.add(uuid);
    }
    this.consumers.set(uuid, {
      uuid, project_id: rec.project_id, user_id: rec.user_id, consumer_type: rec.consumer_type,
      generation: rec.generation, allocations,
    });
  }

  providerRecord(p: Provider): ProviderRecord {
    return {
      uuid: p.uuid, name: p.name, parent_provider_uuid: p.parent?.uuid ?? null, generation: p.generation,
      inventories: Object.fromEntries(p.inventories), traits: [...p.traits].sort(), aggregates: [...p.aggregates].sort(),
    };
  }

  consumerRecord(c: Consumer): ConsumerRecord {
    const allocations: Record<string, Record<string, number>> = {};
    for (const [rp, res] of c.allocations) allocations[rp] = Object.fromEntries(res);
    return { uuid: c.uuid, project_id: c.project_id, user_id: c.user_id, consumer_type: c.consumer_type, generation: c.generation, allocations };
  }

  /** Capacity and usage summed per resource class over all providers (for the gauges). */
  totalsByResourceClass(): Map<string, { capacity: number; used: number }> {
    const totals = new Map<string, { capacity: number; used: number }>();
    for (const [rc, set] of this.byResourceClass) {
      let cap = 0;
      let used = 0;
      for (const p of set) {
        cap += capacity(p.inventories.get(rc)!);
        used += p.used.get(rc) ?? 0;
      }
      totals.set(rc, { capacity: cap, used });
    }
    return totals;
  }
}
