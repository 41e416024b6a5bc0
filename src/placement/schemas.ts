// zod schemas of the Placement-compatible routes (validation + OpenAPI). Ids are prefixed "Placement".
import { z } from 'zod';
import { MAX_INT } from './capacity.ts';

const uuid = z.string().regex(/^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$/, 'must be a UUID');
const generation = z.number().int().min(0);

export const PlacementErrorSchema = z.object({
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

export const ProviderCreateSchema = z.object({
  name: z.string().min(1).max(200),
  uuid: uuid.optional(),
  parent_provider_uuid: uuid.nullable().optional(),
}).strict().meta({ id: 'PlacementProviderCreate', description: 'POST /resource_providers' });

export const ProviderUpdateSchema = z.object({
  name: z.string().min(1).max(200),
  parent_provider_uuid: uuid.nullable().optional(),
}).strict().meta({ id: 'PlacementProviderUpdate' });

const inventoryFields = {
  total: z.number().int().min(1).max(MAX_INT),
  reserved: z.number().int().min(0).max(MAX_INT).optional(),
  min_unit: z.number().int().min(1).max(MAX_INT).optional(),
  max_unit: z.number().int().min(1).max(MAX_INT).optional(),
  step_size: z.number().int().min(1).max(MAX_INT).optional(),
  allocation_ratio: z.number().gt(0).max(3.40282e38).optional(),
};
export const InventorySchema = z.object(inventoryFields).strict().meta({ id: 'PlacementInventory' });

export const InventoriesPutSchema = z.object({
  resource_provider_generation: generation,
  inventories: z.record(z.string(), InventorySchema),
}).strict().meta({ id: 'PlacementInventoriesPut' });

export const InventoryPutSchema = z.object({ resource_provider_generation: generation, ...inventoryFields })
  .strict().meta({ id: 'PlacementInventoryPut' });

export const InventoryPostSchema = z.object({
  resource_class: z.string().min(1),
  resource_provider_generation: generation,
  ...inventoryFields,
}).strict().meta({ id: 'PlacementInventoryPost' });

export const ProviderTraitsPutSchema = z.object({
  resource_provider_generation: generation,
  traits: z.array(z.string().min(1)),
}).strict().meta({ id: 'PlacementProviderTraitsPut' });

export const ProviderAggregatesPutSchema = z.object({
  resource_provider_generation: generation,
  aggregates: z.array(uuid),
}).strict().meta({ id: 'PlacementProviderAggregatesPut' });

const allocationResources = z.object({
  resources: z.record(z.string().min(1), z.number().int().min(1).max(MAX_INT)),
  generation: z.number().int().optional(),
}).strict();

export const ConsumerAllocationsSchema = z.object({
  allocations: z.record(uuid, allocationResources),
  consumer_generation: z.number().int().min(0).nullable(),
  project_id: z.string().min(1).max(255),
  user_id: z.string().min(1).max(255),
  consumer_type: z.string().regex(/^[A-Z0-9_]+$/).max(255).optional(),
  mappings: z.record(z.string(), z.array(uuid)).optional(),
}).strict().meta({ id: 'PlacementConsumerAllocations', description: 'PUT /allocations/{consumer_uuid} (1.38 form)' });

export const AllocationsPostSchema = z.record(uuid, ConsumerAllocationsSchema)
  .meta({ id: 'PlacementAllocationsPost', description: 'POST /allocations: consumer uuid → allocations' });

export const ResourceClassCreateSchema = z.object({ name: z.string().min(1).max(255) }).strict()
  .meta({ id: 'PlacementResourceClassCreate' });

export const AggregateMetadataSchema = z.object({ metadata: z.record(z.string().min(1).max(255), z.string().max(255)) })
  .strict().meta({ id: 'PlacementAggregateMetadata', description: 'Nova host-aggregate metadata, e.g. {"trait:CUSTOM_X": "required"}' });

export const UuidParams = z.object({ uuid: z.string() });
export const UuidRcParams = z.object({ uuid: z.string(), resource_class: z.string() });
export const ConsumerParams = z.object({ consumer_uuid: z.string() });
export const NameParams = z.object({ name: z.string() });

/** Documentation of GET /allocation_candidates' query (the handler parses the raw query string itself). */
/** A query value: repeated keys arrive as arrays (the handler reads the raw query string in order). */
const qv = z.union([z.string(), z.array(z.string())]);

export const AllocationCandidatesQuerySchema = z.object({
  resources: qv.optional().describe('RC:AMOUNT,… e.g. VCPU:1,MEMORY_MB:512,DISK_GB:10; resources{S} for granular groups'),
  required: qv.optional().describe('TRAIT,!TRAIT or in:T1,T2 (repeatable); required{S} per group'),
  member_of: qv.optional().describe('UUID, in:U1,U2, !UUID, !in:U1,U2 (repeatable); member_of{S} per group'),
  in_tree: qv.optional().describe('provider uuid; in_tree{S} per group'),
  limit: qv.optional().describe('keep the best N candidates'),
  group_policy: qv.optional().describe('none | isolate (required with more than one suffixed group)'),
  root_required: qv.optional().describe('TRAIT,!TRAIT on the root provider of each candidate'),
  same_subtree: qv.optional().describe('_A,_B: suffixes whose providers must share a subtree'),
  explain: qv.optional().describe('Berth: true adds the search trace and weights'),
  dry_run: qv.optional().describe('Berth: accepted for symmetry; this GET never claims anything'),
}).loose();

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
}).meta({ id: 'PlacementAllocationCandidates' });

export const AnyObjectSchema = z.record(z.string(), z.unknown()).meta({ id: 'PlacementBody' });
export const ProvidersQuerySchema = z.object({
  name: qv.optional(), uuid: qv.optional(), member_of: qv.optional(), in_tree: qv.optional(), resources: qv.optional(), required: qv.optional(),
}).loose();
export const TraitsQuerySchema = z.object({
  name: qv.optional().describe('in:A,B or startswith:PREFIX'), associated: qv.optional().describe('true | false'),
}).loose();
export const UsagesQuerySchema = z.object({ project_id: qv.optional(), user_id: qv.optional(), consumer_type: qv.optional() }).loose();

/** A documented answer without a body (204, or 201 before a microversion added one). */
export const noContent = (description: string) => z.null().describe(description);

/** Documents the microversion header (Swagger UI users need it: without it Placement answers at 1.0). */
export const PlacementHeadersSchema = z.object({
  'openstack-api-version': z.string().optional().meta({ example: 'placement 1.39' })
    .describe('placement 1.39 (absent = 1.0, where GET /allocation_candidates does not exist; above 1.39 → 406)'),
  'x-auth-token': z.string().optional().describe('accepted and ignored'),
}).loose();
