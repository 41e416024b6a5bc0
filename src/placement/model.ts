// Placement's state in memory, with the indexes the candidate search uses: providers by resource class, trait and
// aggregate, and each provider's tree. Mutations here are in-memory only: the service's store follower applies
// each record the store acknowledged or the change feed brought (this instance's and every other's), one at a time.
import { capacity, type Inventory } from './capacity.ts';
import { SHARING_TRAIT, STANDARD_RESOURCE_CLASSES, STANDARD_TRAITS } from './standard.ts';
import { ScratchRows } from './scratch-rows.ts';
import type { SummaryFragment } from './serialize.ts';

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
  /** Creation order (Placement lists providers by id). */
  seq: number;
  /** The provider's row in the model's class columns (reused after a removal). */
  slot: number;
  /**
   * The serialiser's kept summary of this provider (serialize.ts checks it is current): held here, one pointer
   * away, rather than in a WeakMap, whose lookup costs a few cache misses per candidate in a large answer.
   */
  summaryFragment: SummaryFragment | undefined;
}

/**
 * One resource class's inventories and usage by provider slot: what the capacity check and the FreeCapacity
 * weighers read per candidate, without the Map lookups (and cache misses) of a provider's own maps. A slot's numbers
 * lie together (one cache line): `values[slot × SLOT_FIELDS + field]`.
 */
export interface ClassColumn {
  /** 1 where the provider has an inventory of the class. */
  has: Uint8Array;
  values: Float64Array;
  /**
   * The fields a search reads of every candidate, each in an array of its own (`values`' LIMIT, USED, and CAPACITY −
   * USED by slot): a pass over 50,000 candidates then reads 8 bytes a field where `values` costs a cache line a slot.
   */
  limit: Float64Array;
  used: Float64Array;
  free: Float64Array;
  /**
   * Bounds over every inventory the column ever held (widened on each write, never narrowed: still true of the
   * inventories left): the largest min_unit, the smallest max_unit, and the one step_size (NaN once two differ). An
   * amount within them satisfies every provider's units, so the capacity check need not read them.
   */
  maxMinUnit: number;
  minMaxUnit: number;
  stepSize: number;
}

/** True when `amount` satisfies the min_unit, max_unit and step_size of every inventory the column holds. */
export function unitsFitAll(c: ClassColumn, amount: number): boolean {
  return amount >= c.maxMinUnit && amount <= c.minMaxUnit && amount % c.stepSize === 0;
}

/** The fields of a slot in ClassColumn.values. */
export const SLOT_FIELDS = 6;
/** (total − reserved) × allocation_ratio, the bound the SQL check compares against (unrounded). */
const LIMIT = 0;
/** capacity(): what summaries report and free capacity is counted from. */
export const CAPACITY = 1;
export const USED = 2;
export const MIN_UNIT = 3;
export const MAX_UNIT = 4;
export const STEP_SIZE = 5;

function newColumn(size: number): ClassColumn {
  return {
    has: new Uint8Array(size), values: new Float64Array(size * SLOT_FIELDS),
    limit: new Float64Array(size), used: new Float64Array(size), free: new Float64Array(size),
    maxMinUnit: -Infinity, minMaxUnit: Infinity, stepSize: -1,
  };
}

/** A provider uuid as Placement writes it (canonicalUuid, randomUUID): 36 characters, 9 words of 4 bytes. */
export const UUID_LENGTH = 36;
export const UUID_WORDS = UUID_LENGTH / 4;

/** `a` with room for n entries (at least doubled, so that growing one at a time stays linear), its contents kept. */
export function grown<T extends Float64Array | Int32Array | Uint32Array | Uint8Array>(a: T, n: number): T {
  if (n <= a.length) return a;
  const b = new (a.constructor as new (size: number) => T)(Math.max(n, 2 * a.length));
  b.set(a);
  return b;
}

function grownColumn(c: ClassColumn, size: number): ClassColumn {
  const grown = newColumn(size);
  grown.has.set(c.has);
  grown.values.set(c.values);
  grown.limit.set(c.limit);
  grown.used.set(c.used);
  grown.free.set(c.free);
  grown.maxMinUnit = c.maxMinUnit;
  grown.minMaxUnit = c.minMaxUnit;
  grown.stepSize = c.stepSize;
  return grown;
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
  /** Creation order across restarts. */
  seq?: number;
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

/**
 * Adds a custom name to an ordered set (standard names first, then custom ones by seq). Appending is the common
 * case; a name older than the newest custom one rebuilds the order (rare: creations are serialised by a counter).
 */
/** The highest seq an ordered set received (not lowered by deletions: that only costs an extra rebuild). */
const NEWEST = new WeakMap<Map<string, number>, number>();

function insertBySeq(set: Set<string>, seqs: Map<string, number>, standard: readonly string[], name: string, seq: number): void {
  if (set.has(name) && (!seqs.has(name) || seqs.get(name) === seq)) return; // a standard name, or no change
  set.delete(name);
  seqs.set(name, seq);
  const newest = NEWEST.get(seqs) ?? -Infinity;
  if (seq > newest) {
    NEWEST.set(seqs, seq);
    set.add(name);
    return;
  }
  const custom = [...seqs].sort((a, b) => a[1] - b[1] || (a[0] < b[0] ? -1 : 1)).map(([n]) => n);
  set.clear();
  for (const n of standard) set.add(n);
  for (const n of custom) set.add(n);
}

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
  /** The typed arrays a search fills and drops (findCandidates begins each search). */
  readonly scratchRows = new ScratchRows();
  /** How many providers have a parent: with none (and no sharing provider) the unsuffixed group is single-provider. */
  nestedCount = 0;
  /** Bumped by every change of providers or allocations (invalidates derived caches). */
  version = 0;
  #maxFree = new Map<string, number>();
  #maxFreeVersion = -1;
  readonly #columns = new Map<string, ClassColumn>();
  /** Rows of the columns: slots in use or free, and the free ones. */
  #slotCount = 0;
  #rows = 1024;
  #freeSlots: number[] = [];
  #slotProviders: Array<Provider | undefined> = [];
  /** The slot of each slot's root provider. */
  #rootSlots = new Int32Array(this.#rows);
  /** Each slot's provider uuid (UUID_LENGTH latin1 bytes as UUID_WORDS words, from slot × UUID_WORDS). */
  #uuidWords = new Uint32Array(this.#rows * UUID_WORDS);
  /** Providers whose uuid is not UUID_LENGTH characters (then #uuidWords does not hold every uuid). */
  #unfitUuids = 0;
  /** Bumped when an index's members or their order change (not by allocations): the index slot lists' key. */
  #membership = 0;
  /** Bumped when providers are created or removed: the uuid order's key. */
  #population = 0;
  #uuidOrder = { population: -1, rank: new Int32Array(0) };
  #slotLists = new WeakMap<object, { membership: number; slots: Int32Array }>();

  /** One past the highest slot a provider has (the length per-slot marks need). */
  get slotCount(): number {
    return this.#slotCount;
  }

  providerAt(slot: number): Provider {
    return this.#slotProviders[slot]!;
  }

  rootSlot(slot: number): number {
    return this.#rootSlots[slot]!;
  }

  /**
   * The providers' uuids by slot, UUID_WORDS words each (their bytes, in the platform's byte order): the serialiser
   * writes a uuid from here, a cache line per provider, without reading the provider's string. undefined while a
   * provider's uuid is not UUID_LENGTH characters (not Placement's form).
   */
  uuidWords(): Uint32Array | undefined {
    return this.#unfitUuids === 0 ? this.#uuidWords : undefined;
  }

  /**
   * Per slot, the provider's place in uuid order (0 first): comparing two places compares the uuids. Kept until a
   * provider is created or removed.
   */
  uuidRanks(): Int32Array {
    if (this.#uuidOrder.population !== this.#population) {
      const providers = [...this.providers.values()].sort((a, b) => (a.uuid < b.uuid ? -1 : a.uuid > b.uuid ? 1 : 0));
      const rank = new Int32Array(this.#slotCount);
      providers.forEach((p, k) => {
        rank[p.slot] = k;
      });
      this.#uuidOrder = { population: this.#population, rank };
    }
    return this.#uuidOrder.rank;
  }

  /**
   * The slots of an index's providers (byResourceClass, byTrait, byAggregate, or any set kept until the providers
   * change), in its order: kept until a provider is created, replaced or removed, so that a search walks an array
   * instead of the providers themselves.
   */
  slotsOf(set: ReadonlySet<Provider> | ReadonlyMap<string, Provider>): Int32Array {
    const cached = this.#slotLists.get(set);
    if (cached && cached.membership === this.#membership) return cached.slots;
    const slots = new Int32Array(set.size);
    let k = 0;
    for (const p of set.values()) slots[k++] = p.slot;
    this.#slotLists.set(set, { membership: this.#membership, slots });
    return slots;
  }

  /** The columns of a resource class, or undefined when no provider ever had it. */
  column(rc: string): ClassColumn | undefined {
    return this.#columns.get(rc);
  }

  #takeSlot(): number {
    const free = this.#freeSlots.pop();
    if (free !== undefined) return free;
    const slot = this.#slotCount++;
    if (slot >= this.#rows) {
      this.#rows *= 2;
      for (const [rc, c] of this.#columns) this.#columns.set(rc, grownColumn(c, this.#rows));
      const roots = new Int32Array(this.#rows);
      roots.set(this.#rootSlots);
      this.#rootSlots = roots;
      this.#uuidWords = grown(this.#uuidWords, this.#rows * UUID_WORDS);
    }
    return slot;
  }

  /** Writes p's inventory of rc (or its absence) and usage into the class's column. */
  #writeColumn(p: Provider, rc: string): void {
    let c = this.#columns.get(rc);
    const inv = p.inventories.get(rc);
    if (!c) {
      if (!inv) return;
      this.#columns.set(rc, (c = newColumn(this.#rows)));
    }
    const s = p.slot;
    c.has[s] = inv ? 1 : 0;
    if (!inv) return;
    const at = s * SLOT_FIELDS;
    const used = p.used.get(rc) ?? 0;
    c.values[at + LIMIT] = c.limit[s] = (inv.total - inv.reserved) * inv.allocation_ratio;
    c.values[at + CAPACITY] = capacity(inv);
    c.values[at + USED] = c.used[s] = used;
    c.free[s] = c.values[at + CAPACITY]! - used;
    c.values[at + MIN_UNIT] = inv.min_unit;
    c.values[at + MAX_UNIT] = inv.max_unit;
    c.values[at + STEP_SIZE] = inv.step_size;
    c.maxMinUnit = Math.max(c.maxMinUnit, inv.min_unit);
    c.minMaxUnit = Math.min(c.minMaxUnit, inv.max_unit);
    // -1: no inventory yet.
    c.stepSize = c.stepSize === -1 || c.stepSize === inv.step_size ? inv.step_size : NaN;
  }

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
      // From the class's column (the same numbers as the providers' maps), over the index's kept slots.
      const c = this.#columns.get(rc);
      const slots = this.slotsOf(this.providersWithClass(rc));
      for (let k = 0; k < slots.length; k++) {
        const s = slots[k]!;
        const room = Math.min(c!.limit[s]! - c!.used[s]!, c!.values[s * SLOT_FIELDS + MAX_UNIT]!);
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
    // Replacing a provider moves it to the end of its indexes' order (the order a search meets it in).
    this.#membership++;
    let p = this.providers.get(rec.uuid);
    if (!p) {
      this.#population++;
      const parent = rec.parent_provider_uuid ? this.providers.get(rec.parent_provider_uuid) ?? null : null;
      p = {
        uuid: rec.uuid, name: rec.name, generation: rec.generation, parent,
        root: undefined as unknown as Provider, children: new Set(), inventories: new Map(), traits: new Set(),
        aggregates: new Set(), used: new Map(), consumers: new Set(), seq: rec.seq ?? 0, slot: this.#takeSlot(),
        summaryFragment: undefined,
      };
      p.root = parent ? parent.root : p;
      this.#slotProviders[p.slot] = p;
      this.#rootSlots[p.slot] = p.root.slot;
      Buffer.from(this.#uuidWords.buffer, p.slot * UUID_LENGTH, UUID_LENGTH).fill(0).write(p.uuid, 'latin1');
      if (p.uuid.length !== UUID_LENGTH) this.#unfitUuids++;
      if (parent) {
        parent.children.add(p);
        this.nestedCount++;
      }
      this.providers.set(p.uuid, p);
    } else {
      this.byName.delete(p.name);
      for (const rc of p.inventories.keys()) removeFromIndex(this.byResourceClass, rc, p);
      for (const rc of p.inventories.keys()) if (!Object.hasOwn(rec.inventories, rc)) this.#columns.get(rc)!.has[p.slot] = 0;
      for (const t of p.traits) removeFromIndex(this.byTrait, t, p);
      for (const a of p.aggregates) removeFromIndex(this.byAggregate, a, p);
      if ((p.parent?.uuid ?? null) !== rec.parent_provider_uuid) this.reparent(p, rec.parent_provider_uuid);
    }
    p.name = rec.name;
    p.generation = rec.generation;
    p.inventories = new Map(Object.entries(rec.inventories));
    p.traits = new Set(rec.traits);
    p.aggregates = new Set(rec.aggregates);
    this.byName.set(p.name, p);
    for (const rc of p.inventories.keys()) {
      addToIndex(this.byResourceClass, rc, p);
      this.#writeColumn(p, rc);
    }
    for (const t of p.traits) addToIndex(this.byTrait, t, p);
    for (const a of p.aggregates) addToIndex(this.byAggregate, a, p);
    return p;
  }

  /** Moves `p` (with its subtree) under another parent, or makes it a root (Placement 1.37). */
  private reparent(p: Provider, parentUuid: string | null): void {
    if (p.parent) {
      p.parent.children.delete(p);
      this.nestedCount--;
    }
    const parent = parentUuid ? this.providers.get(parentUuid) ?? null : null;
    p.parent = parent;
    if (parent) {
      parent.children.add(p);
      this.nestedCount++;
    }
    const root = parent ? parent.root : p;
    for (const q of this.treeOf(p)) {
      q.root = root;
      this.#rootSlots[q.slot] = root.slot;
    }
  }

  #traitOrder = new Map<string, number>();
  #traitOrderKey = '';

  /** Traits in Placement's id order (standard traits first, then custom ones by creation), as its queries list them. */
  inTraitOrder(traits: Iterable<string>): string[] {
    const key = `${this.traits.size}:${this.version}`;
    if (key !== this.#traitOrderKey) {
      this.#traitOrder = new Map([...this.traits].map((t, i) => [t, i]));
      this.#traitOrderKey = key;
    }
    const index = (t: string) => this.#traitOrder.get(t) ?? Infinity;
    return [...traits].sort((a, b) => index(a) - index(b) || (a < b ? -1 : a > b ? 1 : 0));
  }

  /** The creation order (record `seq`) of each custom trait and resource class; standard ones come first. */
  readonly traitSeq = new Map<string, number>();
  readonly classSeq = new Map<string, number>();

  /** A custom trait, at its place in creation order (a trait created elsewhere may arrive after a newer one). */
  addTrait(name: string, seq: number): void {
    insertBySeq(this.traits, this.traitSeq, STANDARD_TRAITS, name, seq);
    this.version++;
  }

  deleteTrait(name: string): void {
    this.traits.delete(name);
    this.traitSeq.delete(name);
    this.version++;
  }

  /** A custom resource class, at its place in creation order. */
  addResourceClass(name: string, seq: number): void {
    insertBySeq(this.resourceClasses, this.classSeq, STANDARD_RESOURCE_CLASSES, name, seq);
    this.version++;
  }

  deleteResourceClass(name: string): void {
    this.resourceClasses.delete(name);
    this.classSeq.delete(name);
    this.version++;
  }

  /** Forgets everything (before a reload from a snapshot); the standard traits and classes stay. */
  clear(): void {
    this.providers.clear();
    this.byName.clear();
    this.byResourceClass.clear();
    this.byTrait.clear();
    this.byAggregate.clear();
    this.consumers.clear();
    this.aggregateMetadata.clear();
    this.traits.clear();
    for (const t of STANDARD_TRAITS) this.traits.add(t);
    this.traitSeq.clear();
    NEWEST.delete(this.traitSeq);
    this.resourceClasses.clear();
    for (const rc of STANDARD_RESOURCE_CLASSES) this.resourceClasses.add(rc);
    this.classSeq.clear();
    NEWEST.delete(this.classSeq);
    this.nestedCount = 0;
    this.#columns.clear();
    this.#slotCount = 0;
    this.#freeSlots = [];
    this.#slotProviders = [];
    this.#membership++;
    this.#population++;
    this.version++;
  }

  /** The position of a resource class in Placement's id order (standard classes first, then by creation). */
  resourceClassIndex(rc: string): number {
    let i = 0;
    for (const name of this.resourceClasses) {
      if (name === rc) return i;
      i++;
    }
    return i;
  }

  removeProvider(uuid: string): void {
    this.version++;
    this.#membership++;
    this.#population++;
    const p = this.providers.get(uuid);
    if (!p) return;
    this.#slotProviders[p.slot] = undefined;
    if (p.uuid.length !== UUID_LENGTH) this.#unfitUuids--;
    for (const rc of p.inventories.keys()) {
      removeFromIndex(this.byResourceClass, rc, p);
      this.#columns.get(rc)!.has[p.slot] = 0;
    }
    this.#freeSlots.push(p.slot);
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
        for (const [rc, n] of resources) this.#addUsed(p, rc, -n);
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
      for (const [rc, n] of map) this.#addUsed(p, rc, n);
      p.consumers.add(uuid);
    }
    this.consumers.set(uuid, {
      uuid, project_id: rec.project_id, user_id: rec.user_id, consumer_type: rec.consumer_type,
      generation: rec.generation, allocations,
    });
  }

  #addUsed(p: Provider, rc: string, n: number): void {
    const used = (p.used.get(rc) ?? 0) + n;
    p.used.set(rc, used);
    const c = this.#columns.get(rc);
    if (c) {
      const at = p.slot * SLOT_FIELDS;
      c.values[at + USED] = c.used[p.slot] = used;
      c.free[p.slot] = c.values[at + CAPACITY]! - used;
    }
  }

  providerRecord(p: Provider): ProviderRecord {
    return {
      uuid: p.uuid, name: p.name, parent_provider_uuid: p.parent?.uuid ?? null, generation: p.generation,
      inventories: Object.fromEntries(p.inventories), traits: [...p.traits], aggregates: [...p.aggregates], seq: p.seq,
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
