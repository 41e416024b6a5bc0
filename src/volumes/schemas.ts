// zod schemas of the volumes routes (validation + OpenAPI). Ids are prefixed "Volumes". Query and path parameter
// schemas carry no id: @fastify/swagger cannot expand a $ref'd querystring/params schema into parameters.
import { z } from 'zod';
import { queryFlag } from '../http/flags.ts';
import { HEADROOM_MAX_DEFAULT, HEADROOM_MAX_LIMIT, SIMULATION_MAX_STEPS } from '../planning.ts';

/** GiB ≥ 0, or Cinder's 'infinite' / 'unknown'. */
const CapacitySchema = z
  .union([z.number().min(0).refine(Number.isFinite, 'must be a finite number'), z.literal('infinite'), z.literal('unknown')], {
    error: "must be a number of GiB ≥ 0, 'infinite' or 'unknown'",
  })
  .meta({ id: 'VolumesCapacity', description: "GiB (a number ≥ 0), or 'infinite' / 'unknown'", examples: [1024, 'infinite'] });

const gib = z.number({ error: 'must be a number of GiB ≥ 0' }).min(0).refine(Number.isFinite, 'must be a finite number');

/** Cinder's max_over_subscription_ratio regex: ^(auto|\d*\.\d+|\d+)$ (drivers often report the config string). */
const RatioSchema = z
  .union([
    z.number().min(0).refine(Number.isFinite, 'must be a finite number'),
    z.string().regex(/^(auto|\d*\.\d+|\d+)$/, "must be a number, a numeric string or 'auto'"),
  ], { error: "must be a number ≥ 0, a numeric string or 'auto'" })
  .meta({ id: 'VolumesOverSubscriptionRatio', description: "A number (≥ 1 to be usable for thin volumes), or 'auto'" });

/** The capacity fields of a pool (also accepted at the top level of a legacy single-pool report). */
const poolCapacityFields = {
  total_capacity_gb: CapacitySchema.optional(),
  free_capacity_gb: CapacitySchema.optional(),
  provisioned_capacity_gb: gib.optional().describe('Sum of the sizes of every volume on the pool; falls back to Berth\'s allocated_capacity_gb'),
  allocated_capacity_gb: z.unknown().optional().describe('Ignored: Berth computes it (a warning says so)'),
  reserved_percentage: z.number({ error: 'must be a number from 0 to 100' }).min(0).max(100).optional(),
  max_over_subscription_ratio: RatioSchema.optional(),
  thin_provisioning_support: z.boolean({ error: 'must be a JSON boolean (true or false)' }).optional(),
  thick_provisioning_support: z.boolean({ error: 'must be a JSON boolean (true or false)' }).optional(),
  pure_automatic_max_oversubscription_ratio: z.boolean().optional().describe('Pure driver option: true means auto'),
  auto_calc_max_oversubscription_ratio: z.boolean().optional().describe('Kaminario driver option: true means auto'),
  total_used_capacity_gb: gib.optional(),
  cinder_used_capacity_gb: gib.optional(),
};

export const PoolReportSchema = z
  .object({
    pool_name: z.string().min(1).max(255).regex(/^[^#/]+$/, "must not contain '#' or '/'"),
    ...poolCapacityFields,
    total_capacity_gb: CapacitySchema,
    free_capacity_gb: CapacitySchema,
  })
  .catchall(z.unknown())
  .meta({ id: 'VolumesPoolReport', description: 'One pool of a capability report; any other capability is kept for CapabilitiesFilter' });

export const BackendReportSchema = z
  .object({
    volume_backend_name: z.string().min(1).max(255).optional(),
    vendor_name: z.string().max(255).optional(),
    driver_version: z.string().max(255).optional(),
    storage_protocol: z.string().max(255).optional(),
    availability_zone: z.string().min(1).max(255).optional().describe('Defaults to storage_availability_zone'),
    pools: z.array(PoolReportSchema).max(10000).optional().describe('Absent: a legacy single-pool report (capacity fields at the top level)'),
    ...poolCapacityFields,
  })
  .catchall(z.unknown())
  .meta({
    id: 'VolumesBackendReport',
    description: 'A Cinder capability report (get_volume_stats) for one backend',
    examples: [{
      volume_backend_name: 'lvm', vendor_name: 'Open Source', driver_version: '3.0.0', storage_protocol: 'iSCSI',
      pools: [{ pool_name: 'pool1', total_capacity_gb: 1024, free_capacity_gb: 500, provisioned_capacity_gb: 924,
        reserved_percentage: 0, max_over_subscription_ratio: 'auto', thin_provisioning_support: true,
        thick_provisioning_support: true }],
    }],
  });
export type BackendReport = z.output<typeof BackendReportSchema>;
export type PoolReport = z.output<typeof PoolReportSchema>;

export const HostParamsSchema = z.object({
  host: z.string().min(1).max(255).regex(/^[^#/\s]+$/, "a Cinder host such as node1@lvm (no '#', '/' or spaces)")
    .meta({ example: 'node1@lvm' }),
});

export const BackendAcceptedSchema = z.object({
  backend: z.string(),
  pools: z.array(z.object({ name: z.string(), generation: z.number().int(), max_over_subscription_ratio: z.number() })),
  warnings: z.array(z.string()),
}).meta({
  id: 'VolumesBackendAccepted',
  examples: [{ backend: 'node1@lvm', pools: [{ name: 'node1@lvm#pool1', generation: 1, max_over_subscription_ratio: 2.76 }], warnings: [] }],
});

const BackendSummarySchema = z.object({
  backend: z.string(),
  availability_zone: z.string(),
  reported_at: z.string(),
  pools: z.array(z.string()),
}).meta({ id: 'VolumesBackendSummary' });

export const BackendListSchema = z.object({ backends: z.array(BackendSummarySchema) }).meta({
  id: 'VolumesBackendList',
  examples: [{ backends: [{ backend: 'node1@lvm', availability_zone: 'nova', reported_at: '2026-12-01T09:30:00.000Z', pools: ['node1@lvm#pool1'] }] }],
});

/** Cinder sizes are whole GiB (its API refuses anything else). */
const WHOLE_GIB = 'must be a whole number of GiB (Cinder sizes are whole GiB)';

const ExtraSpecsSchema = z.record(z.string().max(255), z.string().max(1024))
  .meta({ id: 'VolumesExtraSpecs', description: 'Volume type extra specs, e.g. {"provisioning:type": "thick", "thin_provisioning_support": "<is> True"}' });

const VolumeTypeSchema = z.object({
  name: z.string().max(255).optional(),
  extra_specs: ExtraSpecsSchema.optional(),
}).strict().meta({ id: 'VolumesVolumeType' });

const ExplainTargetQuery = z.string().min(1).max(600).optional()
  .describe('A pool name (host@backend#pool): add only that pool\'s verdict (target): each filter it passed or the one that refused it, and its weights');

export const PoolsQuerySchema = z
  .object({
    detail: queryFlag('Include capabilities (Cinder get_pools ?detail=true)').meta({ example: 'true' }),
    name: z.string().max(600).optional().describe('Exact pool name (host@backend#pool)'),
    volume_type: z.string().max(65536).optional().describe('A volume type as JSON, e.g. {"extra_specs":{"thin_provisioning_support":"<is> True"}}: only pools whose capabilities match'),
    size: z.coerce.number().int(WHOLE_GIB).gt(0).optional()
      .describe('GiB: only pools that would accept such a volume now, best first'),
    availability_zone: z.string().max(255).optional().describe('With size: only pools in this zone'),
    explain_target: ExplainTargetQuery,
  })
  .catchall(z.string().max(1024))
  .describe('Other parameters filter on a capability value (Cinder get_pools filters)');

const PoolSchema = z.object({
  name: z.string(),
  capabilities: z.record(z.string(), z.unknown()).optional(),
}).meta({ id: 'VolumesPool' });

export const PoolListSchema = z.object({
  pools: z.array(PoolSchema),
  target: z.unknown().optional().describe('With size and explain_target: that pool\'s verdict (as POST /volumes/schedule gives it)'),
}).meta({
  id: 'VolumesPoolList',
  examples: [{
    pools: [{
      name: 'node1@lvm#pool1',
      capabilities: {
        pool_name: 'pool1', total_capacity_gb: 1024, free_capacity_gb: 500, provisioned_capacity_gb: 924, reserved_percentage: 0,
        max_over_subscription_ratio: 2.76, thin_provisioning_support: true, thick_provisioning_support: true,
        volume_backend_name: 'lvm', vendor_name: 'Open Source', driver_version: '3.0.0', storage_protocol: 'iSCSI',
        timestamp: '2026-12-01T09:30:00.000Z', allocated_capacity_gb: 0, availability_zone: 'nova', generation: 1,
        current: { free_capacity_gb: 500, provisioned_capacity_gb: 924, virtual_free_capacity_gb: 1902.24 },
      },
    }],
  }],
});

const VolumeIdSchema = z.string().min(1).max(255).regex(/^[A-Za-z0-9._:-]+$/, 'letters, digits and . _ : - only');

export const ScheduleBodySchema = z
  .object({
    id: VolumeIdSchema.optional().describe('Volume id; generated (a time-ordered UUIDv7) when absent (not on a dry run). Placing an existing id is a 409'),
    size: z.number().int(WHOLE_GIB).gt(0).describe('GiB, a whole number'),
    volume_type: VolumeTypeSchema.optional(),
    availability_zone: z.string().min(1).max(255).optional(),
  })
  .strict()
  .meta({ id: 'VolumesScheduleRequest', examples: [{ id: 'vol-1', size: 10, volume_type: { name: 'thin', extra_specs: { thin_provisioning_support: '<is> True' } } }] });
export type ScheduleBody = z.output<typeof ScheduleBodySchema>;

/** Planning conventions shared by every dialect: max of a headroom count. */

export const HeadroomBodySchema = ScheduleBodySchema.omit({ id: true })
  .extend({
    max: z.number().int('must be a whole number').min(1).max(HEADROOM_MAX_LIMIT).default(HEADROOM_MAX_DEFAULT)
      .describe(`Count at most this many (1 … ${HEADROOM_MAX_LIMIT}; default ${HEADROOM_MAX_DEFAULT}); truncated says it was reached`),
  })
  .strict()
  .meta({ id: 'VolumesHeadroomRequest', examples: [{ size: 100, volume_type: { extra_specs: { 'provisioning:type': 'thick' } }, max: 1000 }] });
export type HeadroomBody = z.output<typeof HeadroomBodySchema>;

export const HeadroomResponseSchema = z.object({
  fits: z.number().int().describe('How many such volumes fit, one after another, each scheduled and claimed as now'),
  truncated: z.boolean().describe('max was reached: more may fit'),
  pools: z.array(z.object({
    pool: z.string(),
    fits: z.number().int().describe('How many of them this pool takes'),
    limit: z.string().nullable().describe('The sentence of the filter that would refuse the next one here (null: max came first)'),
  })),
}).meta({
  id: 'VolumesHeadroom',
  examples: [{
    fits: 5, truncated: false,
    pools: [{
      pool: 'node1@lvm#pool1', fits: 5,
      limit: 'Insufficient free space for volume creation (requested / avail): 100/0 GiB.',
    }],
  }],
});

/** Planning conventions shared by every dialect: the bounds of a simulation. */

const SimulateStepSchema = z.union([
  z.object({
    schedule: z.unknown().describe('The body of POST /volumes/schedule (validated as that route validates it)'),
    explain: z.boolean().optional().describe('Add the filter and weigher trace to this step\'s answer'),
  }).strict(),
  z.object({ delete: z.string().describe('A volume id (DELETE /volumes/{id})') }).strict(),
], { error: 'a step is {"schedule": {…}} (optionally with "explain": true) or {"delete": "<volume id>"}' });

export const SimulateBodySchema = z.object({
  steps: z.array(SimulateStepSchema).describe(`In order, at most ${SIMULATION_MAX_STEPS} (more: 413 simulation-too-large)`),
  settings: z.record(z.string(), z.unknown()).optional()
    .describe('Hypothetical settings (any subset of GET /settings/volumes), validated as PUT /settings/volumes validates them'),
}).strict().meta({
  id: 'VolumesSimulateRequest',
  examples: [{
    steps: [{ schedule: { id: 'vol-a', size: 100 } }, { schedule: { size: 5000 } }, { delete: 'vol-a' }],
    settings: { max_over_subscription_ratio: 2 },
  }],
});

export const SimulateResponseSchema = z.object({
  steps: z.array(z.object({
    status: z.number().int().describe('What the real route would answer'),
    body: z.unknown().describe('Its body (null for a 204)'),
  })),
  final: z.object({
    pools: z.array(z.object({
      pool: z.string(),
      allocated_capacity_gb: z.number(),
      free_capacity_gb: z.union([z.number(), z.string()]),
      provisioned_capacity_gb: z.number(),
      virtual_free_capacity_gb: z.number().nullable(),
      max_over_subscription_ratio: z.number(),
    })),
  }),
}).meta({
  id: 'VolumesSimulation',
  examples: [{
    steps: [
      { status: 200, body: { dryRun: false, pool: 'node1@lvm#pool1', weight: 0, volume: { id: 'vol-a', size: 100, pool: 'node1@lvm#pool1' } } },
      { status: 204, body: null },
    ],
    final: {
      pools: [{
        pool: 'node1@lvm#pool1', allocated_capacity_gb: 0, free_capacity_gb: 500, provisioned_capacity_gb: 924,
        virtual_free_capacity_gb: 1902.24, max_over_subscription_ratio: 2.76,
      }],
    },
  }],
});

export const ScheduleQuerySchema = z.object({
  dry_run: queryFlag('Decide, claim nothing'),
  explain: queryFlag('Add the filter and weigher trace').meta({ example: 'true' }),
  explain_target: ExplainTargetQuery,
}).strict();

const TargetVerdictSchema = z.object({
  pool: z.string(),
  passed: z.boolean().describe('It passed every filter and was weighed'),
  filters: z.array(z.object({
    name: z.string(),
    passed: z.boolean(),
    code: z.string().optional().describe('The refusing stage\'s reason code'),
    reason: z.string().optional().describe('Its sentence, with the numbers'),
  })).describe('In order, up to the one that refused it'),
  weight: z.number().optional(),
  rank: z.number().int().optional().describe('Its place in the ranking (1: chosen)'),
  weighers: z.record(z.string(), z.object({ raw: z.number(), normalized: z.number() })).optional(),
}).meta({ id: 'VolumesTargetVerdict' });

const VolumeSchema = z.object({
  id: z.string(),
  size: z.number(),
  pool: z.string(),
}).meta({ id: 'VolumesVolume' });

const VOLUME_EXAMPLE = { id: 'vol-1', size: 10, pool: 'node1@lvm#pool1', thin: true, created_at: '2026-12-01T09:30:00.000Z', created_by: 'nova-scheduler' };

export const VolumeDetailSchema = VolumeSchema.extend({
  thin: z.boolean(),
  created_at: z.string(),
  created_by: z.string().nullable().describe('Who claimed it (token name or JWT subject); null without authentication'),
}).meta({ id: 'VolumesVolumeDetail', examples: [VOLUME_EXAMPLE] });

export const VolumeListSchema = z.object({ volumes: z.array(VolumeDetailSchema) })
  .meta({ id: 'VolumesVolumeList', examples: [{ volumes: [VOLUME_EXAMPLE] }] });

const ExplainSchema = z.object({
  filters: z.array(z.object({
    name: z.string(),
    in: z.number().int(),
    out: z.number().int(),
    rejected: z.array(z.object({ pool: z.string(), reason: z.string() })),
  })),
  weighed: z.array(z.object({
    pool: z.string(),
    weight: z.number(),
    weighers: z.record(z.string(), z.object({ raw: z.number(), normalized: z.number() })),
  })),
}).meta({ id: 'VolumesExplain', description: 'Each filter\'s verdicts in order, then the pools that passed every filter, best first' });

export const ScheduleResponseSchema = z.object({
  dryRun: z.boolean().describe('true: decided only, nothing claimed (and no volume id generated)'),
  pool: z.string(),
  weight: z.number(),
  volume: VolumeSchema.extend({ id: z.string().optional().describe('Absent on a dry run without a client-given id') }),
  explain: ExplainSchema.optional(),
  target: TargetVerdictSchema.optional().describe('With explain_target: that pool\'s verdict'),
}).meta({
  id: 'VolumesScheduleResponse',
  examples: [{
    pool: 'node1@lvm#pool1', weight: 0, volume: { id: 'vol-1', size: 10, pool: 'node1@lvm#pool1' },
    explain: {
      weighed: [{ pool: 'node1@lvm#pool1', weight: 0, weighers: { CapacityWeigher: { raw: 1902.24, normalized: 0 } } }],
      filters: [
        { name: 'AvailabilityZoneFilter', in: 1, out: 1, rejected: [] },
        { name: 'CapacityFilter', in: 1, out: 1, rejected: [] },
        { name: 'CapabilitiesFilter', in: 1, out: 1, rejected: [] },
      ],
    },
  }],
});

export const VolumeParamsSchema = z.object({ id: VolumeIdSchema.meta({ example: 'vol-1' }) });

// ---- Cinder's block-storage API (GET /volume/, GET /volume/v3/{project_id}/scheduler-stats/get_pools)

/** The microversion range Cinder 21 serves (cinder/api/openstack/api_version_request.py), and its date. */
export const CINDER_MIN_VERSION = '3.0';
export const CINDER_MAX_VERSION = '3.70';
export const CINDER_UPDATED = '2022-08-31T00:00:00Z';

export const CinderVersionsSchema = z.object({
  versions: z.array(z.object({
    id: z.string(),
    status: z.string(),
    version: z.string().describe('The highest microversion'),
    min_version: z.string(),
    updated: z.string(),
    links: z.array(z.object({ rel: z.string(), type: z.string().optional(), href: z.string() })),
    'media-types': z.array(z.object({ base: z.string(), type: z.string() })),
  })),
}).meta({
  id: 'VolumesCinderVersions',
  description: 'Cinder\'s versions document',
  examples: [{
    versions: [{
      id: 'v3.0', status: 'CURRENT', version: CINDER_MAX_VERSION, min_version: CINDER_MIN_VERSION, updated: CINDER_UPDATED,
      links: [{ rel: 'describedby', type: 'text/html', href: 'https://docs.openstack.org/' }, { rel: 'self', href: 'http://localhost:8080/volume/v3/' }],
      'media-types': [{ base: 'application/json', type: 'application/vnd.openstack.volume+json;version=3' }],
    }],
  }],
});

export const CinderProjectParamsSchema = z.object({ project_id: z.string().min(1).max(255).meta({ example: 'demo' }) });

export const CinderGetPoolsQuerySchema = z
  .object({
    detail: z.string().max(16).optional().describe('Include capabilities (Cinder booleans: True, false, 1, yes, …)'),
    name: z.string().max(600).optional().describe('Exact pool name (microversion 3.28+)'),
    volume_type: z.string().max(65536).optional().describe('As GET /pools?volume_type= (microversion 3.35+)'),
  })
  .catchall(z.string().max(1024))
  .describe('From 3.28 to 3.30 other parameters filter on a capability value; from 3.31 only name and volume_type are filters');

export const CinderFaultSchema = z.record(z.string(), z.object({ code: z.number().int(), message: z.string() }))
  .meta({ id: 'VolumesCinderFault', description: 'A Cinder fault, e.g. {"badRequest": {"code": 400, "message": "…"}}' });
