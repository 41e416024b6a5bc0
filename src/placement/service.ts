// The Placement service (Placement's objects layer): validates a write against the in-memory model in
// Placement's order of checks and commits the records it changes through the store follower, which applies them
// to the model once the store acknowledged them (and every other instance's through the change feed). Writes of
// this instance run one at a time; other instances are arbitrated by the store: every record a write commits is
// expected at the generation the decision read, so two instances never both take the last VCPU, and a refused or
// failed write changes nothing. Reads answer from the model. Errors are Placement's messages; the routes add the
// handler's wording where it wraps them.
import { randomUUID } from 'node:crypto';
import { StoreFollower } from '../store/follow.ts';
import type { AsyncStore, StoredRecord, StoreWrite } from '../store/store.ts';
import { capacity, fits, INVENTORY_DEFAULTS, MAX_INT, type Inventory } from './capacity.ts';
import { hasAllOrSets, hasNone } from './filters.ts';
import { findCandidates, type SearchResult } from './scheduler.ts';
import { headroom, type HeadroomAnswer } from './headroom.ts';
import { badRequest, CODES, conflict, notFound, PlacementError } from './errors.ts';
import { isolatedAggregates, requiredTraitsOf, type IsolatedAggregate } from './isolate.ts';
import type { Microversion } from './microversion.ts';
import { type Consumer, type ConsumerRecord, PlacementModel, type Provider, type ProviderRecord } from './model.ts';
import { parseResources, type ParsedQuery, type ProviderFilters, type TraitFilter, type UsagesQuery } from './query.ts';
import type { ConsumerAllocationsBody, InventoryFields, ReshapeBody } from './schemas.ts';
import { STANDARD_RESOURCE_CLASSES, STANDARD_TRAITS } from './standard.ts';

const KIND = {
  provider: 'placement.rp',
  consumer: 'placement.consumer',
  trait: 'placement.trait',
  resourceClass: 'placement.rc',
  aggregateMetadata: 'placement.aggmeta',
  /** The next creation-order number (`seq`): written by every creation, so creations are ordered across instances. */
  counter: 'placement.seq',
} as const;

/** The kinds the service follows. */
export const PLACEMENT_KINDS: readonly string[] = Object.values(KIND);

const COUNTER_KEY = 'next';


/** Placement's ConcurrentUpdateDetected, as the handlers wrap it. */
const CONCURRENT = 'Another thread concurrently updated the data. Please retry your update';
const UPDATE_CONFLICT = `update conflict: ${CONCURRENT}`;
const ALLOCATION_CONFLICT = `Inventory and/or allocations changed while attempting to allocate: ${CONCURRENT}`;

/**
 * Records are applied in this order within one commit: consumers before providers, so that an instance holding a
 * provider's newest generation (what a claim expects) also holds every usage change committed with it, and the
 * counter last, so that holding its newest generation means holding what the creations before it wrote.
 */
const APPLY_RANK: Record<string, number> = {
  [KIND.resourceClass]: 0, [KIND.trait]: 1, [KIND.aggregateMetadata]: 2, [KIND.consumer]: 3, [KIND.provider]: 4, [KIND.counter]: 5,
};

/** The records one write commits, each once. */
class WriteSet {
  readonly #writes = new Map<string, StoreWrite>();
  /** A record the decision changes (null deletes it). */
  put(kind: string, key: string, value: unknown): void {
    this.#writes.set(`${kind}\n${key}`, { kind, key, value });
  }
  /**
   * A record the decision relies on, written unchanged so that a competing change of it on another instance
   * (a parent deleted, a trait or class deleted) conflicts with this one.
   */
  touch(kind: string, key: string, value: unknown): void {
    const id = `${kind}\n${key}`;
    if (!this.#writes.has(id)) this.#writes.set(id, { kind, key, value });
  }
  has(kind: string, key: string): boolean {
    return this.#writes.has(`${kind}\n${key}`);
  }
  get size(): number {
    return this.#writes.size;
  }
  list(): StoreWrite[] {
    return [...this.#writes.values()].sort((a, b) => APPLY_RANK[a.kind]! - APPLY_RANK[b.kind]!);
  }
}

/** What a write decided: the records to commit and what it answers once they are applied. */
interface Decision<T> {
  writes: WriteSet;
  result: () => T;
}

interface NamedRecord {
  name: string;
  seq?: number;
}

const STANDARD_RC = new Set(STANDARD_RESOURCE_CLASSES);
const STANDARD_TRAIT = new Set(STANDARD_TRAITS);
const CUSTOM_PATTERN = /^CUSTOM_[A-Z0-9_]+$/;

/** [placement] incomplete_consumer_project_id / _user_id: the owner of allocations written before 1.8. */
const INCOMPLETE_CONSUMER_ID = '00000000-0000-0000-0000-000000000000';

/** The scheduling options the service reads at each request (the runtime settings, from the start-up options). */
export interface PlacementOptions {
  enable_isolated_aggregate_filtering: boolean;
  randomize_allocation_candidates: boolean;
  free_capacity_weight_multiplier?: number;
}

interface CandidatesAnswer {
  result: SearchResult;
  /** Nova's isolated aggregates added to the request, or null when isolate_aggregates is disabled. */
  isolated: IsolatedAggregate[] | null;
}


/** Python's str(uuid.UUID(value)) for a uuid-like value: lower case, dashed. */
export function canonicalUuid(value: string): string {
  const h = value.toLowerCase().replace('urn:', '').replace('uuid:', '').replace(/[{}-]/g, '');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}

const providerNotFound = (uuid: string) => notFound(`No resource provider with uuid ${uuid} found`);

/** One allocation row as Placement's replace_all sees it: used 0 means "remove". */
interface AllocationRow {
  consumer: string;
  provider: Provider;
  rc: string;
  used: number;
}

/** A consumer as ensure_consumer leaves it before the allocations are written. */
interface ConsumerPlan {
  uuid: string;
  existing: Consumer | undefined;
  project_id: string;
  user_id: string;
  consumer_type: string | null;
}

export class PlacementService {
  readonly model = new PlacementModel();
  /** The next creation-order number (Placement lists providers, traits and classes by id). */
  #nextSeq = 0;
  readonly #follower: StoreFollower;

  private constructor(store: AsyncStore, private readonly settings: { readonly values: PlacementOptions }) {
    this.#follower = new StoreFollower(store, PLACEMENT_KINDS, {
      reset: (records) => this.#reset(records),
      apply: (kind, key, value) => this.#apply(kind, key, value),
    });
  }

  /** The service loaded from the store and following its change feed (close() stops following). */
  static async open(store: AsyncStore, settings: { readonly values: PlacementOptions }): Promise<PlacementService> {
    const service = new PlacementService(store, settings);
    await service.#follower.start();
    return service;
  }

  close(): void {
    this.#follower.close();
  }

  #sawSeq(n: number | undefined): void {
    if (n !== undefined && n >= this.#nextSeq) this.#nextSeq = n + 1;
  }

  /** Rebuilds the model from a snapshot (parents before children, each kind in creation order). */
  #reset(records: ReadonlyMap<string, readonly StoredRecord[]>): void {
    const m = this.model;
    m.clear();
    this.#nextSeq = 0;
    const of = <V>(kind: string) => (records.get(kind) ?? []) as ReadonlyArray<StoredRecord<V>>;
    const bySeq = <T extends { seq?: number }>(a: { value: T }, b: { value: T }) => (a.value.seq ?? 0) - (b.value.seq ?? 0);
    for (const r of [...of<NamedRecord>(KIND.trait)].sort(bySeq)) {
      m.addTrait(r.key, r.value.seq ?? 0);
      this.#sawSeq(r.value.seq);
    }
    for (const r of [...of<NamedRecord>(KIND.resourceClass)].sort(bySeq)) {
      m.addResourceClass(r.key, r.value.seq ?? 0);
      this.#sawSeq(r.value.seq);
    }
    for (const r of of<{ metadata: Record<string, string> }>(KIND.aggregateMetadata)) m.aggregateMetadata.set(r.key, r.value.metadata);
    let pending = [...of<ProviderRecord>(KIND.provider)].sort(bySeq).map((r) => r.value);
    while (pending.length > 0) {
      const next: ProviderRecord[] = [];
      for (const rec of pending) {
        if (rec.parent_provider_uuid && !m.providers.has(rec.parent_provider_uuid)) next.push(rec);
        else {
          m.applyProvider(rec);
          this.#sawSeq(rec.seq);
        }
      }
      if (next.length === pending.length) throw new Error('placement store holds providers whose parents are missing');
      pending = next;
    }
    for (const r of of<ConsumerRecord>(KIND.consumer)) m.applyConsumer(r.key, r.value);
    for (const r of of<{ next: number }>(KIND.counter)) this.#sawSeq(r.value.next - 1);
  }

  /** One record this instance or another committed: the only way the model changes after the reset. */
  #apply(kind: string, key: string, value: unknown): void {
    const m = this.model;
    switch (kind) {
      case KIND.provider:
        if (value === null) m.removeProvider(key);
        else {
          m.applyProvider(value as ProviderRecord);
          this.#sawSeq((value as ProviderRecord).seq);
        }
        return;
      case KIND.consumer:
        m.applyConsumer(key, value as ConsumerRecord | null);
        return;
      case KIND.trait:
        if (value === null) m.deleteTrait(key);
        else {
          m.addTrait(key, (value as NamedRecord).seq ?? 0);
          this.#sawSeq((value as NamedRecord).seq);
        }
        return;
      case KIND.resourceClass:
        if (value === null) m.deleteResourceClass(key);
        else {
          m.addResourceClass(key, (value as NamedRecord).seq ?? 0);
          this.#sawSeq((value as NamedRecord).seq);
        }
        return;
      case KIND.aggregateMetadata:
        if (value === null) m.aggregateMetadata.delete(key);
        else m.aggregateMetadata.set(key, { ...(value as { metadata: Record<string, string> }).metadata });
        return;
      case KIND.counter:
        if (value !== null) this.#sawSeq((value as { next: number }).next - 1);
        return;
      default:
        return;
    }
  }

  /**
   * Runs a write: decides on the model (throwing Placement's answer when it refuses), commits every record the
   * decision writes with the generation it read, and answers once the records are applied. When another
   * instance changed one of them first, catches up with the feed and decides again (a generation given by the
   * client then answers its own conflict); after WRITE_ATTEMPTS, 409 placement.concurrent_update with `message`.
   * StoreUnavailableError propagates (503): nothing changed in memory.
   */
  #write<T>(decide: () => Decision<T>, message = UPDATE_CONFLICT): Promise<T> {
    return this.#follower.write(() => {
      const { writes, result } = decide();
      const list = writes.list();
      const expect = list.map((w) => ({ kind: w.kind, key: w.key, generation: this.#follower.generation(w.kind, w.key) }));
      return { writes: list, expect, result };
    }, () => conflict(message, CODES.CONCURRENT_UPDATE));
  }

  /** Takes the next creation-order number: the counter is written (and expected) by every creation. */
  #takeSeq(writes: WriteSet): number {
    const seq = this.#nextSeq;
    writes.put(KIND.counter, COUNTER_KEY, { next: seq + 1 });
    return seq;
  }

  /** A provider's record as the model holds it, with `change`; `bump` raises the generation. */
  #providerWrite(writes: WriteSet, p: Provider, change: Partial<ProviderRecord> = {}, bump = true): void {
    writes.put(KIND.provider, p.uuid, { ...this.model.providerRecord(p), ...change, generation: p.generation + (bump ? 1 : 0) });
  }

  /** The provider (an ancestor of the one written) must not be deleted meanwhile. */
  #touchProvider(writes: WriteSet, p: Provider): void {
    writes.touch(KIND.provider, p.uuid, this.model.providerRecord(p));
  }

  /** Custom traits (standard ones cannot be deleted) a provider gains must not be deleted meanwhile. */
  #touchTraits(writes: WriteSet, traits: Iterable<string>): void {
    for (const t of traits) {
      const seq = this.model.traitSeq.get(t);
      if (seq !== undefined) writes.touch(KIND.trait, t, { name: t, seq });
    }
  }

  /** Custom resource classes a provider's inventory gains must not be deleted (or renamed) meanwhile. */
  #touchClasses(writes: WriteSet, classes: Iterable<string>): void {
    for (const rc of classes) {
      const seq = this.model.classSeq.get(rc);
      if (seq !== undefined) writes.touch(KIND.resourceClass, rc, { name: rc, seq });
    }
  }

  /** One provider's write, answering the provider as applied. */
  #providerDecision(p: Provider, change: Partial<ProviderRecord>, bump = true, writes = new WriteSet()): Decision<Provider> {
    this.#providerWrite(writes, p, change, bump);
    return { writes, result: () => this.provider(p.uuid) };
  }

  provider(uuid: string): Provider {
    const p = this.model.providers.get(uuid);
    if (!p) throw providerNotFound(uuid);
    return p;
  }

  consumer(uuid: string): Consumer | undefined {
    return this.model.consumers.get(uuid);
  }

  // ---------------------------------------------------------------- resource providers

  /** POST /resource_providers (ResourceProvider.create). */
  createProvider(input: { name: string; uuid?: string | undefined; parent_provider_uuid?: string | null | undefined }): Promise<Provider> {
    const uuid = input.uuid ? canonicalUuid(input.uuid) : randomUUID();
    return this.#write(() => this.#decideCreateProvider(input, uuid));
  }

  #decideCreateProvider(input: { name: string; parent_provider_uuid?: string | null | undefined }, uuid: string): Decision<Provider> {
    const refuse = (reason: string) => badRequest(`Unable to create resource provider "${input.name}", ${uuid}: Object action create failed because: ${reason}`);
    if (!input.name) throw refuse('name is required');
    const parent = input.parent_provider_uuid ?? null;
    if (parent !== null) {
      if (parent === uuid) {
        throw refuse('parent provider UUID cannot be same as UUID. Please set parent provider UUID to None if there is no parent.');
      }
      if (!this.model.providers.has(parent)) throw refuse('parent provider UUID does not exist.');
    }
    if (this.model.providers.has(uuid)) {
      throw conflict(`Conflicting resource provider uuid: ${uuid} already exists.`, CODES.DUPLICATE_NAME);
    }
    if (this.model.byName.has(input.name)) {
      throw conflict(`Conflicting resource provider name: ${input.name} already exists.`, CODES.DUPLICATE_NAME);
    }
    // The counter also serialises creations across instances, so a name is never taken twice.
    const writes = new WriteSet();
    const rec: ProviderRecord = {
      uuid, name: input.name, parent_provider_uuid: parent, generation: 0, inventories: {}, traits: [], aggregates: [], seq: this.#takeSeq(writes),
    };
    writes.put(KIND.provider, uuid, rec);
    if (parent !== null) this.#touchProvider(writes, this.model.providers.get(parent)!);
    return { writes, result: () => this.provider(uuid) };
  }

  /**
   * PUT /resource_providers/{uuid} (ResourceProvider.save): renames and (re-/un-)parents without touching the
   * generation. A provider gains its first parent at any microversion; re-parenting and un-parenting need 1.37.
   */
  updateProvider(uuid: string, input: { name: string; parent_provider_uuid?: string | null | undefined }, allowReparenting: boolean): Promise<Provider> {
    return this.#write(() => this.#decideUpdateProvider(this.provider(uuid), input, allowReparenting));
  }

  #decideUpdateProvider(p: Provider, input: { name: string; parent_provider_uuid?: string | null | undefined }, allowReparenting: boolean): Decision<Provider> {
    const refuse = (action: string, reason: string) =>
      badRequest(`Unable to save resource provider ${p.uuid}: Object action ${action} failed because: ${reason}`);
    const parentUuid = input.parent_provider_uuid === undefined ? (p.parent?.uuid ?? null) : input.parent_provider_uuid;
    if (parentUuid !== null) {
      const parent = this.model.providers.get(parentUuid);
      if (!parent) throw refuse('create', 'parent provider UUID does not exist.');
      if (p.parent && p.parent !== parent && !allowReparenting) throw refuse('update', 're-parenting a provider is not currently allowed.');
      if (this.model.isAncestorOrSelf(p, parent)) throw refuse('update', 'creating loop in the provider tree is not allowed.');
    } else if (p.parent && !allowReparenting) {
      throw refuse('update', 'un-parenting a provider is not currently allowed.');
    }
    const other = this.model.byName.get(input.name);
    if (other && other !== p) throw conflict(`Conflicting resource provider ${input.name} already exists.`, CODES.DUPLICATE_NAME);
    const writes = new WriteSet();
    // A new parent must not go meanwhile (nor become this provider's child); a new name must not be taken by a
    // creation or rename elsewhere: renames take the counter unchanged, as creations take it.
    if (parentUuid !== null && parentUuid !== (p.parent?.uuid ?? null)) this.#touchProvider(writes, this.model.providers.get(parentUuid)!);
    if (input.name !== p.name) writes.touch(KIND.counter, COUNTER_KEY, { next: this.#nextSeq });
    return this.#providerDecision(p, { name: input.name, parent_provider_uuid: parentUuid }, false, writes);
  }

  deleteProvider(uuid: string): Promise<void> {
    return this.#write(() => this.#decideDeleteProvider(uuid));
  }

  #decideDeleteProvider(uuid: string): Decision<void> {
    const p = this.provider(uuid);
    if (p.children.size > 0) {
      throw conflict(`Unable to delete parent resource provider ${uuid}: It has child resource providers.`, CODES.PROVIDER_CANNOT_DELETE_PARENT);
    }
    if (p.consumers.size > 0) {
      throw conflict(`Unable to delete resource provider ${uuid}: Resource provider has allocations.`, CODES.PROVIDER_IN_USE);
    }
    const writes = new WriteSet();
    writes.put(KIND.provider, uuid, null);
    return { writes, result: () => undefined };
  }

  // ---------------------------------------------------------------- inventories

  private inventoryOf(input: InventoryFields): Inventory {
    return {
      total: input.total,
      reserved: input.reserved ?? INVENTORY_DEFAULTS.reserved,
      min_unit: input.min_unit ?? INVENTORY_DEFAULTS.min_unit,
      max_unit: input.max_unit ?? MAX_INT,
      step_size: input.step_size ?? INVENTORY_DEFAULTS.step_size,
      allocation_ratio: input.allocation_ratio ?? INVENTORY_DEFAULTS.allocation_ratio,
    };
  }

  /**
   * _validate_inventory_capacity: before 1.26 the capacity must be positive, from 1.26 reserved may equal total.
   * Returns the InvalidInventoryCapacity message, or null.
   */
  private capacityProblem(p: Provider, rc: string, inv: Inventory, mv: Microversion): string | null {
    const cap = capacity(inv);
    if (mv < 26 ? cap > 0 : cap >= 0) return null;
    return `Invalid inventory for '${rc}' on resource provider '${p.uuid}'. ` +
      `The reserved value is greater than ${mv < 26 ? 'or equal to ' : ''}total.`;
  }

  private inUse(p: Provider, classes: Iterable<string>): string[] {
    return [...classes].filter((rc) => (p.used.get(rc) ?? 0) > 0)
      .sort((a, b) => this.model.resourceClassIndex(a) - this.model.resourceClassIndex(b));
  }

  private requireGeneration(p: Provider, generation: number | undefined): void {
    if (generation !== p.generation) throw conflict('resource provider generation conflict', CODES.CONCURRENT_UPDATE);
  }

  /** PUT /resource_providers/{uuid}/inventories (set_inventory): replaces every inventory. */
  setInventories(uuid: string, generation: number, inventories: Record<string, InventoryFields>, mv: Microversion): Promise<Provider> {
    return this.#write(() => {
      const p = this.provider(uuid);
      this.requireGeneration(p, generation);
      const built = this.checkInventories(p, inventories, mv, 'Unable to update inventory for resource provider');
      return this.#inventoryDecision(p, built);
    });
  }

  /** The provider with these inventories (generation raised); classes it gains must still exist when committed. */
  #inventoryDecision(p: Provider, inventories: Record<string, Inventory>): Decision<Provider> {
    const writes = new WriteSet();
    this.#touchClasses(writes, Object.keys(inventories).filter((rc) => !p.inventories.has(rc)));
    return this.#providerDecision(p, { inventories }, true, writes);
  }

  /** The inventory checks of set_inventory; `prefix` is the handler's wording of a capacity problem. */
  private checkInventories(p: Provider, inventories: Record<string, InventoryFields>, mv: Microversion, prefix: string): Record<string, Inventory> {
    const built: Record<string, Inventory> = {};
    for (const [rc, input] of Object.entries(inventories)) {
      const inv = this.inventoryOf(input);
      const problem = this.capacityProblem(p, rc, inv, mv);
      if (problem) throw badRequest(`${prefix} ${p.uuid}: ${problem}`);
      built[rc] = inv;
    }
    for (const rc of Object.keys(built)) {
      if (!this.model.resourceClasses.has(rc)) {
        throw badRequest(`Unknown resource class in inventory for resource provider ${p.uuid}: No such resource class ${rc}.`);
      }
    }
    const inUse = this.inUse(p, [...p.inventories.keys()].filter((rc) => !(rc in built)));
    if (inUse.length > 0) {
      throw conflict(`update conflict: Inventory for '${inUse.join(', ')}' on resource provider '${p.uuid}' in use.`, CODES.INVENTORY_INUSE);
    }
    return built;
  }

  /** PUT /resource_providers/{uuid}/inventories/{rc} (update_inventory). */
  updateInventory(uuid: string, rc: string, input: InventoryFields, mv: Microversion): Promise<Provider> {
    return this.#write(() => this.#decideUpdateInventory(this.provider(uuid), rc, input, mv));
  }

  #decideUpdateInventory(p: Provider, rc: string, input: InventoryFields, mv: Microversion): Decision<Provider> {
    this.requireGeneration(p, input.resource_provider_generation);
    const inv = this.inventoryOf(input);
    const problem = this.capacityProblem(p, rc, inv, mv);
    if (problem) throw badRequest(`Unable to update inventory for resource provider ${p.uuid}: ${problem}`);
    if (!this.model.resourceClasses.has(rc)) throw notFound(`No such resource class ${rc}.`);
    if (!p.inventories.has(rc)) {
      throw badRequest(`No inventory record with resource class for resource provider ${p.uuid}: No inventory of class ${rc} found.`);
    }
    return this.#inventoryDecision(p, { ...Object.fromEntries(p.inventories), [rc]: inv });
  }

  /** POST /resource_providers/{uuid}/inventories (add_inventory): no generation in the body. */
  createInventory(uuid: string, rc: string, input: InventoryFields, mv: Microversion): Promise<Provider> {
    return this.#write(() => this.#decideCreateInventory(this.provider(uuid), rc, input, mv));
  }

  #decideCreateInventory(p: Provider, rc: string, input: InventoryFields, mv: Microversion): Decision<Provider> {
    const inv = this.inventoryOf(input);
    const problem = this.capacityProblem(p, rc, inv, mv);
    if (problem) throw badRequest(`Unable to create inventory for resource provider ${p.uuid}: ${problem}`);
    if (!this.model.resourceClasses.has(rc)) {
      throw badRequest(`Unable to create inventory for resource provider ${p.uuid}: No such resource class ${rc}.`);
    }
    if (p.inventories.has(rc)) {
      throw conflict(`Update conflict: Inventory for ${rc} on resource provider ${p.uuid} already exists.`, CODES.CONCURRENT_UPDATE);
    }
    return this.#inventoryDecision(p, { ...Object.fromEntries(p.inventories), [rc]: inv });
  }

  /** DELETE /resource_providers/{uuid}/inventories/{rc}. */
  async deleteInventory(uuid: string, rc: string): Promise<void> {
    await this.#write(() => this.#decideDeleteInventory(this.provider(uuid), rc));
  }

  #decideDeleteInventory(p: Provider, rc: string): Decision<Provider> {
    const notThere = (why: string) => notFound(`No inventory of class ${rc} found for delete: ${why}`);
    if (!this.model.resourceClasses.has(rc)) throw notThere(`No such resource class ${rc}.`);
    if (this.inUse(p, [rc]).length > 0) {
      throw conflict(`Unable to delete inventory of class ${rc}: Inventory for '${rc}' on resource provider '${p.uuid}' in use.`, CODES.CONCURRENT_UPDATE);
    }
    if (!p.inventories.has(rc)) throw notThere(`No inventory of class ${rc} found for delete`);
    return this.#providerDecision(p, { inventories: Object.fromEntries([...p.inventories].filter(([k]) => k !== rc)) });
  }

  /** DELETE /resource_providers/{uuid}/inventories (1.5+). */
  async deleteInventories(uuid: string): Promise<void> {
    await this.#write(() => {
      const p = this.provider(uuid);
      const inUse = this.inUse(p, p.inventories.keys());
      if (inUse.length > 0) {
        throw conflict(`Inventory for '${inUse.join(', ')}' on resource provider '${p.uuid}' in use.`, CODES.INVENTORY_INUSE);
      }
      return this.#providerDecision(p, { inventories: {} });
    });
  }

  // ---------------------------------------------------------------- traits and aggregates of a provider

  /** PUT /resource_providers/{uuid}/traits: the generation moves only when the set changes (_set_traits). */
  setProviderTraits(uuid: string, generation: number, traits: readonly string[]): Promise<Provider> {
    return this.#write(() => {
      const p = this.provider(uuid);
      if (p.generation !== generation) {
        throw conflict("Resource provider's generation already changed. Please update the generation and try again.", CODES.CONCURRENT_UPDATE);
      }
      const unknown = [...new Set(traits)].filter((t) => !this.model.traits.has(t));
      if (unknown.length > 0) throw badRequest(`No such trait ${unknown.join(', ')}`);
      return this.#replaceTraits(p, traits);
    });
  }

  #replaceTraits(p: Provider, traits: readonly string[]): Decision<Provider> {
    const wanted = new Set(traits);
    const writes = new WriteSet();
    if (wanted.size === p.traits.size && [...wanted].every((t) => p.traits.has(t))) return { writes, result: () => this.provider(p.uuid) };
    const kept = [...p.traits].filter((t) => wanted.has(t));
    const added = [...wanted].filter((t) => !p.traits.has(t));
    this.#touchTraits(writes, added);
    return this.#providerDecision(p, { traits: [...kept, ...added] }, true, writes);
  }

  async deleteProviderTraits(uuid: string): Promise<void> {
    await this.#write(() => this.#replaceTraits(this.provider(uuid), []));
  }

  /** PUT /resource_providers/{uuid}/aggregates: from 1.19 with a generation check and bump. */
  setProviderAggregates(uuid: string, aggregates: readonly string[], generation: number | null): Promise<Provider> {
    return this.#write(() => {
      const p = this.provider(uuid);
      if (generation !== null && p.generation !== generation) {
        throw conflict("Resource provider's generation already changed. Please update the generation and try again.", CODES.CONCURRENT_UPDATE);
      }
      const wanted = new Set(aggregates);
      const kept = [...p.aggregates].filter((a) => wanted.has(a));
      return this.#providerDecision(p, { aggregates: [...kept, ...[...wanted].filter((a) => !p.aggregates.has(a))] }, generation !== null);
    });
  }

  // ---------------------------------------------------------------- traits and resource classes

  /** PUT /traits/{name}: true when created. */
  createTrait(name: string): Promise<boolean> {
    if (!CUSTOM_PATTERN.test(name) || name.length > 255) {
      throw badRequest('The trait is invalid. A valid trait must be no longer than 255 characters, start with the prefix ' +
        '"CUSTOM_" and use following characters: "A"-"Z", "0"-"9" and "_"');
    }
    return this.#write(() => {
      const writes = new WriteSet();
      if (this.model.traits.has(name)) return { writes, result: () => false };
      writes.put(KIND.trait, name, { name, seq: this.#takeSeq(writes) });
      return { writes, result: () => true };
    });
  }

  async deleteTrait(name: string): Promise<void> {
    await this.#write(() => {
      if (!this.model.traits.has(name)) throw notFound(`No such trait(s): ${name}.`);
      if (STANDARD_TRAIT.has(name)) throw badRequest(`Cannot delete standard trait ${name}.`);
      if (this.model.providersWithTrait(name).size > 0) throw conflict(`The trait ${name} is in use by a resource provider.`);
      const writes = new WriteSet();
      writes.put(KIND.trait, name, null);
      return { writes, result: () => undefined };
    });
  }

  /** POST /resource_classes and PUT /resource_classes/{name} (1.7+): true when created. */
  createResourceClass(name: string, mustNotExist: boolean): Promise<boolean> {
    return this.#write(() => {
      const writes = new WriteSet();
      if (this.model.resourceClasses.has(name)) {
        if (mustNotExist) throw conflict(`Conflicting resource class already exists: ${name}`);
        return { writes, result: () => false };
      }
      writes.put(KIND.resourceClass, name, { name, seq: this.#takeSeq(writes) });
      return { writes, result: () => true };
    });
  }

  /**
   * PUT /resource_classes/{name} before 1.7: renames a custom class, inventories and allocations with it. The
   * new name keeps the old one's place in the order (its seq).
   */
  async renameResourceClass(from: string, to: string): Promise<void> {
    await this.#write(() => {
      const m = this.model;
      const writes = new WriteSet();
      if (!m.resourceClasses.has(from)) throw notFound(`No such resource class ${from}.`);
      if (STANDARD_RC.has(from)) throw badRequest(`Cannot update standard resource class ${from}`);
      if (from === to) return { writes, result: () => undefined };
      if (m.resourceClasses.has(to)) throw conflict(`Resource class already exists: ${to}`);
      writes.put(KIND.resourceClass, from, null);
      writes.put(KIND.resourceClass, to, { name: to, seq: m.classSeq.get(from) ?? m.resourceClassIndex(from) });
      const renamed = (rec: Record<string, unknown>) => Object.fromEntries(Object.entries(rec).map(([k, v]) => [k === from ? to : k, v]));
      for (const p of m.providersWithClass(from)) {
        const rec = m.providerRecord(p);
        writes.put(KIND.provider, p.uuid, { ...rec, inventories: renamed(rec.inventories) });
      }
      for (const c of m.consumers.values()) {
        if (![...c.allocations.values()].some((res) => res.has(from))) continue;
        const rec = m.consumerRecord(c);
        for (const rp of Object.keys(rec.allocations)) rec.allocations[rp] = renamed(rec.allocations[rp]!) as Record<string, number>;
        writes.put(KIND.consumer, c.uuid, rec);
      }
      return { writes, result: () => undefined };
    });
  }

  async deleteResourceClass(name: string): Promise<void> {
    await this.#write(() => {
      if (!this.model.resourceClasses.has(name)) throw notFound(`No such resource class ${name}.`);
      if (STANDARD_RC.has(name)) throw badRequest(`Error in delete resource class: Cannot delete standard resource class ${name}.`);
      if (this.model.providersWithClass(name).size > 0) {
        throw conflict(`Error in delete resource class: Cannot delete resource class ${name}. Class is in use in inventory.`);
      }
      const writes = new WriteSet();
      writes.put(KIND.resourceClass, name, null);
      return { writes, result: () => undefined };
    });
  }

  // ---------------------------------------------------------------- aggregate metadata (Nova host aggregates)

  async setAggregateMetadata(uuid: string, metadata: Record<string, string>): Promise<void> {
    await this.#write(() => {
      const writes = new WriteSet();
      writes.put(KIND.aggregateMetadata, uuid, Object.keys(metadata).length ? { metadata } : null);
      return { writes, result: () => undefined };
    });
  }

  // ---------------------------------------------------------------- allocations

  /**
   * util.ensure_consumer for each consumer of the body, in order: from 1.28 the consumer generation must match
   * (null for a new consumer); before 1.8 the owner is the "incomplete consumer".
   */
  private planConsumers(bodies: ReadonlyMap<string, ConsumerAllocationsBody>, mv: Microversion): ConsumerPlan[] {
    const plans: ConsumerPlan[] = [];
    for (const [uuid, body] of bodies) {
      const existing = this.model.consumers.get(uuid);
      if (mv >= 28) {
        const given = body.consumer_generation ?? null;
        const expected = existing ? existing.generation : null;
        if (given !== expected) {
          const got = given === null ? 'None' : String(given);
          throw conflict(existing
            ? `consumer generation conflict - expected ${expected} but got ${got}`
            : `consumer generation conflict - expected null but got ${got}`, CODES.CONCURRENT_UPDATE);
        }
      }
      const owner = body.project_id === undefined
        ? { project_id: INCOMPLETE_CONSUMER_ID, user_id: INCOMPLETE_CONSUMER_ID }
        : { project_id: body.project_id, user_id: body.user_id ?? INCOMPLETE_CONSUMER_ID };
      plans.push({ uuid, existing, ...owner, consumer_type: mv >= 38 ? body.consumer_type ?? null : existing?.consumer_type ?? null });
    }
    return plans;
  }

  /** The allocation rows of a write: the body's, or the consumer's current ones with used 0 when it empties them. */
  private rowsOf(plans: readonly ConsumerPlan[], bodies: ReadonlyMap<string, ConsumerAllocationsBody>): AllocationRow[] {
    const rows: AllocationRow[] = [];
    for (const plan of plans) {
      const body = bodies.get(plan.uuid)!;
      const entries = Object.entries(body.allocations);
      if (entries.length === 0) {
        for (const [rpUuid, res] of plan.existing?.allocations ?? []) {
          const p = this.model.providers.get(rpUuid);
          if (p) for (const rc of res.keys()) rows.push({ consumer: plan.uuid, provider: p, rc, used: 0 });
        }
        continue;
      }
      for (const [rpUuid] of entries) {
        if (!this.model.providers.has(rpUuid)) throw badRequest(`Allocation for resource provider '${rpUuid}' that does not exist.`);
      }
      for (const [rpUuid, alloc] of entries) {
        const p = this.model.providers.get(rpUuid)!;
        for (const [rc, used] of Object.entries(alloc.resources)) rows.push({ consumer: plan.uuid, provider: p, rc, used });
      }
    }
    return rows;
  }

  /** The usage of (provider, class) by every consumer except those written now (replace_all deletes theirs first). */
  private othersUsed(p: Provider, rc: string, consumers: ReadonlySet<string>): number {
    let used = p.used.get(rc) ?? 0;
    for (const c of consumers) used -= this.model.consumers.get(c)?.allocations.get(p.uuid)?.get(rc) ?? 0;
    return used;
  }

  /**
   * allocation._check_capacity_exceeded: every class must exist, every provider must have inventory of some
   * class written, and each row must fit its inventory's min_unit, max_unit and step_size, while the running sum
   * per provider and class must fit the capacity left by the other consumers. `inventory` reads the inventories
   * in force (the reshaper's interim ones).
   */
  private checkCapacity(
    rows: readonly AllocationRow[], consumers: ReadonlySet<string>, notFoundPrefix: string,
    inventory: (p: Provider, rc: string) => Inventory | undefined = (p, rc) => p.inventories.get(rc),
  ): void {
    const m = this.model;
    const classes = [...new Set(rows.map((r) => r.rc))];
    for (const rc of classes) if (!m.resourceClasses.has(rc)) throw badRequest(`${notFoundPrefix}No such resource class ${rc}.`);
    const providers = [...new Set(rows.map((r) => r.provider))];
    const missing = providers.filter((p) => !classes.some((rc) => inventory(p, rc) !== undefined));
    if (missing.length > 0) {
      throw conflict(`Unable to allocate inventory: Inventory for '${classes.join(', ')}' on resource provider '${missing.map((p) => p.uuid).join(', ')}' invalid.`);
    }
    const sums = new Map<Provider, Map<string, number>>();
    for (const row of rows) {
      let perClass = sums.get(row.provider);
      if (!perClass) sums.set(row.provider, (perClass = new Map()));
      const sum = (perClass.get(row.rc) ?? 0) + row.used;
      perClass.set(row.rc, sum);
      if (row.used === 0) continue;
      const inv = inventory(row.provider, row.rc);
      const where = `'${row.rc}' on resource provider '${row.provider.uuid}'`;
      if (!inv) throw conflict(`Unable to allocate inventory: Inventory for ${where} invalid.`);
      if (row.used < inv.min_unit || row.used > inv.max_unit || row.used % inv.step_size !== 0) {
        throw conflict(`Unable to allocate inventory: Unable to create allocation for ${where}. The requested amount would violate inventory constraints.`);
      }
      const cap = (inv.total - inv.reserved) * inv.allocation_ratio;
      const used = this.othersUsed(row.provider, row.rc, consumers);
      if (cap < used + row.used || cap < used + sum) {
        throw conflict(`Unable to allocate inventory: Unable to create allocation for ${where}. The requested amount would exceed the capacity.`);
      }
    }
  }

  /**
   * The writes of replace_all: each consumer's allocations replaced, the generation of every provider a row
   * names raised, the generation of every consumer with rows raised, consumers left without allocations deleted
   * (a new consumer without rows stays, at generation 0, as ensure_consumer created it).
   */
  private allocationWrites(plans: readonly ConsumerPlan[], rows: readonly AllocationRow[], writes = new WriteSet()): WriteSet {
    for (const plan of plans) {
      const mine = rows.filter((r) => r.consumer === plan.uuid);
      const allocations: Record<string, Record<string, number>> = {};
      for (const r of mine) if (r.used > 0) (allocations[r.provider.uuid] ??= {})[r.rc] = r.used;
      const base = plan.existing ? plan.existing.generation : 0;
      let rec: ConsumerRecord | null = {
        uuid: plan.uuid, project_id: plan.project_id, user_id: plan.user_id, consumer_type: plan.consumer_type,
        generation: mine.length > 0 ? base + 1 : base, allocations,
      };
      if (mine.length > 0 && Object.keys(allocations).length === 0) rec = null;
      writes.put(KIND.consumer, plan.uuid, rec);
    }
    // Every claim on a provider writes (and so expects) its record: two instances cannot both take its last unit.
    for (const p of new Set(rows.map((r) => r.provider))) {
      if (!writes.has(KIND.provider, p.uuid)) this.#providerWrite(writes, p);
    }
    return writes;
  }

  /**
   * PUT /allocations/{consumer_uuid} and POST /allocations: every consumer's allocations replaced atomically.
   * Decided again (with the usages the feed brought) when another instance changed a provider or consumer first,
   * as Placement's replace_all retries.
   */
  setAllocations(bodies: ReadonlyMap<string, ConsumerAllocationsBody>, mv: Microversion, single: boolean): Promise<void> {
    return this.#write(() => {
      const plans = this.planConsumers(bodies, mv);
      const rows = this.rowsOf(plans, bodies);
      const [first] = bodies.keys();
      this.checkCapacity(rows, new Set(bodies.keys()), single ? `Unable to allocate inventory for consumer ${first}: ` : 'Unable to allocate inventory ');
      return { writes: this.allocationWrites(plans, rows), result: () => undefined };
    }, ALLOCATION_CONFLICT);
  }

  /**
   * DELETE /allocations/{consumer_uuid}: providers keep their generations (delete_all does not raise them); a
   * release cannot over-commit, so only the consumer record arbitrates it.
   */
  async deleteAllocations(consumerUuid: string): Promise<void> {
    await this.#write(() => {
      const existing = this.model.consumers.get(consumerUuid);
      if (!existing || existing.allocations.size === 0) throw notFound(`No allocations for consumer '${consumerUuid}'`);
      const writes = new WriteSet();
      writes.put(KIND.consumer, consumerUuid, null);
      return { writes, result: () => undefined };
    });
  }

  // ---------------------------------------------------------------- reshaper

  /**
   * POST /reshaper (1.30+), as objects/reshaper.reshape: each provider first gets the union of its old and new
   * inventories, then the allocations are replaced (checked against those), then each provider gets exactly its
   * new inventories (a class still allocated cannot go). Generations rise once per step a provider takes part in.
   */
  async reshape(body: ReshapeBody, mv: Microversion): Promise<void> {
    await this.#write(() => this.#decideReshape(body, mv));
  }

  #decideReshape(body: ReshapeBody, mv: Microversion): Decision<void> {
    const m = this.model;
    const newInventories = new Map<Provider, Record<string, Inventory>>();
    for (const [rpUuid, data] of Object.entries(body.inventories)) {
      const p = m.providers.get(rpUuid);
      if (!p) {
        throw badRequest(`Resource provider ${rpUuid} in inventories not found: No resource provider with uuid ${rpUuid} found`,
          CODES.RESOURCE_PROVIDER_NOT_FOUND);
      }
      if (data.resource_provider_generation !== p.generation) {
        throw conflict(`resource provider generation conflict for provider ${rpUuid}: actual: ${p.generation}, given: ${data.resource_provider_generation}`,
          CODES.CONCURRENT_UPDATE);
      }
      const built: Record<string, Inventory> = {};
      for (const [rc, input] of Object.entries(data.inventories)) built[rc] = this.inventoryOf(input);
      newInventories.set(p, built);
    }
    const bodies = new Map(Object.entries(body.allocations));
    const plans = this.planConsumers(bodies, mv);
    const rows = this.rowsOf(plans, bodies);
    const generations = new Map<Provider, number>();
    const bump = (p: Provider) => generations.set(p, (generations.get(p) ?? p.generation) + 1);
    // 1. The interim (union) inventories.
    const interim = new Map<Provider, Map<string, Inventory>>();
    for (const [p, built] of newInventories) {
      if (Object.keys(built).length === 0) continue;
      for (const rc of Object.keys(built)) if (!m.resourceClasses.has(rc)) throw badRequest(`malformed reshaper data: No such resource class ${rc}.`);
      interim.set(p, new Map([...p.inventories, ...Object.entries(built)]));
      bump(p);
    }
    // 2. The allocations, against the interim inventories.
    const consumers = new Set(bodies.keys());
    try {
      this.checkCapacity(rows, consumers, 'malformed reshaper data: ', (p, rc) => (interim.get(p) ?? p.inventories).get(rc));
    } catch (err) {
      if (err instanceof PlacementError && err.status === 409) throw conflict(err.message);
      throw err;
    }
    for (const p of new Set(rows.map((r) => r.provider))) bump(p);
    // 3. The final inventories: what is still allocated must stay.
    for (const [p, built] of newInventories) {
      const removed = [...(interim.get(p) ?? p.inventories).keys()].filter((rc) => !(rc in built));
      const inUse = removed.filter((rc) => this.othersUsed(p, rc, consumers) + rows.filter((r) => r.provider === p && r.rc === rc).reduce((a, r) => a + r.used, 0) > 0)
        .sort((a, b) => m.resourceClassIndex(a) - m.resourceClassIndex(b));
      if (inUse.length > 0) {
        throw conflict(`update conflict: Inventory for '${inUse.join(', ')}' on resource provider '${p.uuid}' in use.`, CODES.INVENTORY_INUSE);
      }
      bump(p);
    }
    const writes = new WriteSet();
    for (const [p, generation] of generations) {
      writes.put(KIND.provider, p.uuid, {
        ...m.providerRecord(p), generation, ...(newInventories.has(p) ? { inventories: newInventories.get(p)! } : {}),
      });
    }
    for (const [p, built] of newInventories) this.#touchClasses(writes, Object.keys(built).filter((rc) => !p.inventories.has(rc)));
    this.allocationWrites(plans, rows, writes);
    return { writes, result: () => undefined };
  }

  // ---------------------------------------------------------------- reads

  /** GET /resource_providers: the providers passing every filter, in creation order. */
  listProviders(f: ProviderFilters): Provider[] {
    const m = this.model;
    for (const t of [...f.required.flat(), ...f.forbidden]) {
      if (!m.traits.has(t)) throw badRequest(`Invalid trait(s) in "required" parameter: No such trait(s): ${t}.`);
    }
    if (f.resources) {
      for (const rc of f.resources.keys()) {
        if (!m.resourceClasses.has(rc)) throw badRequest(`Invalid resource class in resources parameter: No such resource class ${rc}.`);
      }
    }
    let root: Provider | undefined;
    if (f.inTree !== undefined) {
      root = m.providers.get(f.inTree)?.root;
      if (!root) return [];
    }
    const out: Provider[] = [];
    const forbiddenAggs = [...f.forbiddenAggs];
    const forbiddenTraits = [...f.forbidden];
    for (const p of m.providers.values()) {
      if (f.name && p.name !== f.name) continue;
      if (f.uuid && p.uuid !== f.uuid) continue;
      if (root && p.root !== root) continue;
      if (!hasAllOrSets(p.aggregates, f.memberOf) || !hasNone(p.aggregates, forbiddenAggs)) continue;
      if (!hasAllOrSets(p.traits, f.required) || !hasNone(p.traits, forbiddenTraits)) continue;
      if (f.resources && ![...f.resources].every(([rc, n]) => {
        const inv = p.inventories.get(rc);
        return inv !== undefined && fits(inv, p.used.get(rc) ?? 0, n);
      })) continue;
      out.push(p);
    }
    return out;
  }

  /** GET /traits: every trait name passing the filters, in Placement's id order. */
  listTraits(filters: readonly TraitFilter[]): string[] {
    let traits = [...this.model.traits];
    for (const f of filters) {
      if (f.kind === 'in') traits = traits.filter((t) => f.names.has(t));
      else if (f.kind === 'startswith') traits = traits.filter((t) => t.startsWith(f.prefix));
      else traits = traits.filter((t) => (this.model.providersWithTrait(t).size > 0) === f.value);
    }
    return traits;
  }

  /** A provider's usage per inventoried class (0 when unused). */
  providerUsages(p: Provider): Record<string, number> {
    const usages: Record<string, number> = {};
    for (const rc of p.inventories.keys()) usages[rc] = p.used.get(rc) ?? 0;
    return usages;
  }

  /** GET /usages: a project's (and user's) usage, summed, and by consumer type (1.38). */
  totalUsages(q: UsagesQuery): { flat: Record<string, number>; byType: Record<string, Record<string, number>> } {
    const byType = new Map<string, Record<string, number>>();
    const flat: Record<string, number> = {};
    const type = q.consumerType;
    for (const c of this.model.consumers.values()) {
      if (c.allocations.size === 0) continue;
      if (c.project_id !== q.projectId || (q.userId && c.user_id !== q.userId)) continue;
      for (const res of c.allocations.values()) for (const [rc, n] of res) flat[rc] = (flat[rc] ?? 0) + n;
      const ctype = c.consumer_type ?? 'unknown';
      if (type !== undefined && type !== 'all' && type !== ctype) continue;
      if (type !== undefined && type !== 'all' && type !== 'unknown' && c.consumer_type === null) continue;
      const key = type === 'all' ? 'all' : ctype;
      const entry = byType.get(key) ?? { consumer_count: 0 };
      byType.set(key, entry);
      entry.consumer_count!++;
      for (const res of c.allocations.values()) for (const [rc, n] of res) entry[rc] = (entry[rc] ?? 0) + n;
    }
    return { flat, byType: Object.fromEntries(byType) };
  }

  /**
   * GET /allocation_candidates. With isolate_aggregates enabled, Nova's request filter is applied first, to the
   * query as Nova would have sent it.
   */
  /** `targetUuid` (explain_target): that provider's verdict too; 404 naming it when no provider has the uuid. */
  allocationCandidates(q: ParsedQuery, mv: Microversion, explain = false, targetUuid: string | null = null): CandidatesAnswer {
    const target = targetUuid === null ? undefined : this.model.providers.get(targetUuid);
    if (target === undefined && targetUuid !== null) throw providerNotFound(targetUuid);
    const isolated = this.#isolate(q);
    const options = this.settings.values;
    const result = findCandidates(this.model, q, {
      randomize: options.randomize_allocation_candidates, nestedAware: mv >= 29, explain,
      freeCapacityMultiplier: options.free_capacity_weight_multiplier, ...(target ? { target } : {}),
    });
    return { result, isolated };
  }

  /**
   * GET /headroom: how many more consumers with this request fit, each claiming the candidate ranked first (as
   * GET /allocation_candidates then PUT /allocations/{new consumer} would), until the first empty answer or `max`.
   * Changes nothing (headroom.ts).
   */
  headroom(q: ParsedQuery, mv: Microversion, max: number): HeadroomAnswer {
    this.#isolate(q);
    const options = this.settings.values;
    return headroom(this.model, q, {
      randomize: options.randomize_allocation_candidates, nestedAware: mv >= 29,
      freeCapacityMultiplier: options.free_capacity_weight_multiplier,
    }, max);
  }

  /** Nova's isolate_aggregates step, when enabled: the aggregates the request is kept out of (added to it). */
  #isolate(q: ParsedQuery): IsolatedAggregate[] | null {
    let isolated: IsolatedAggregate[] | null = null;
    const options = this.settings.values;
    if (options.enable_isolated_aggregate_filtering) {
      isolated = isolatedAggregates(this.model.aggregateMetadata, requiredTraitsOf(q.groups));
      if (isolated.length > 0) {
        const unsuffixed = q.groups.find((g) => g.suffix === '');
        // Nova then sends "resources=&member_of=!in:…", which Placement refuses.
        if (!unsuffixed) parseResources('');
        else for (const a of isolated) unsuffixed.forbiddenAggs.add(a.uuid);
      }
    }
    return isolated;
  }
}
