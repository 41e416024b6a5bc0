// zod schemas of the Placement-compatible routes, one per microversion range where Placement's own JSON schemas
// differ (placement/schemas/*.py): the handlers validate with the one for the requested microversion, the
// routes document the newest. Ids are prefixed "Placement".
import { z } from 'zod';
import { MAX_INT } from './capacity.ts';
import type { Microversion } from './microversion.ts';
import { integer, integerOrNull, jsonschemaCheck, minProperties, uniqueItems, uuidString } from './validate.ts';

const RC_PATTERN = /^[A-Z0-9_]+$/;
const CUSTOM_PATTERN = /^CUSTOM_[A-Z0-9_]+$/;
/** The keys of allocations and POST /allocations bodies (schemas/common.py UUID_PATTERN). */
const UUID_KEY = /^[0-9a-fA-F-]{36}$/;
const CONSUMER_TYPE = /^[A-Z0-9_]+$/;
/** db/constants.py SQL_SP_FLOAT_MAX. */
const FLOAT_MAX = 3.40282e38;

const bounded = (min: number) => integer().min(min).max(MAX_INT);

// ---------------------------------------------------------------- examples

/**
 * The names the examples use. In this order they work on an empty server (and the walker test runs them so):
 * create the provider, give it inventories (generations 0 → 4), traits (→ 5) and an aggregate (→ 6), ask for
 * candidates, claim for EXAMPLE.consumer (→ 7) and EXAMPLE.migration (→ 8), reshape, then delete it all again.
 */
const EXAMPLE = {
  provider: '4e8e5957-649f-477b-9e5b-f1f75b21c03c',
  aggregate: '7a2a8b4f-5e3b-4c1d-9f0e-6d2c1b0a9e87',
  consumer: '9d1f6c2a-3b4e-4f5a-8c7d-0e1f2a3b4c5d',
  migration: 'b0c1d2e3-f4a5-4b6c-9d7e-8f9a0b1c2d3e',
  project: '6f3c0c2a9d8e4b5f8a7b6c5d4e3f2a1b',
  user: '2a1b3c4d5e6f47a8b9c0d1e2f3a4b5c6',
} as const;

const exampleInventories = {
  VCPU: { total: 16, allocation_ratio: 4.0, max_unit: 16 },
  MEMORY_MB: { total: 32768, reserved: 512, max_unit: 32768 },
  DISK_GB: { total: 1000, step_size: 10, max_unit: 1000 },
};
const inventoryExample = (inv: { total: number; reserved?: number; max_unit?: number; step_size?: number; allocation_ratio?: number }) => ({
  total: inv.total, reserved: inv.reserved ?? 0, min_unit: 1, max_unit: inv.max_unit ?? MAX_INT, step_size: inv.step_size ?? 1,
  allocation_ratio: inv.allocation_ratio ?? 1.0,
});
const providerExample = (generation: number) => ({
  uuid: EXAMPLE.provider, name: 'compute-1', generation,
  links: ['', '/inventories', '/usages', '/aggregates', '/traits', '/allocations'].map((tail, i) => ({
    rel: i === 0 ? 'self' : tail.slice(1), href: `/resource_providers/${EXAMPLE.provider}${tail}`,
  })),
  parent_provider_uuid: null, root_provider_uuid: EXAMPLE.provider,
});
const claim = (resources: Record<string, number>, consumerType: string) => ({
  allocations: { [EXAMPLE.provider]: { resources } }, consumer_generation: null,
  project_id: EXAMPLE.project, user_id: EXAMPLE.user, consumer_type: consumerType,
});

// ---------------------------------------------------------------- errors, headers, params

const PlacementErrorSchema = z.object({
  errors: z.array(z.object({
    status: z.number().int(),
    title: z.string(),
    detail: z.string(),
    code: z.string().optional(),
    request_id: z.string(),
  }).loose()),
}).meta({ id: 'PlacementError', description: "Placement's error body" });

/** An OpenAPI response entry documenting a Placement error. */
export function placementErrorResponse(description: string) {
  return { description, content: { 'application/json': { schema: PlacementErrorSchema } } };
}

/** Documents the microversion header (Swagger UI users need it: without it Placement answers at 1.0). */
export const PlacementHeadersSchema = z.object({
  'openstack-api-version': z.string().optional().meta({ example: 'placement 1.39' })
    .describe('placement 1.39 (absent = 1.0, where most of the API does not exist yet; above 1.39 → 406)'),
  'x-auth-token': z.string().optional().describe('the token'),
}).loose();

const providerUuid = () => z.string().meta({ example: EXAMPLE.provider }).describe('resource provider uuid');
export const ProviderParams = z.object({ uuid: providerUuid() });
export const ProviderClassParams = z.object({ uuid: providerUuid(), resource_class: z.string().meta({ example: 'VCPU' }) });
/** DELETE of one inventory: the example removes the class the POST example added. */
export const ProviderClassDeleteParams = z.object({ uuid: providerUuid(), resource_class: z.string().meta({ example: 'VGPU' }) });
export const AggregateParams = z.object({ uuid: z.string().meta({ example: EXAMPLE.aggregate }).describe('aggregate uuid') });
export const ConsumerParams = z.object({ consumer_uuid: z.string().meta({ example: EXAMPLE.consumer }).describe('consumer (instance) uuid') });
/** A trait that always exists (the examples of GET work before anything is created). */
export const TraitShowParams = z.object({ name: z.string().meta({ example: 'HW_CPU_X86_AVX2' }) });
export const TraitParams = z.object({ name: z.string().meta({ example: 'CUSTOM_GOLD' }) });
export const ResourceClassShowParams = z.object({ name: z.string().meta({ example: 'VCPU' }) });
export const ResourceClassParams = z.object({ name: z.string().meta({ example: 'CUSTOM_BAREMETAL_GOLD' }) });

/** A documented answer without a body (204, or 201 before a microversion added one). */
export const noContent = (description: string) => z.null().describe(description);


// ---------------------------------------------------------------- resource providers (schemas/resource_provider.py)

const parentUuid = z.union([uuidString(), z.null()]);

export function providerCreateSchema(mv: Microversion) {
  return z.object({
    name: z.string().max(200),
    uuid: uuidString().optional(),
    ...(mv >= 14 ? { parent_provider_uuid: parentUuid.optional() } : {}),
  }).strict();
}
export type ProviderCreate = { name: string; uuid?: string | undefined; parent_provider_uuid?: string | null | undefined };
export const ProviderCreateSchema = providerCreateSchema(39).meta({
  id: 'PlacementProviderCreate', description: 'POST /resource_providers', examples: [{ name: 'compute-1', uuid: EXAMPLE.provider }],
});

export function providerUpdateSchema(mv: Microversion) {
  return z.object({ name: z.string().max(200), ...(mv >= 14 ? { parent_provider_uuid: parentUuid.optional() } : {}) }).strict();
}
export type ProviderUpdate = { name: string; parent_provider_uuid?: string | null | undefined };
export const ProviderUpdateSchema = providerUpdateSchema(39).meta({ id: 'PlacementProviderUpdate', examples: [{ name: 'compute-1' }] });

// ---------------------------------------------------------------- inventories (schemas/inventory.py)

const inventoryFields = {
  resource_provider_generation: integer().optional(),
  total: bounded(1),
  reserved: bounded(0).optional(),
  min_unit: bounded(1).optional(),
  max_unit: bounded(1).optional(),
  step_size: bounded(1).optional(),
  allocation_ratio: z.number().max(FLOAT_MAX).optional(),
};
export type InventoryFields = {
  total: number; reserved?: number | undefined; min_unit?: number | undefined; max_unit?: number | undefined;
  step_size?: number | undefined; allocation_ratio?: number | undefined; resource_provider_generation?: number | undefined;
};

/** PUT /resource_providers/{uuid}/inventories/{rc}: generation required. */
export const InventoryPutSchema = z.object({ ...inventoryFields, resource_provider_generation: integer() }).strict()
  .meta({ id: 'PlacementInventoryPut', examples: [{ resource_provider_generation: 2, total: 16, allocation_ratio: 4.0, max_unit: 16 }] });

/** POST /resource_providers/{uuid}/inventories: no generation needed. */
export const InventoryPostSchema = z.object({ ...inventoryFields, resource_class: z.string().regex(RC_PATTERN) }).strict()
  .meta({ id: 'PlacementInventoryPost', examples: [{ resource_class: 'VGPU', total: 4 }] });

const InventoryRecordSchema = z.object(inventoryFields).strict();

export const InventoriesPutSchema = z.object({
  resource_provider_generation: integer(),
  inventories: z.record(z.string(), InventoryRecordSchema),
}).strict().meta({ id: 'PlacementInventoriesPut', examples: [{ resource_provider_generation: 0, inventories: exampleInventories }] });
export type InventoriesPut = { resource_provider_generation: number; inventories: Record<string, InventoryFields> };

// ---------------------------------------------------------------- traits and aggregates of a provider

export const ProviderTraitsPutSchema = z.object({
  traits: z.array(z.string().min(1).max(255)),
  resource_provider_generation: integer(),
}).strict().meta({ id: 'PlacementProviderTraitsPut', examples: [{ traits: ['CUSTOM_GOLD', 'HW_CPU_X86_AVX2'], resource_provider_generation: 4 }] });

const aggregateList = () => z.array(uuidString()).check(uniqueItems<string>());

const aggregatesPut = () => z.object({ aggregates: aggregateList(), resource_provider_generation: integer() }).strict();

/** 1.1–1.18: a bare list; 1.19+: with the provider generation. */
export function providerAggregatesSchema(mv: Microversion): z.ZodType<string[] | { aggregates: string[]; resource_provider_generation: number }> {
  return mv < 19 ? aggregateList() : aggregatesPut();
}
export const ProviderAggregatesPutSchema = aggregatesPut().meta({
  id: 'PlacementProviderAggregatesPut', examples: [{ aggregates: [EXAMPLE.aggregate], resource_provider_generation: 5 }],
});

// ---------------------------------------------------------------- resource classes

export const ResourceClassCreateSchema = z.object({ name: z.string().regex(CUSTOM_PATTERN).max(255) }).strict()
  .meta({ id: 'PlacementResourceClassCreate', examples: [{ name: 'CUSTOM_FPGA_XILINX' }] });

// ---------------------------------------------------------------- allocations (schemas/allocation.py)

const resourcesObject = () => z.record(z.string().regex(RC_PATTERN), integer().min(1)).check(minProperties(1));
const idField = () => z.string().min(1).max(255);

/** < 1.8: a list of {resource_provider: {uuid}, resources}; 1.8 adds project_id and user_id. */
function allocationListSchema(mv: Microversion) {
  return z.object({
    allocations: z.array(z.object({
      resource_provider: z.object({ uuid: uuidString() }).strict(),
      resources: resourcesObject(),
    }).strict()).min(1),
    ...(mv >= 8 ? { project_id: idField(), user_id: idField() } : {}),
  }).strict();
}

/** 1.12+: allocations keyed by provider uuid (may be empty from 1.28, and in POST /allocations). */
function allocationDictSchema(mv: Microversion, deletable: boolean) {
  const allocations = z.record(z.string().regex(UUID_KEY), z.object({ generation: integer().optional(), resources: resourcesObject() }).strict());
  return z.object({
    allocations: deletable ? allocations : allocations.check(minProperties(1)),
    project_id: idField(),
    user_id: idField(),
    ...(mv >= 28 ? { consumer_generation: integerOrNull() } : {}),
    ...(mv >= 34 ? { mappings: z.record(z.string(), z.array(uuidString()).min(1)).check(minProperties(1)).optional() } : {}),
    ...(mv >= 38 ? { consumer_type: z.string().regex(CONSUMER_TYPE).min(1).max(255) } : {}),
  }).strict();
}

/** The body of one consumer's allocations, normalised to the 1.12+ form. */
export interface ConsumerAllocationsBody {
  allocations: Record<string, { resources: Record<string, number>; generation?: number | undefined }>;
  project_id?: string | undefined;
  user_id?: string | undefined;
  consumer_generation?: number | null | undefined;
  mappings?: Record<string, string[]> | undefined;
  consumer_type?: string | undefined;
}

/** PUT /allocations/{consumer_uuid}: the schema of each microversion range, as a 1.12+ body. */
export function consumerAllocationsSchema(mv: Microversion): z.ZodType<ConsumerAllocationsBody> {
  if (mv < 12) {
    return allocationListSchema(mv).transform((b) => ({
      ...b,
      allocations: Object.fromEntries(b.allocations.map((a) => [a.resource_provider.uuid, { resources: a.resources }])),
    })) as unknown as z.ZodType<ConsumerAllocationsBody>;
  }
  return allocationDictSchema(mv, mv >= 28) as unknown as z.ZodType<ConsumerAllocationsBody>;
}
export const ConsumerAllocationsSchema = (allocationDictSchema(39, true)).meta({
  id: 'PlacementConsumerAllocations', description: 'PUT /allocations/{consumer_uuid} (1.38 form; consumer_generation null for a new consumer)',
  examples: [claim({ VCPU: 2, MEMORY_MB: 4096 }, 'INSTANCE')],
});

/** POST /allocations (1.13+): consumer uuid → that consumer's allocations (an empty object removes them). */
export function allocationsPostSchema(mv: Microversion): z.ZodType<Record<string, ConsumerAllocationsBody>> {
  return z.record(z.string().regex(UUID_KEY), allocationDictSchema(mv, true)).check(minProperties(1)) as unknown as z.ZodType<Record<string, ConsumerAllocationsBody>>;
}
export const AllocationsPostSchema = z.record(z.string().regex(UUID_KEY), allocationDictSchema(39, true)).meta({
  id: 'PlacementAllocationsPost', description: 'POST /allocations: consumer uuid → allocations (empty allocations remove them)',
  examples: [{ [EXAMPLE.migration]: claim({ VCPU: 1, MEMORY_MB: 1024 }, 'MIGRATION') }],
});

// ---------------------------------------------------------------- reshaper (schemas/reshaper.py)

export interface ReshapeBody {
  inventories: Record<string, InventoriesPut>;
  allocations: Record<string, ConsumerAllocationsBody>;
}

export function reshapeSchema(mv: Microversion): z.ZodType<ReshapeBody> {
  return z.object({
    inventories: z.record(z.string().regex(UUID_KEY), InventoriesPutSchema).check(minProperties(1)),
    allocations: z.record(z.string().regex(UUID_KEY), allocationDictSchema(mv, true)),
  }).strict() as unknown as z.ZodType<ReshapeBody>;
}
export const ReshapeSchema = (reshapeSchema(39) as unknown as z.ZodObject).meta({
  id: 'PlacementReshape', description: 'POST /reshaper (1.30+)',
  examples: [{
    inventories: { [EXAMPLE.provider]: { resource_provider_generation: 8, inventories: exampleInventories } },
    allocations: {
      [EXAMPLE.migration]: { allocations: {}, consumer_generation: 1, project_id: EXAMPLE.project, user_id: EXAMPLE.user, consumer_type: 'MIGRATION' },
    },
  }],
});

// ---------------------------------------------------------------- Nova aggregate metadata (Berth)

export const AggregateMetadataSchema = z.object({ metadata: z.record(z.string().min(1).max(255), z.string().max(255)) })
  .strict().meta({
    id: 'PlacementAggregateMetadata', description: 'Nova host-aggregate metadata, e.g. {"trait:CUSTOM_X": "required"}',
    examples: [{ metadata: { 'trait:CUSTOM_GOLD': 'required' } }],
  });

// ---------------------------------------------------------------- query strings (validated on the last value of each key)

/** GET /resource_providers (schemas/resource_provider.py GET_RPS_SCHEMA_1_x). */
export function providersQuerySchema(mv: Microversion) {
  return z.object({
    name: z.string().optional(),
    uuid: uuidString().optional(),
    ...(mv >= 3 ? { member_of: z.string().optional() } : {}),
    ...(mv >= 4 ? { resources: z.string().optional() } : {}),
    ...(mv >= 14 ? { in_tree: uuidString().optional() } : {}),
    ...(mv >= 18 ? { required: z.string().optional() } : {}),
  }).strict();
}

export const TraitsQueryValidation = z.object({ name: z.string().optional(), associated: z.string().optional() }).strict();

/** GET /usages (schemas/usage.py). */
export function usagesQuerySchema(mv: Microversion) {
  return z.object({
    project_id: idField(),
    user_id: idField().optional(),
    ...(mv >= 38 ? {
      consumer_type: z.string().check(jsonschemaCheck<string>('pattern', (v) => /^[A-Z0-9_]+$|^all|^unknown$/.test(v),
        (v) => `'${v}' does not match '^[A-Z0-9_]+$|^all|^unknown$'`, '^[A-Z0-9_]+$|^all|^unknown$')).min(1).max(255).optional(),
    } : {}),
  }).strict();
}

/** A query value (documentation: the handlers read the raw query string, where keys may repeat). */
const qv = z.string();

export const AllocationCandidatesQuerySchema = z.object({
  resources: qv.optional().meta({ example: 'VCPU:2,MEMORY_MB:4096' })
    .describe('RC:AMOUNT,… e.g. VCPU:1,MEMORY_MB:512,DISK_GB:10; resources{S} for granular groups'),
  required: qv.optional().meta({ example: 'HW_CPU_X86_AVX2' }).describe('TRAIT,!TRAIT or in:T1,T2 (repeatable); required{S} per group'),
  member_of: qv.optional().describe('UUID, in:U1,U2, !UUID, !in:U1,U2 (repeatable); member_of{S} per group'),
  in_tree: qv.optional().describe('provider uuid; in_tree{S} per group'),
  limit: qv.optional().meta({ example: '10' }).describe('keep the best N candidates'),
  group_policy: qv.optional().describe('none | isolate (required with more than one suffixed group)'),
  root_required: qv.optional().describe('TRAIT,!TRAIT on the root provider of each candidate'),
  same_subtree: qv.optional().describe('_A,_B: suffixes whose providers must share a subtree'),
  explain: qv.optional().describe('Berth: true adds the search trace and weights'),
  explain_target: qv.optional().meta({ example: EXAMPLE.provider })
    .describe('Berth: a provider uuid; adds `target`, that provider\'s verdict only (each filter it passed or the one that refused it, per group, and its weights)'),
  dry_run: qv.optional().describe('Berth: accepted for symmetry; this GET never claims anything'),
}).loose();

export const HeadroomQuerySchema = z.object({
  resources: qv.optional().meta({ example: 'VCPU:2,MEMORY_MB:4096' }).describe('as GET /allocation_candidates (every parameter of it)'),
  max: qv.optional().meta({ example: '1000' }).describe('Berth: stop counting at this many (1 … 1,000,000, default 100,000)'),
}).loose();

export const HeadroomResponseSchema = z.object({
  fits: z.number().int().describe('How many more consumers with this request fit, one after another'),
  truncated: z.boolean().describe('max was reached: more may fit'),
  roots: z.array(z.object({ root_provider_uuid: z.string(), fits: z.number().int() }))
    .describe('Per provider tree (root uuid order), how many of them it takes'),
}).meta({
  id: 'PlacementHeadroom',
  examples: [{ fits: 3, truncated: false, roots: [{ root_provider_uuid: EXAMPLE.provider, fits: 3 }] }],
});

export const AllocationCandidatesResponseSchema = z.object({
  allocation_requests: z.array(z.object({
    allocations: z.record(z.string(), z.object({ resources: z.record(z.string(), z.number().int()) })),
    mappings: z.record(z.string(), z.array(z.string())).optional(),
  })),
  provider_summaries: z.record(z.string(), z.object({
    resources: z.record(z.string(), z.object({ capacity: z.number().int(), used: z.number().int() })),
    traits: z.array(z.string()).optional(),
    parent_provider_uuid: z.string().nullable().optional(),
    root_provider_uuid: z.string().optional(),
  })),
  explain: z.unknown().optional(),
  target: z.unknown().optional().describe('With explain_target: that provider\'s verdict'),
}).meta({
  id: 'PlacementAllocationCandidates',
  examples: [{
    allocation_requests: [{ allocations: { [EXAMPLE.provider]: { resources: { VCPU: 2, MEMORY_MB: 4096 } } }, mappings: { '': [EXAMPLE.provider] } }],
    provider_summaries: {
      [EXAMPLE.provider]: {
        resources: { VCPU: { capacity: 64, used: 0 }, MEMORY_MB: { capacity: 32256, used: 0 }, DISK_GB: { capacity: 1000, used: 0 } },
        traits: ['HW_CPU_X86_AVX2', 'CUSTOM_GOLD'], parent_provider_uuid: null, root_provider_uuid: EXAMPLE.provider,
      },
    },
  }],
});

export const ProvidersQuerySchema = z.object({
  name: qv.optional().meta({ example: 'compute-1' }),
  uuid: qv.optional(),
  member_of: qv.optional().describe('UUID, in:U1,U2, !UUID, !in:U1,U2 (repeatable)'),
  in_tree: qv.optional().describe('provider uuid (1.14+)'),
  resources: qv.optional().meta({ example: 'VCPU:2' }).describe('RC:AMOUNT,… providers with room for all of it (1.4+)'),
  required: qv.optional().meta({ example: 'HW_CPU_X86_AVX2' }).describe('TRAIT,!TRAIT or in:T1,T2 (1.18+; in: 1.39+)'),
}).loose();
export const TraitsQuerySchema = z.object({
  name: qv.optional().meta({ example: 'startswith:CUSTOM_' }).describe('in:A,B or startswith:PREFIX'),
  associated: qv.optional().describe('true | false'),
}).loose();
export const UsagesQuerySchema = z.object({
  project_id: qv.optional().meta({ example: EXAMPLE.project }),
  user_id: qv.optional().meta({ example: EXAMPLE.user }),
  consumer_type: qv.optional().meta({ example: 'INSTANCE' }).describe('1.38+: a type, all or unknown'),
}).loose();

// ---------------------------------------------------------------- responses (documentation; bodies are built by serialize.ts)

const link = z.object({ rel: z.string(), href: z.string() });
const inventory = z.object({
  total: z.number().int(), reserved: z.number().int(), min_unit: z.number().int(), max_unit: z.number().int(),
  step_size: z.number().int(), allocation_ratio: z.number(),
});

export const VersionsSchema = z.object({
  versions: z.array(z.object({ id: z.string(), max_version: z.string(), min_version: z.string(), status: z.string(), links: z.array(link) })),
}).meta({ id: 'PlacementVersions', examples: [{ versions: [{ id: 'v1.0', max_version: '1.39', min_version: '1.0', status: 'CURRENT', links: [{ rel: 'self', href: '' }] }] }] });

export const ProviderSchema = z.object({
  uuid: z.string(), name: z.string(), generation: z.number().int(), links: z.array(link),
  parent_provider_uuid: z.string().nullable().optional().describe('1.14+'), root_provider_uuid: z.string().optional().describe('1.14+'),
}).meta({ id: 'PlacementProvider', examples: [providerExample(0)] });

export const ProviderListSchema = z.object({ resource_providers: z.array(ProviderSchema) })
  .meta({ id: 'PlacementProviderList', examples: [{ resource_providers: [providerExample(6)] }] });

export const InventoriesSchema = z.object({ resource_provider_generation: z.number().int(), inventories: z.record(z.string(), inventory) })
  .meta({
    id: 'PlacementInventories',
    examples: [{ resource_provider_generation: 1, inventories: Object.fromEntries(Object.entries(exampleInventories).map(([rc, inv]) => [rc, inventoryExample(inv)])) }],
  });

export const InventorySchema = inventory.extend({ resource_provider_generation: z.number().int() })
  .meta({ id: 'PlacementInventory', examples: [{ ...inventoryExample(exampleInventories.VCPU), resource_provider_generation: 3 }] });

export const TraitListSchema = z.object({ traits: z.array(z.string()) }).meta({ id: 'PlacementTraitList', examples: [{ traits: ['CUSTOM_GOLD'] }] });

export const ProviderTraitsSchema = z.object({ traits: z.array(z.string()), resource_provider_generation: z.number().int() })
  .meta({ id: 'PlacementProviderTraits', examples: [{ traits: ['HW_CPU_X86_AVX2', 'CUSTOM_GOLD'], resource_provider_generation: 5 }] });

export const ProviderAggregatesSchema = z.object({
  aggregates: z.array(z.string()), resource_provider_generation: z.number().int().optional().describe('1.19+'),
}).meta({ id: 'PlacementProviderAggregates', examples: [{ aggregates: [EXAMPLE.aggregate], resource_provider_generation: 6 }] });

const resourceClassExample = (name: string) => ({ name, links: [{ rel: 'self', href: `/resource_classes/${name}` }] });
export const ResourceClassSchema = z.object({ name: z.string(), links: z.array(link) })
  .meta({ id: 'PlacementResourceClass', examples: [resourceClassExample('VCPU')] });
export const ResourceClassListSchema = z.object({ resource_classes: z.array(ResourceClassSchema) })
  .meta({ id: 'PlacementResourceClassList', examples: [{ resource_classes: ['VCPU', 'MEMORY_MB', 'DISK_GB', 'CUSTOM_FPGA_XILINX'].map(resourceClassExample) }] });

export const ConsumerAllocationsResponseSchema = z.object({
  allocations: z.record(z.string(), z.object({ resources: z.record(z.string(), z.number().int()), generation: z.number().int() })),
  project_id: z.string().optional(), user_id: z.string().optional(),
  consumer_generation: z.number().int().optional().describe('1.28+'), consumer_type: z.string().optional().describe('1.38+'),
}).meta({
  id: 'PlacementConsumerAllocationsResponse',
  examples: [{
    allocations: { [EXAMPLE.provider]: { resources: { VCPU: 2, MEMORY_MB: 4096 }, generation: 7 } },
    project_id: EXAMPLE.project, user_id: EXAMPLE.user, consumer_generation: 1, consumer_type: 'INSTANCE',
  }],
});

export const ProviderAllocationsSchema = z.object({
  allocations: z.record(z.string(), z.object({ resources: z.record(z.string(), z.number().int()), consumer_generation: z.number().int().optional() })),
  resource_provider_generation: z.number().int(),
}).meta({
  id: 'PlacementProviderAllocations',
  examples: [{
    allocations: {
      [EXAMPLE.consumer]: { resources: { VCPU: 2, MEMORY_MB: 4096 }, consumer_generation: 1 },
      [EXAMPLE.migration]: { resources: { VCPU: 1, MEMORY_MB: 1024 }, consumer_generation: 1 },
    },
    resource_provider_generation: 8,
  }],
});

export const ProviderUsagesSchema = z.object({ resource_provider_generation: z.number().int(), usages: z.record(z.string(), z.number().int()) })
  .meta({ id: 'PlacementProviderUsages', examples: [{ resource_provider_generation: 8, usages: { VCPU: 3, MEMORY_MB: 5120, DISK_GB: 0 } }] });

export const UsagesSchema = z.object({
  usages: z.record(z.string(), z.union([z.number().int(), z.record(z.string(), z.number().int())]))
    .describe('class → amount; from 1.38 consumer type → {consumer_count, class → amount}'),
}).meta({ id: 'PlacementUsages', examples: [{ usages: { INSTANCE: { consumer_count: 1, VCPU: 2, MEMORY_MB: 4096 } } }] });
