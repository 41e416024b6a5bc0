// The Placement service: validates a write against the in-memory model, commits it to the store, then applies
// it to the model — all in one synchronous step, so concurrent requests cannot over-commit and a refused or
// failed write changes nothing.
import { randomUUID } from 'node:crypto';
import type { Store, StoreWrite } from '../store/store.ts';
import { fits, INVENTORY_DEFAULTS, MAX_INT, type Inventory } from './capacity.ts';
import { findCandidates, type SearchResult } from './candidates.ts';
import { badRequest, CODES, conflict, notFound } from './errors.ts';
import { isolatedAggregates, requiredTraitsOf, type IsolatedAggregate } from './isolate.ts';
import type { Microversion } from './microversion.ts';
import { type Consumer, type ConsumerRecord, PlacementModel, type Provider, type ProviderRecord } from './model.ts';
import { parseResources, type ParsedQuery, type ProviderFilters, type TraitFilter, type UsagesQuery } from './query.ts';
import { STANDARD_RESOURCE_CLASSES, STANDARD_TRAITS } from './standard.ts';

export const KIND = {
  provider: 'placement.rp',
  consumer: 'placement.consumer',
  trait: 'placement.trait',
  resourceClass: 'placement.rc',
  aggregateMetadata: 'placement.aggmeta',
} as const;

const STANDARD_RC = new Set(STANDARD_RESOURCE_CLASSES);
const STANDARD_TRAIT = new Set(STANDARD_TRAITS);

export interface InventoryInput {
  total: number;
  reserved?: number | undefined;
  min_unit?: number | undefined;
  max_unit?: number | undefined;
  step_size?: number | undefined;
  allocation_ratio?: number | undefined;
}

export interface ConsumerAllocationsInput {
  allocations: Record<string, { resources: Record<string, number>; generation?: number | undefined }>;
  consumer_generation: number | null;
  project_id: string;
  user_id: string;
  consumer_type?: string | undefined;
}

const providerNotFound = (uuid: string) =>
  notFound(`No resource provider with uuid ${uuid} found`, CODES.RESOURCE_PROVIDER_NOT_FOUND);

/** The scheduling options the service reads at each request (the configuration's Placement part). */
export interface PlacementOptions {
  enable_isolated_aggregate_filtering: boolean;
  randomize_allocation_candidates: boolean;
}

export interface CandidatesAnswer {
  result: SearchResult;
  /** Nova's isolated aggregates added to the request, or null when isolate_aggregates is disabled. */
  isolated: IsolatedAggregate[] | null;
}

const hasAll = (values: ReadonlySet<string>, orSets: readonly string[][]) => orSets.every((set) => set.some((v) => values.has(v)));
const hasNone = (values: ReadonlySet<string>, forbidden: ReadonlySet<string>) => ![...forbidden].some((v) => values.has(v));

export class PlacementService {
  readonly model = new PlacementModel();
  constructor(private readonly store: Store, private readonly options: PlacementOptions) {}

  /** Loads everything from the store (parents before children). */
  load(): void {
    for (const r of this.store.load<{ name: string }>(KIND.trait)) this.model.traits.add(r.key);
    for (const r of this.store.load<{ name: string }>(KIND.resourceClass)) this.model.resourceClasses.add(r.key);
    for (const r of this.store.load<{ metadata: Record<string, string> }>(KIND.aggregateMetadata)) {
      this.model.aggregateMetadata.set(r.key, r.value.metadata);
    }
    let pending = this.store.load<ProviderRecord>(KIND.provider).map((r) => r.value);
    while (pending.length > 0) {
      const next: ProviderRecord[] = [];
      for (const rec of pending) {
        if (rec.parent_provider_uuid && !this.model.providers.has(rec.parent_provider_uuid)) next.push(rec);
        else this.model.applyProvider(rec);
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

  private checkGeneration(p: Provider, generation: number, message: string): void {
    if (p.generation !== generation) throw conflict(message, CODES.CONCURRENT_UPDATE);
  }

  /** Commits a new version of the provider record (generation + 1) and applies it. */
  private writeProvider(p: Provider, change: Partial<ProviderRecord>): Provider {
    const rec: ProviderRecord = { ...this.model.providerRecord(p), ...change, generation: p.generation + 1 };
    this.store.commit([{ kind: KIND.provider, key: p.uuid, value: rec }]);
    return this.model.applyProvider(rec);
  }

  // ---------------------------------------------------------------- resource providers

  createProvider(input: { name: string; uuid?: string | undefined; parent_provider_uuid?: string | null | undefined }): Provider {
    const uuid = input.uuid ?? randomUUID();
    if (this.model.byName.has(input.name)) {
      throw conflict(`Conflicting resource provider name: ${input.name} already exists.`, CODES.DUPLICATE_NAME);
    }
    if (this.model.providers.has(uuid)) {
      throw conflict(`Conflicting resource provider uuid: ${uuid} already exists.`, CODES.DUPLICATE_NAME);
    }
    const parent = input.parent_provider_uuid ?? null;
    if (parent !== null && !this.model.providers.has(parent)) {
      throw badRequest(`parent provider UUID cannot be found: ${parent}`);
    }
    const rec: ProviderRecord = {
      uuid, name: input.name, parent_provider_uuid: parent, generation: 0, inventories: {}, traits: [], aggregates: [],
    };
    this.store.commit([{ kind: KIND.provider, key: uuid, value: rec }]);
    return this.model.applyProvider(rec);
  }

  updateProvider(uuid: string, input: { name: string; parent_provider_uuid?: string | null | undefined }): Provider {
    const p = this.provider(uuid);
    const other = this.model.byName.get(input.name);
    if (other && other !== p) {
      throw conflict(`Conflicting resource provider name: ${input.name} already exists.`, CODES.DUPLICATE_NAME);
    }
    if (input.parent_provider_uuid !== undefined && (input.parent_provider_uuid ?? null) !== (p.parent?.uuid ?? null)) {
      throw badRequest('re-parenting a provider is not currently allowed.');
    }
    return this.writeProvider(p, { name: input.name });
  }

  deleteProvider(uuid: string): void {
    const p = this.provider(uuid);
    if (p.consumers.size > 0) {
      throw conflict(`Unable to delete resource provider ${uuid}: Resource provider has allocations.`, CODES.PROVIDER_IN_USE);
    }
    if (p.children.size > 0) {
      throw conflict(
        `Unable to delete parent resource provider ${uuid}: It has child resource providers.`, CODES.PROVIDER_CANNOT_DELETE_PARENT,
      );
    }
    this.store.commit([{ kind: KIND.provider, key: uuid, value: null }]);
    this.model.removeProvider(uuid);
  }

  // ---------------------------------------------------------------- inventories

  private buildInventory(p: Provider, rc: string, input: InventoryInput): Inventory {
    if (!this.model.resourceClasses.has(rc)) {
      throw badRequest(`Unknown resource class in inventory for resource provider ${p.uuid}: ${rc}`);
    }
    const inv: Inventory = {
      total: input.total,
      reserved: input.reserved ?? INVENTORY_DEFAULTS.reserved,
      min_unit: input.min_unit ?? INVENTORY_DEFAULTS.min_unit,
      max_unit: input.max_unit ?? MAX_INT,
      step_size: input.step_size ?? INVENTORY_DEFAULTS.step_size,
      allocation_ratio: input.allocation_ratio ?? INVENTORY_DEFAULTS.allocation_ratio,
    };
    if (inv.reserved > inv.total) {
      throw badRequest(
        `Unable to update inventory for resource provider ${p.uuid}: Invalid inventory for '${rc}' on resource provider ` +
          `'${p.uuid}'. The reserved value is greater than total.`,
      );
    }
    if (inv.min_unit > inv.max_unit) {
      throw badRequest(
        `Unable to update inventory for resource provider ${p.uuid}: Invalid inventory for '${rc}' on resource provider ` +
          `'${p.uuid}'. The min_unit value is greater than max_unit.`,
      );
    }
    return inv;
  }

  /** Classes that have allocations cannot lose their inventory (they would strand the allocations). */
  private checkNotInUse(p: Provider, removed: string[], prefix: string): void {
    const inUse = removed.filter((rc) => (p.used.get(rc) ?? 0) > 0).sort();
    if (inUse.length > 0) {
      throw conflict(`${prefix}Inventory for '${inUse.join(', ')}' on resource provider '${p.uuid}' in use.`, CODES.INVENTORY_INUSE);
    }
  }

  setInventories(uuid: string, generation: number, inventories: Record<string, InventoryInput>): Provider {
    const p = this.provider(uuid);
    this.checkGeneration(p, generation, 'resource provider generation conflict');
    const built: Record<string, Inventory> = {};
    for (const [rc, input] of Object.entries(inventories)) built[rc] = this.buildInventory(p, rc, input);
    this.checkNotInUse(p, [...p.inventories.keys()].filter((rc) => !(rc in built)), 'update conflict: ');
    return this.writeProvider(p, { inventories: built });
  }

  setInventory(uuid: string, rc: string, generation: number, input: InventoryInput): Provider {
    const p = this.provider(uuid);
    this.checkGeneration(p, generation, 'resource provider generation conflict');
    if (!p.inventories.has(rc)) throw badRequest(`No inventory record with resource class for resource provider ${uuid}: ${rc}`);
    const inv = this.buildInventory(p, rc, input);
    return this.writeProvider(p, { inventories: { ...Object.fromEntries(p.inventories), [rc]: inv } });
  }

  createInventory(uuid: string, rc: string, generation: number, input: InventoryInput): Provider {
    const p = this.provider(uuid);
    this.checkGeneration(p, generation, 'resource provider generation conflict');
    if (p.inventories.has(rc)) {
      throw conflict(`Update conflict: Inventory for ${rc} on resource provider ${uuid} already exists.`);
    }
    const inv = this.buildInventory(p, rc, input);
    return this.writeProvider(p, { inventories: { ...Object.fromEntries(p.inventories), [rc]: inv } });
  }

  deleteInventory(uuid: string, rc: string): void {
    const p = this.provider(uuid);
    if (!p.inventories.has(rc)) throw notFound(`No inventory of class ${rc} found for delete`);
    this.checkNotInUse(p, [rc], `Unable to delete inventory of class ${rc}: `);
    const rest = Object.fromEntries([...p.inventories].filter(([k]) => k !== rc));
    this.writeProvider(p, { inventories: rest });
  }

  deleteInventories(uuid: string): void {
    const p = this.provider(uuid);
    this.checkNotInUse(p, [...p.inventories.keys()], 'Unable to delete inventory for resource provider ' + uuid + ': ');
    this.writeProvider(p, { inventories: {} });
  }

  // ---------------------------------------------------------------- traits and aggregates of a provider

  setProviderTraits(uuid: string, generation: number, traits: string[]): Provider {
    const p = this.provider(uuid);
    const unknown = [...new Set(traits)].filter((t) => !this.model.traits.has(t));
    if (unknown.length > 0) throw badRequest(`No such trait(s): ${unknown.join(', ')}.`);
    this.checkGeneration(p, generation,
      "Resource provider's generation already changed. Please update the generation and try again.");
    return this.writeProvider(p, { traits: [...new Set(traits)].sort() });
  }

  deleteProviderTraits(uuid: string): void {
    const p = this.provider(uuid);
    this.writeProvider(p, { traits: [] });
  }

  setProviderAggregates(uuid: string, generation: number, aggregates: string[]): Provider {
    const p = this.provider(uuid);
    this.checkGeneration(p, generation,
      "Resource provider's generation already changed. Please update the generation and try again.");
    return this.writeProvider(p, { aggregates: [...new Set(aggregates)].sort() });
  }

  // ---------------------------------------------------------------- traits and resource classes

  createTrait(name: string): boolean {
    if (!/^CUSTOM_[A-Z0-9_]+$/.test(name) || name.length > 255) {
      throw badRequest('The trait is invalid. A valid trait must be no longer than 255 characters, start with the prefix ' +
        '"CUSTOM_" and use following characters: "A"-"Z", "0"-"9" and "_"');
    }
    if (this.model.traits.has(name)) return false;
    this.store.commit([{ kind: KIND.trait, key: name, value: { name } }]);
    this.model.traits.add(name);
    return true;
  }

  deleteTrait(name: string): void {
    if (!this.model.traits.has(name)) throw notFound(`No such trait(s): ${name}.`);
    if (STANDARD_TRAIT.has(name)) throw badRequest(`Cannot delete standard trait ${name}.`);
    if (this.model.providersWithTrait(name).size > 0) throw conflict(`The trait ${name} is in use by a resource provider.`);
    this.store.commit([{ kind: KIND.trait, key: name, value: null }]);
    this.model.traits.delete(name);
  }

  createResourceClass(name: string, mustNotExist: boolean): boolean {
    if (!/^CUSTOM_[A-Z0-9_]+$/.test(name) || name.length > 255) {
      throw badRequest(`JSON does not validate: '${name}' does not match '^CUSTOM_[A-Z0-9_]+$'`);
    }
    if (this.model.resourceClasses.has(name)) {
      if (mustNotExist) throw conflict(`Conflicting resource class already exists: ${name}`, CODES.DUPLICATE_NAME);
      return false;
    }
    this.store.commit([{ kind: KIND.resourceClass, key: name, value: { name } }]);
    this.model.resourceClasses.add(name);
    return true;
  }

  deleteResourceClass(name: string): void {
    if (!this.model.resourceClasses.has(name)) throw notFound(`No such resource class ${name}.`);
    if (STANDARD_RC.has(name)) throw badRequest(`Cannot delete standard resource class ${name}`);
    if (this.model.providersWithClass(name).size > 0) {
      throw conflict(`Unable to delete resource class ${name}. Class is in use in inventory.`);
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
   * Replaces the allocations of one or more consumers atomically (PUT /allocations/{c}, POST /allocations).
   * Checks, in Placement's order: providers and classes exist, consumer generations, then per provider and
   * class the inventory constraints and the capacity, with every consumer's current allocations released first.
   */
  setAllocations(requests: ReadonlyMap<string, ConsumerAllocationsInput>): void {
    const m = this.model;
    // 1. Shape: providers and classes exist.
    for (const [consumerUuid, req] of requests) {
      for (const [rpUuid, alloc] of Object.entries(req.allocations)) {
        if (!m.providers.has(rpUuid)) {
          throw badRequest(`Allocation for resource provider '${rpUuid}' that does not exist.`);
        }
        for (const rc of Object.keys(alloc.resources)) {
          if (!m.resourceClasses.has(rc)) {
            throw badRequest(`Unable to allocate inventory for consumer ${consumerUuid}: No such resource class ${rc}.`);
          }
        }
      }
    }
    // 2. Consumer generations.
    for (const [consumerUuid, req] of requests) {
      const existing = m.consumers.get(consumerUuid);
      if (!existing) {
        if (req.consumer_generation !== null) {
          throw conflict(`consumer generation conflict - expected null but got ${req.consumer_generation}`, CODES.CONCURRENT_UPDATE);
        }
      } else if (req.consumer_generation !== existing.generation) {
        throw conflict(
          `consumer generation conflict - expected ${req.consumer_generation} but got ${existing.generation}`, CODES.CONCURRENT_UPDATE,
        );
      }
    }
    // 3. Capacity: usage without these consumers' current allocations, plus everything requested.
    const released = new Map<Provider, Map<string, number>>();
    const requested = new Map<Provider, Map<string, number>>();
    const touched = new Set<Provider>();
    const add = (target: Map<Provider, Map<string, number>>, p: Provider, rc: string, n: number) => {
      let res = target.get(p);
      if (!res) target.set(p, (res = new Map()));
      res.set(rc, (res.get(rc) ?? 0) + n);
    };
    for (const consumerUuid of requests.keys()) {
      const existing = m.consumers.get(consumerUuid);
      if (!existing) continue;
      for (const [rpUuid, res] of existing.allocations) {
        const p = m.providers.get(rpUuid);
        if (!p) continue;
        touched.add(p);
        for (const [rc, n] of res) add(released, p, rc, n);
      }
    }
    for (const req of requests.values()) {
      for (const [rpUuid, alloc] of Object.entries(req.allocations)) {
        const p = m.providers.get(rpUuid)!;
        touched.add(p);
        for (const [rc, n] of Object.entries(alloc.resources)) add(requested, p, rc, n);
      }
    }
    for (const [p, res] of requested) {
      for (const [rc, amount] of res) {
        const inv = p.inventories.get(rc);
        if (!inv) {
          throw conflict(`Unable to allocate inventory: Inventory for '${rc}' on resource provider '${p.uuid}' invalid.`);
        }
        if (amount < inv.min_unit || amount > inv.max_unit || amount % inv.step_size !== 0) {
          throw conflict(`Unable to allocate inventory: Unable to create allocation for '${rc}' on resource provider ` +
            `'${p.uuid}'. The requested amount would violate inventory constraints.`);
        }
        const used = (p.used.get(rc) ?? 0) - (released.get(p)?.get(rc) ?? 0);
        if ((inv.total - inv.reserved) * inv.allocation_ratio < used + amount) {
          throw conflict(`Unable to allocate inventory: Unable to create allocation for '${rc}' on resource provider ` +
            `'${p.uuid}'. The requested amount would exceed the capacity.`);
        }
      }
    }
    // 4. Write: consumers (deleted when left without allocations) and every touched provider's generation.
    const writes: StoreWrite[] = [];
    const consumerRecords = new Map<string, ConsumerRecord | null>();
    for (const [consumerUuid, req] of requests) {
      const existing = m.consumers.get(consumerUuid);
      const allocations: Record<string, Record<string, number>> = {};
      for (const [rpUuid, alloc] of Object.entries(req.allocations)) {
        if (Object.keys(alloc.resources).length > 0) allocations[rpUuid] = { ...alloc.resources };
      }
      const rec: ConsumerRecord | null = Object.keys(allocations).length === 0 ? null : {
        uuid: consumerUuid, project_id: req.project_id, user_id: req.user_id,
        consumer_type: req.consumer_type ?? existing?.consumer_type ?? null,
        generation: existing ? existing.generation + 1 : 1, allocations,
      };
      consumerRecords.set(consumerUuid, rec);
      writes.push({ kind: KIND.consumer, key: consumerUuid, value: rec });
    }
    for (const p of touched) {
      writes.push({ kind: KIND.provider, key: p.uuid, value: { ...m.providerRecord(p), generation: p.generation + 1 } });
    }
    this.store.commit(writes);
    for (const [consumerUuid, rec] of consumerRecords) m.applyConsumer(consumerUuid, rec);
    for (const p of touched) p.generation++;
  }

  deleteAllocations(consumerUuid: string): void {
    const existing = this.model.consumers.get(consumerUuid);
    if (!existing) throw notFound(`No allocations for consumer '${consumerUuid}'`);
    const writes: StoreWrite[] = [{ kind: KIND.consumer, key: consumerUuid, value: null }];
    const touched = [...existing.allocations.keys()].map((u) => this.model.providers.get(u)).filter((p): p is Provider => !!p);
    for (const p of touched) {
      writes.push({ kind: KIND.provider, key: p.uuid, value: { ...this.model.providerRecord(p), generation: p.generation + 1 } });
    }
    this.store.commit(writes);
    this.model.applyConsumer(consumerUuid, null);
    for (const p of touched) p.generation++;
  }

  // ---------------------------------------------------------------- reads

  consumer(uuid: string): Consumer | undefined {
    return this.model.consumers.get(uuid);
  }

  /** GET /resource_providers: the providers passing every filter, in creation order. */
  listProviders(f: ProviderFilters): Provider[] {
    const m = this.model;
    if (f.resources) {
      for (const rc of f.resources.keys()) {
        if (!m.resourceClasses.has(rc)) throw badRequest(`Invalid resource class in resources parameter: No such resource class ${rc}.`);
      }
    }
    for (const t of [...f.required.flat(), ...f.forbidden]) {
      if (!m.traits.has(t)) throw badRequest(`No such trait(s): ${t}.`);
    }
    let root: Provider | undefined;
    if (f.inTree !== undefined) {
      root = m.providers.get(f.inTree)?.root;
      if (!root) return [];
    }
    const out: Provider[] = [];
    for (const p of m.providers.values()) {
      if (f.name !== undefined && p.name !== f.name) continue;
      if (f.uuid !== undefined && p.uuid !== f.uuid) continue;
      if (root && p.root !== root) continue;
      if (!hasAll(p.aggregates, f.memberOf) || !hasNone(p.aggregates, f.forbiddenAggs)) continue;
      if (!hasAll(p.traits, f.required) || !hasNone(p.traits, f.forbidden)) continue;
      if (f.resources && ![...f.resources].every(([rc, n]) => {
        const inv = p.inventories.get(rc);
        return inv !== undefined && fits(inv, p.used.get(rc) ?? 0, n);
      })) continue;
      out.push(p);
    }
    return out;
  }

  /** GET /traits: every trait name passing the filters, sorted. */
  listTraits(filters: readonly TraitFilter[]): string[] {
    let traits = [...this.model.traits];
    for (const f of filters) {
      if (f.kind === 'in') traits = traits.filter((t) => f.names.has(t));
      else if (f.kind === 'startswith') traits = traits.filter((t) => t.startsWith(f.prefix));
      else traits = traits.filter((t) => (this.model.providersWithTrait(t).size > 0) === f.value);
    }
    return traits.sort();
  }

  /** A provider's usage per class: every inventoried class (0 when unused) and whatever is allocated. */
  providerUsages(p: Provider): Record<string, number> {
    const usages: Record<string, number> = {};
    for (const rc of p.inventories.keys()) usages[rc] = p.used.get(rc) ?? 0;
    for (const [rc, n] of p.used) if (n > 0) usages[rc] = n;
    return usages;
  }

  /** GET /usages: a project's (and user's) usage, summed, and by consumer type (1.38). */
  totalUsages(q: UsagesQuery): { flat: Record<string, number>; byType: Record<string, Record<string, number>> } {
    const byType = new Map<string, Record<string, number>>();
    const flat: Record<string, number> = {};
    const type = q.consumerType;
    for (const c of this.model.consumers.values()) {
      if (c.project_id !== q.projectId || (q.userId !== undefined && c.user_id !== q.userId)) continue;
      const ctype = c.consumer_type ?? 'unknown';
      if (type !== undefined && type !== 'all' && type !== ctype) continue;
      const key = type === 'all' ? 'all' : ctype;
      const entry = byType.get(key) ?? { consumer_count: 0 };
      byType.set(key, entry);
      entry.consumer_count!++;
      for (const res of c.allocations.values()) {
        for (const [rc, n] of res) {
          entry[rc] = (entry[rc] ?? 0) + n;
          flat[rc] = (flat[rc] ?? 0) + n;
        }
      }
    }
    return { flat, byType: Object.fromEntries(byType) };
  }

  /**
   * GET /allocation_candidates. With isolate_aggregates enabled, Nova's request filter is applied first, to the
   * query as Nova would have sent it.
   */
  allocationCandidates(q: ParsedQuery, mv: Microversion): CandidatesAnswer {
    let isolated: IsolatedAggregate[] | null = null;
    if (this.options.enable_isolated_aggregate_filtering) {
      isolated = isolatedAggregates(this.model.aggregateMetadata, requiredTraitsOf(q.groups));
      if (isolated.length > 0) {
        const unsuffixed = q.groups.find((g) => g.suffix === '');
        // Nova then sends "resources=&member_of=!in:…", which Placement refuses.
        if (!unsuffixed) parseResources('');
        else for (const a of isolated) unsuffixed.forbiddenAggs.add(a.uuid);
      }
    }
    const result = findCandidates(this.model, q, { randomize: this.options.randomize_allocation_candidates, nestedAware: mv >= 29 });
    return { result, isolated };
  }
}
