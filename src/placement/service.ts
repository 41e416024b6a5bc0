// The Placement service (Placement's objects layer): validates a write against the in-memory model in
// Placement's order of checks, commits it to the store, then applies it to the model — all in one synchronous
// step, so concurrent requests cannot over-commit and a refused or failed write changes nothing. Reads answer
// from the model. Errors are Placement's messages; the routes add the handler's wording where it wraps them.
import { randomUUID } from 'node:crypto';
import type { Store, StoreWrite } from '../store/store.ts';
import { capacity, fits, INVENTORY_DEFAULTS, MAX_INT, type Inventory } from './capacity.ts';
import { hasAllOrSets, hasNone } from './filters.ts';
import { findCandidates, type SearchResult } from './scheduler.ts';
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
} as const;

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
  /** Creation order of providers and resource classes across restarts (Placement lists them by id). */
  #seq = 0;
  constructor(private readonly store: Store, private readonly settings: { readonly values: PlacementOptions }) {}

  /** Loads everything from the store (parents before children, each kind in creation order). */
  load(): void {
    const bySeq = <T extends { seq?: number }>(a: { value: T }, b: { value: T }) => (a.value.seq ?? 0) - (b.value.seq ?? 0);
    const seen = (n: number | undefined) => {
      if (n !== undefined && n >= this.#seq) this.#seq = n + 1;
    };
    for (const r of this.store.load<{ name: string; seq?: number }>(KIND.trait).sort(bySeq)) {
      this.model.addTrait(r.key);
      seen(r.value.seq);
    }
    for (const r of this.store.load<{ name: string; seq?: number }>(KIND.resourceClass).sort(bySeq)) {
      this.model.resourceClasses.add(r.key);
      seen(r.value.seq);
    }
    for (const r of this.store.load<{ metadata: Record<string, string> }>(KIND.aggregateMetadata)) {
      this.model.aggregateMetadata.set(r.key, r.value.metadata);
    }
    let pending = this.store.load<ProviderRecord>(KIND.provider).sort(bySeq).map((r) => r.value);
    while (pending.length > 0) {
      const next: ProviderRecord[] = [];
      for (const rec of pending) {
        if (rec.parent_provider_uuid && !this.model.providers.has(rec.parent_provider_uuid)) next.push(rec);
        else {
          this.model.applyProvider(rec);
          seen(rec.seq);
        }
      }
      if (next.length === pending.length) throw new Error('placement store holds providers whose parents are missing');
      pending = next;
    }
    for (const r of this.store.load<ConsumerRecord>(KIND.consumer)) this.model.applyConsumer(r.key, r.value);
  }

  provider(uuid: string): Provider {
    const p = this.model.providers.get(uuid);
    if (!p) throw providerNotFound(uuid);
    return p;
  }

  consumer(uuid: string): Consumer | undefined {
    return this.model.consumers.get(uuid);
  }

  /** Commits a new version of the provider record and applies it; `bump` raises the generation. */
  private writeProvider(p: Provider, change: Partial<ProviderRecord>, bump = true): Provider {
    const rec: ProviderRecord = { ...this.model.providerRecord(p), ...change, generation: p.generation + (bump ? 1 : 0) };
    this.store.commit([{ kind: KIND.provider, key: p.uuid, value: rec }]);
    return this.model.applyProvider(rec);
  }

  // ---------------------------------------------------------------- resource providers

  /** POST /resource_providers (ResourceProvider.create). */
  createProvider(input: { name: string; uuid?: string | undefined; parent_provider_uuid?: string | null | undefined }): Provider {
    const uuid = input.uuid ? canonicalUuid(input.uuid) : randomUUID();
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
    const rec: ProviderRecord = {
      uuid, name: input.name, parent_provider_uuid: parent, generation: 0, inventories: {}, traits: [], aggregates: [], seq: this.#seq++,
    };
    this.store.commit([{ kind: KIND.provider, key: uuid, value: rec }]);
    return this.model.applyProvider(rec);
  }

  /**
   * PUT /resource_providers/{uuid} (ResourceProvider.save): renames and (re-/un-)parents without touching the
   * generation. A provider gains its first parent at any microversion; re-parenting and un-parenting need 1.37.
   */
  updateProvider(p: Provider, input: { name: string; parent_provider_uuid?: string | null | undefined }, allowReparenting: boolean): Provider {
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
    return this.writeProvider(p, { name: input.name, parent_provider_uuid: parentUuid }, false);
  }

  deleteProvider(uuid: string): void {
    const p = this.provider(uuid);
    if (p.children.size > 0) {
      throw conflict(`Unable to delete parent resource provider ${uuid}: It has child resource providers.`, CODES.PROVIDER_CANNOT_DELETE_PARENT);
    }
    if (p.consumers.size > 0) {
      throw conflict(`Unable to delete resource provider ${uuid}: Resource provider has allocations.`, CODES.PROVIDER_IN_USE);
    }
    this.store.commit([{ kind: KIND.provider, key: uuid, value: null }]);
    this.model.removeProvider(uuid);
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
  setInventories(p: Provider, generation: number, inventories: Record<string, InventoryFields>, mv: Microversion): Provider {
    this.requireGeneration(p, generation);
    const built = this.checkInventories(p, inventories, mv, 'Unable to update inventory for resource provider');
    return this.writeProvider(p, { inventories: built });
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
  updateInventory(p: Provider, rc: string, input: InventoryFields, mv: Microversion): Provider {
    this.requireGeneration(p, input.resource_provider_generation);
    const inv = this.inventoryOf(input);
    const problem = this.capacityProblem(p, rc, inv, mv);
    if (problem) throw badRequest(`Unable to update inventory for resource provider ${p.uuid}: ${problem}`);
    if (!this.model.resourceClasses.has(rc)) throw notFound(`No such resource class ${rc}.`);
    if (!p.inventories.has(rc)) {
      throw badRequest(`No inventory record with resource class for resource provider ${p.uuid}: No inventory of class ${rc} found.`);
    }
    return this.writeProvider(p, { inventories: { ...Object.fromEntries(p.inventories), [rc]: inv } });
  }

  /** POST /resource_providers/{uuid}/inventories (add_inventory): no generation in the body. */
  createInventory(p: Provider, rc: string, input: InventoryFields, mv: Microversion): Provider {
    const inv = this.inventoryOf(input);
    const problem = this.capacityProblem(p, rc, inv, mv);
    if (problem) throw badRequest(`Unable to create inventory for resource provider ${p.uuid}: ${problem}`);
    if (!this.model.resourceClasses.has(rc)) {
      throw badRequest(`Unable to create inventory for resource provider ${p.uuid}: No such resource class ${rc}.`);
    }
    if (p.inventories.has(rc)) {
      throw conflict(`Update conflict: Inventory for ${rc} on resource provider ${p.uuid} already exists.`, CODES.CONCURRENT_UPDATE);
    }
    return this.writeProvider(p, { inventories: { ...Object.fromEntries(p.inventories), [rc]: inv } });
  }

  /** DELETE /resource_providers/{uuid}/inventories/{rc}. */
  deleteInventory(p: Provider, rc: string): void {
    const notThere = (why: string) => notFound(`No inventory of class ${rc} found for delete: ${why}`);
    if (!this.model.resourceClasses.has(rc)) throw notThere(`No such resource class ${rc}.`);
    if (this.inUse(p, [rc]).length > 0) {
      throw conflict(`Unable to delete inventory of class ${rc}: Inventory for '${rc}' on resource provider '${p.uuid}' in use.`, CODES.CONCURRENT_UPDATE);
    }
    if (!p.inventories.has(rc)) throw notThere(`No inventory of class ${rc} found for delete`);
    this.writeProvider(p, { inventories: Object.fromEntries([...p.inventories].filter(([k]) => k !== rc)) });
  }

  /** DELETE /resource_providers/{uuid}/inventories (1.5+). */
  deleteInventories(p: Provider): void {
    const inUse = this.inUse(p, p.inventories.keys());
    if (inUse.length > 0) {
      throw conflict(`Inventory for '${inUse.join(', ')}' on resource provider '${p.uuid}' in use.`, CODES.INVENTORY_INUSE);
    }
    this.writeProvider(p, { inventories: {} });
  }

  // ---------------------------------------------------------------- traits and aggregates of a provider

  /** PUT /resource_providers/{uuid}/traits: the generation moves only when the set changes (_set_traits). */
  setProviderTraits(p: Provider, generation: number, traits: readonly string[]): Provider {
    if (p.generation !== generation) {
      throw conflict("Resource provider's generation already changed. Please update the generation and try again.", CODES.CONCURRENT_UPDATE);
    }
    const unknown = [...new Set(traits)].filter((t) => !this.model.traits.has(t));
    if (unknown.length > 0) throw badRequest(`No such trait ${unknown.join(', ')}`);
    return this.replaceTraits(p, traits);
  }

  private replaceTraits(p: Provider, traits: readonly string[]): Provider {
    const wanted = new Set(traits);
    if (wanted.size === p.traits.size && [...wanted].every((t) => p.traits.has(t))) return p;
    const kept = [...p.traits].filter((t) => wanted.has(t));
    return this.writeProvider(p, { traits: [...kept, ...[...wanted].filter((t) => !p.traits.has(t))] });
  }

  deleteProviderTraits(p: Provider): void {
    this.replaceTraits(p, []);
  }

  /** PUT /resource_providers/{uuid}/aggregates: from 1.19 with a generation check and bump. */
  setProviderAggregates(p: Provider, aggregates: readonly string[], generation: number | null): Provider {
    if (generation !== null && p.generation !== generation) {
      throw conflict("Resource provider's generation already changed. Please update the generation and try again.", CODES.CONCURRENT_UPDATE);
    }
    const wanted = new Set(aggregates);
    const kept = [...p.aggregates].filter((a) => wanted.has(a));
    return this.writeProvider(p, { aggregates: [...kept, ...[...wanted].filter((a) => !p.aggregates.has(a))] }, generation !== null);
  }

  // ---------------------------------------------------------------- traits and resource classes

  /** PUT /traits/{name}: true when created. */
  createTrait(name: string): boolean {
    if (!CUSTOM_PATTERN.test(name) || name.length > 255) {
      throw badRequest('The trait is invalid. A valid trait must be no longer than 255 characters, start with the prefix ' +
        '"CUSTOM_" and use following characters: "A"-"Z", "0"-"9" and "_"');
    }
    if (this.model.traits.has(name)) return false;
    this.store.commit([{ kind: KIND.trait, key: name, value: { name, seq: this.#seq++ } }]);
    this.model.addTrait(name);
    return true;
  }

  deleteTrait(name: string): void {
    if (!this.model.traits.has(name)) throw notFound(`No such trait(s): ${name}.`);
    if (STANDARD_TRAIT.has(name)) throw badRequest(`Cannot delete standard trait ${name}.`);
    if (this.model.providersWithTrait(name).size > 0) throw conflict(`The trait ${name} is in use by a resource provider.`);
    this.store.commit([{ kind: KIND.trait, key: name, value: null }]);
    this.model.deleteTrait(name);
  }

  /** POST /resource_classes and PUT /resource_classes/{name} (1.7+): true when created. */
  createResourceClass(name: string, mustNotExist: boolean): boolean {
    if (this.model.resourceClasses.has(name)) {
      if (mustNotExist) throw conflict(`Conflicting resource class already exists: ${name}`);
      return false;
    }
    this.store.commit([{ kind: KIND.resourceClass, key: name, value: { name, seq: this.#seq++ } }]);
    this.model.resourceClasses.add(name);
    return true;
  }

  /** PUT /resource_classes/{name} before 1.7: renames a custom class, inventories and allocations with it. */
  renameResourceClass(from: string, to: string): void {
    if (!this.model.resourceClasses.has(from)) throw notFound(`No such resource class ${from}.`);
    if (STANDARD_RC.has(from)) throw badRequest(`Cannot update standard resource class ${from}`);
    if (from === to) return;
    if (this.model.resourceClasses.has(to)) throw conflict(`Resource class already exists: ${to}`);
    const writes: StoreWrite[] = [
      { kind: KIND.resourceClass, key: from, value: null },
      { kind: KIND.resourceClass, key: to, value: { name: to, seq: this.model.resourceClassIndex(from) } },
    ];
    const m = this.model;
    const renamed = (rec: Record<string, unknown>) => Object.fromEntries(Object.entries(rec).map(([k, v]) => [k === from ? to : k, v]));
    for (const p of m.providersWithClass(from)) {
      const rec = m.providerRecord(p);
      writes.push({ kind: KIND.provider, key: p.uuid, value: { ...rec, inventories: renamed(rec.inventories) } });
    }
    for (const c of m.consumers.values()) {
      if (![...c.allocations.values()].some((res) => res.has(from))) continue;
      const rec = m.consumerRecord(c);
      for (const rp of Object.keys(rec.allocations)) rec.allocations[rp] = renamed(rec.allocations[rp]!) as Record<string, number>;
      writes.push({ kind: KIND.consumer, key: c.uuid, value: rec });
    }
    this.store.commit(writes);
    m.renameResourceClass(from, to);
  }

  deleteResourceClass(name: string): void {
    if (!this.model.resourceClasses.has(name)) throw notFound(`No such resource class ${name}.`);
    if (STANDARD_RC.has(name)) throw badRequest(`Error in delete resource class: Cannot delete standard resource class ${name}.`);
    if (this.model.providersWithClass(name).size > 0) {
      throw conflict(`Error in delete resource class: Cannot delete resource class ${name}. Class is in use in inventory.`);
    }
    this.store.commit([{ kind: KIND.resourceClass, key: name, value: null }]);
    this.model.resourceClasses.delete(name);
  }

  // ---------------------------------------------------------------- aggregate metadata (Nova host aggregates)

  setAggregateMetadata(uuid: string, metadata: Record<string, string>): void {
    this.store.commit([{ kind: KIND.aggregateMetadata, key: uuid, value: Object.keys(metadata).length ? { metadata } : null }]);
    if (Object.keys(metadata).length > 0) this.model.aggregateMetadata.set(uuid, { ...metadata });
    else this.model.aggregateMetadata.delete(uuid);
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
  private allocationWrites(plans: readonly ConsumerPlan[], rows: readonly AllocationRow[]) {
    const m = this.model;
    const writes: StoreWrite[] = [];
    const consumers = new Map<string, ConsumerRecord | null>();
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
      consumers.set(plan.uuid, rec);
      writes.push({ kind: KIND.consumer, key: plan.uuid, value: rec });
    }
    const touched = [...new Set(rows.map((r) => r.provider))];
    for (const p of touched) writes.push({ kind: KIND.provider, key: p.uuid, value: { ...m.providerRecord(p), generation: p.generation + 1 } });
    return { writes, consumers, touched };
  }

  private commitAllocations(plans: readonly ConsumerPlan[], rows: readonly AllocationRow[]): void {
    const { writes, consumers, touched } = this.allocationWrites(plans, rows);
    this.store.commit(writes);
    for (const [uuid, rec] of consumers) this.model.applyConsumer(uuid, rec);
    for (const p of touched) p.generation++;
  }

  /** PUT /allocations/{consumer_uuid} and POST /allocations: every consumer's allocations replaced atomically. */
  setAllocations(bodies: ReadonlyMap<string, ConsumerAllocationsBody>, mv: Microversion, single: boolean): void {
    const plans = this.planConsumers(bodies, mv);
    const rows = this.rowsOf(plans, bodies);
    const [first] = bodies.keys();
    this.checkCapacity(rows, new Set(bodies.keys()), single ? `Unable to allocate inventory for consumer ${first}: ` : 'Unable to allocate inventory ');
    this.commitAllocations(plans, rows);
  }

  /** DELETE /allocations/{consumer_uuid}: providers keep their generations (delete_all does not raise them). */
  deleteAllocations(consumerUuid: string): void {
    const existing = this.model.consumers.get(consumerUuid);
    if (!existing || existing.allocations.size === 0) throw notFound(`No allocations for consumer '${consumerUuid}'`);
    this.store.commit([{ kind: KIND.consumer, key: consumerUuid, value: null }]);
    this.model.applyConsumer(consumerUuid, null);
  }

  // ---------------------------------------------------------------- reshaper

  /**
   * POST /reshaper (1.30+), as objects/reshaper.reshape: each provider first gets the union of its old and new
   * inventories, then the allocations are replaced (checked against those), then each provider gets exactly its
   * new inventories (a class still allocated cannot go). Generations rise once per step a provider takes part in.
   */
  reshape(body: ReshapeBody, mv: Microversion): void {
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
    const { writes: allocationWrites, consumers: records } = this.allocationWrites(plans, rows);
    const providerRecords: ProviderRecord[] = [...generations].map(([p, generation]) => ({
      ...m.providerRecord(p), generation, ...(newInventories.has(p) ? { inventories: newInventories.get(p)! } : {}),
    }));
    this.store.commit([
      ...providerRecords.map((rec) => ({ kind: KIND.provider, key: rec.uuid, value: rec })),
      ...allocationWrites.filter((w) => w.kind === KIND.consumer),
    ]);
    // Released allocations first, so that no provider briefly holds usage of a class it lost.
    for (const uuid of records.keys()) m.applyConsumer(uuid, null);
    for (const rec of providerRecords) m.applyProvider(rec);
    for (const [uuid, rec] of records) if (rec !== null) m.applyConsumer(uuid, rec);
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
   * The claims are applied to the in-memory model and taken back before returning (synchronously: no other request
   * sees them); nothing is stored and no generation changes.
   */
  headroom(q: ParsedQuery, mv: Microversion, max: number): { fits: number; truncated: boolean; roots: Array<{ root_provider_uuid: string; fits: number }> } {
    this.#isolate(q);
    const options = this.settings.values;
    const search = {
      randomize: options.randomize_allocation_candidates, nestedAware: mv >= 29,
      freeCapacityMultiplier: options.free_capacity_weight_multiplier,
    };
    const first: ParsedQuery = { ...q, limit: 1 };
    const claimed: string[] = [];
    const perRoot = new Map<string, number>();
    try {
      while (claimed.length < max) {
        const best = findCandidates(this.model, first, search).candidates[0];
        if (!best) break;
        const allocations: Record<string, Record<string, number>> = {};
        for (const [p, resources] of best.allocations) allocations[p.uuid] = Object.fromEntries(resources);
        const uuid = randomUUID();
        this.model.applyConsumer(uuid, { uuid, project_id: 'headroom', user_id: 'headroom', consumer_type: null, generation: 0, allocations });
        claimed.push(uuid);
        perRoot.set(best.anchor.uuid, (perRoot.get(best.anchor.uuid) ?? 0) + 1);
      }
    } finally {
      for (const uuid of claimed) this.model.applyConsumer(uuid, null);
    }
    const roots = [...perRoot].sort(([a], [b]) => (a < b ? -1 : 1)).map(([root_provider_uuid, fits]) => ({ root_provider_uuid, fits }));
    return { fits: claimed.length, truncated: claimed.length === max, roots };
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
