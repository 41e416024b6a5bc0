// zod schemas of the replica dialect's routes: validation and the OpenAPI document (ids prefixed "Replicas").
import { z } from 'zod';
import { SETTING_DEFINITIONS, SETTING_NAMES, settingSchema, settingsPatch, type SettingName } from './settings.ts';
import { HEADROOM_MAX_DEFAULT, HEADROOM_MAX_LIMIT } from '../planning.ts';

/** Bytes: JSON numbers that are safe non-negative integers. */
const Bytes = z.int().min(0).max(Number.MAX_SAFE_INTEGER);

/** Kubernetes-style node names (no "/", so "<node>/<disk>" identifies a disk). */
const NodeName = z.string().min(1).max(253).regex(/^[A-Za-z0-9][A-Za-z0-9_.-]*$/, 'must be letters, digits, ".", "_" or "-", starting with a letter or digit');
const DiskName = z.string().min(1).max(253).regex(/^[A-Za-z0-9][A-Za-z0-9_.-]*$/, 'must be letters, digits, ".", "_" or "-", starting with a letter or digit');
/** Longhorn volume names: lower case letters, digits, ".", "_", "-". */
const VolumeName = z.string().min(1).max(63).regex(/^[a-z0-9][a-z0-9_.-]*$/, 'must be lower-case letters, digits, ".", "_" or "-", starting with a letter or digit');
const ReplicaName = z.string().min(1).max(80).regex(/^[a-z0-9][a-z0-9_.-]*$/, 'must be a replica name such as vol-r-1a2b3c4d');
/** Longhorn tags: word characters, "-" and ".". */
const Tag = z.string().min(1).max(253).regex(/^[A-Za-z0-9_.-]+$/, 'must be letters, digits, "_", "." or "-"');
const Tags = z.array(Tag).max(64);

const DiskReportSchema = z
  .strictObject({
    path: z.string().min(1).max(4096).describe('Mount path (filesystem) or device path (block)'),
    type: z.enum(['filesystem', 'block']).default('filesystem').describe('v1 volumes need filesystem disks, v2 volumes block disks'),
    tags: Tags.default([]),
    allowScheduling: z.boolean().default(true),
    evictionRequested: z.boolean().default(false),
    storageMaximum: Bytes.describe('Total size of the disk, bytes'),
    storageAvailable: Bytes.describe('Free space reported by the filesystem, bytes (includes non-Longhorn usage)'),
    storageReserved: Bytes.default(0).describe('Bytes kept out of Longhorn scheduling'),
    storageScheduled: Bytes.default(0).describe('Bytes scheduled outside Berth; Berth adds the sizes of its own replicas'),
  })
  .meta({ id: 'ReplicasDiskReport', description: 'A disk of a node as Longhorn reports it' });

export const NodeReportSchema = z
  .strictObject({
    zone: z.string().max(253).default('').describe('topology.kubernetes.io/zone; "" for nodes without the label (all together one zone)'),
    region: z.string().max(253).default('').describe('topology.kubernetes.io/region'),
    tags: Tags.default([]),
    cordoned: z.boolean().default(false).describe('The Kubernetes node is cordoned (spec.unschedulable)'),
    ready: z.boolean().default(true).describe('The node Ready condition'),
    allowScheduling: z.boolean().default(true).describe('Longhorn "Node Scheduling" toggle'),
    evictionRequested: z.boolean().default(false).describe('Evict the node: never a target'),
    disks: z.record(DiskName, DiskReportSchema).default({}),
  })
  .meta({
    id: 'ReplicasNodeReport',
    description: 'A node report (PUT /nodes/{name}); bytes are JSON integers',
    examples: [{
      zone: 'zone-1', region: 'region-1', tags: ['storage'],
      disks: {
        'disk-1': {
          path: '/var/lib/longhorn', type: 'filesystem', tags: ['ssd'],
          storageMaximum: 107374182400, storageAvailable: 96636764160, storageReserved: 10737418240,
        },
      },
    }],
  });

// Params and query strings carry no .meta id: @fastify/swagger cannot resolve a $ref'd querystring or params schema.
export const NodeParams = z.object({ name: NodeName.meta({ example: 'node-1' }) });
/** The example is the name the first replica of volume pvc-1 gets on a fresh store, so Try it out finds it. */
export const ReplicaParams = z.object({ name: ReplicaName.meta({ example: 'pvc-1-r-553a8eee' }) });

const ConditionSchema = z.object({
  type: z.enum(['Ready', 'Schedulable']),
  status: z.enum(['True', 'False']),
  reason: z.string(),
  message: z.string(),
});

/** node-1 as the node report example leaves it, before any replica. */
const NODE_DETAIL_EXAMPLE = {
  name: 'node-1', zone: 'zone-1', region: 'region-1', tags: ['storage'], cordoned: false, ready: true, allowScheduling: true,
  evictionRequested: false, reportedAt: '2026-12-01T09:30:00.000Z', reportAgeSeconds: 0, stale: false, schedulable: true,
  conditions: [
    { type: 'Ready', status: 'True', reason: '', message: 'Node is ready' },
    { type: 'Schedulable', status: 'True', reason: '', message: '' },
  ],
  disks: {
    'disk-1': {
      path: '/var/lib/longhorn', type: 'filesystem', tags: ['ssd'], allowScheduling: true, evictionRequested: false,
      storageMaximum: 107374182400, storageAvailable: 96636764160, storageReserved: 10737418240, storageScheduled: 0,
      storageScheduledReported: 0, storageScheduledByBerth: 0, scheduledReplicas: [],
      conditions: [
        { type: 'Ready', status: 'True', reason: '', message: 'Disk is ready' },
        { type: 'Schedulable', status: 'True', reason: '', message: 'Disk is schedulable' },
      ],
    },
  },
};

const DiskDetailSchema = z
  .object({
    path: z.string(),
    type: z.enum(['filesystem', 'block']),
    tags: z.array(z.string()),
    allowScheduling: z.boolean(),
    evictionRequested: z.boolean(),
    storageMaximum: z.number(),
    storageAvailable: z.number(),
    storageReserved: z.number(),
    storageScheduled: z.number().describe('Reported + Berth\'s replicas'),
    storageScheduledReported: z.number(),
    storageScheduledByBerth: z.number(),
    scheduledReplicas: z.array(z.string()).describe('Replicas Berth placed on the disk'),
    conditions: z.array(ConditionSchema),
  })
  .meta({ id: 'ReplicasDiskDetail' });

export const NodeDetailSchema = z
  .object({
    name: z.string(),
    zone: z.string(),
    region: z.string(),
    tags: z.array(z.string()),
    cordoned: z.boolean(),
    ready: z.boolean(),
    allowScheduling: z.boolean(),
    evictionRequested: z.boolean(),
    reportedAt: z.string().describe('When the last report arrived (ISO 8601)'),
    reportAgeSeconds: z.number(),
    stale: z.boolean().describe('Older than stats_stale_after_seconds (when > 0): not schedulable'),
    schedulable: z.boolean().describe('Whether the scheduler takes the node as a candidate now'),
    conditions: z.array(ConditionSchema),
    disks: z.record(z.string(), DiskDetailSchema),
  })
  .meta({ id: 'ReplicasNodeDetail', examples: [NODE_DETAIL_EXAMPLE] });

export const NodeListSchema = z.object({ nodes: z.array(NodeDetailSchema) })
  .meta({ id: 'ReplicasNodeList', examples: [{ nodes: [NODE_DETAIL_EXAMPLE] }] });

export const SettingsSchema = z
  .strictObject(Object.fromEntries(SETTING_NAMES.map((n) => [n, settingSchema(n)])) as Record<SettingName, ReturnType<typeof settingSchema>>)
  .meta({
    id: 'ReplicasSettings',
    description: 'Longhorn settings that steer replica scheduling',
    examples: [Object.fromEntries(SETTING_NAMES.map((n) => [n, SETTING_DEFINITIONS[n].default]))],
  });

export const SettingsUpdateSchema = settingsPatch
  .meta({
    id: 'ReplicasSettingsUpdate',
    description: 'Any subset of the settings; a refused value changes nothing',
    examples: [{ 'storage-over-provisioning-percentage': 200 }],
  });

const Soft = z.enum(['ignored', 'enabled', 'disabled']).default('ignored');

const VolumeSchema = z
  .strictObject({
    name: VolumeName,
    size: z.int().min(1).max(Number.MAX_SAFE_INTEGER).describe('Volume size in bytes (spec.size)'),
    actualSize: Bytes.default(0).describe('Bytes written so far (status.actualSize); 0 for a new volume'),
    numberOfReplicas: z.int().min(1).max(20).optional().describe('Default: the default-replica-count setting'),
    nodeSelector: Tags.default([]).describe('Every tag must be on the node'),
    diskSelector: Tags.default([]).describe('Every tag must be on the disk'),
    dataEngine: z.enum(['v1', 'v2']).default('v1'),
    replicaSoftAntiAffinity: Soft.describe('Overrides replica-soft-anti-affinity unless "ignored"'),
    replicaZoneSoftAntiAffinity: Soft.describe('Overrides replica-zone-soft-anti-affinity unless "ignored"'),
    replicaDiskSoftAntiAffinity: Soft.describe('Overrides replica-disk-soft-anti-affinity unless "ignored"'),
    // Longhorn's volume webhook turns an empty value into "ignored"; so does Berth (settings.ts).
    replicaAutoBalance: z.enum(['ignored', 'disabled', 'least-effort', 'best-effort', '']).default('ignored')
      .describe('Overrides replica-auto-balance unless "ignored" (or empty, which Longhorn reads as "ignored")'),
  })
  .meta({ id: 'ReplicasVolume' });

const ExistingReplicaSchema = z
  .strictObject({
    node: NodeName,
    disk: z.union([DiskName, z.literal('')])
      .describe('Empty when the replica has no disk (evicted, or its disk was removed): it still holds its node and zone, as in Longhorn'),
    failed: z.boolean().default(false),
    evictionRequested: z.boolean().default(false),
  })
  .meta({ id: 'ReplicasExistingReplica', description: 'A replica of the volume placed outside Berth (healthy, failed or being evicted)' });

export const ScheduleBodySchema = z
  .strictObject({
    volume: VolumeSchema,
    existingReplicas: z.array(ExistingReplicaSchema).max(100).default([]),
  })
  .meta({
    id: 'ReplicasScheduleRequest',
    examples: [{ volume: { name: 'pvc-1', size: 10737418240, numberOfReplicas: 1, nodeSelector: ['storage'], diskSelector: ['ssd'] } }],
  });

export const HeadroomBodySchema = z
  .strictObject({
    volume: VolumeSchema.describe('The volume to count: each counted one is a new volume like it (no replicas yet)'),
    max: z.int().min(1).max(HEADROOM_MAX_LIMIT).default(HEADROOM_MAX_DEFAULT).describe('Stop counting here (1 … 1,000,000; default 100,000): then truncated is true'),
  })
  .meta({
    id: 'ReplicasHeadroomRequest',
    examples: [{ volume: { name: 'pvc-next', size: 10737418240, numberOfReplicas: 3 }, max: 1000 }],
  });

export const HeadroomResponseSchema = z
  .object({
    fits: z.int().describe('How many such volumes get every replica placed, one after another'),
    truncated: z.boolean().describe('max was reached: more may fit'),
    limit: z.string().nullable().describe('Why the next one would not (Longhorn reason keys, as a refusal\'s detail); null when truncated'),
  })
  .meta({ id: 'ReplicasHeadroom', examples: [{ fits: 42, truncated: false, limit: 'insufficient storage' }] });

const SimulatedStep = z.union([
  z.strictObject({
    schedule: ScheduleBodySchema,
    dry_run: z.boolean().default(false).describe('As ?dry_run=true on the route'),
    explain: z.boolean().default(false).describe('As ?explain=true on the route'),
  }),
  z.strictObject({
    delete: z.string().min(1).max(80).describe('A replica name (as DELETE /replicas/{name}), or a volume: all its replicas'),
  }),
]);

export const SimulateBodySchema = z
  .strictObject({
    steps: z.array(SimulatedStep).describe('In order, at most 10,000'),
    settings: settingsPatch.optional().describe('Hypothetical settings over the current ones, for the simulation only'),
  })
  .meta({
    id: 'ReplicasSimulateRequest',
    examples: [{
      settings: { 'replica-soft-anti-affinity': true },
      steps: [{ schedule: { volume: { name: 'pvc-what-if', size: 10737418240, numberOfReplicas: 2 } } }, { delete: 'pvc-what-if' }],
    }],
  });

export const SimulateResponseSchema = z
  .object({
    steps: z.array(z.object({ status: z.int(), body: z.unknown() })).describe('What the real route would answer, step by step'),
    final: z.object({
      disks: z.array(z.object({
        node: z.string(), disk: z.string(), storageMaximum: z.number(), storageAvailable: z.number(),
        storageReserved: z.number(), storageScheduled: z.number(), usable: z.number(),
      })),
      balanceScore: z.number().describe('(max − min) / mean of every disk\'s usable space (avail − reserved − scheduled, at least 0)'),
    }).describe('The disks after the last step'),
  })
  .meta({
    id: 'ReplicasSimulation',
    examples: [{
      steps: [
        { status: 200, body: { volume: 'pvc-what-if', replicas: [{ name: 'pvc-what-if-r-0b1c2d3e', volume: 'pvc-what-if', node: 'node-1', disk: 'disk-1', diskPath: '/var/lib/longhorn', size: 10737418240 }] } },
        { status: 204, body: null },
      ],
      final: {
        disks: [{ node: 'node-1', disk: 'disk-1', storageMaximum: 107374182400, storageAvailable: 96636764160, storageReserved: 10737418240, storageScheduled: 0, usable: 85899345920 }],
        balanceScore: 0,
      },
    }],
  });

const Flag = z.enum(['true', 'false']).optional();
export const ScheduleQuerySchema = z
  .object({
    explain: Flag.describe('Add the trace: node and disk checks, tiers tried, balance scores'),
    dry_run: Flag.describe('Decide, claim nothing'),
    explain_target: z.string().max(507)
      .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]*(\/[A-Za-z0-9][A-Za-z0-9_.-]*)?$/, 'must be a node name or node/disk')
      .optional()
      .describe('A node or node/disk: add only its verdict (each filter it passed or the one that refused it, its tier and balance scores) as explainTarget'),
  });

const REPLICA_EXAMPLE = {
  name: 'pvc-1-r-553a8eee', volume: 'pvc-1', node: 'node-1', disk: 'disk-1', diskPath: '/var/lib/longhorn',
  size: 10737418240, createdAt: '2026-12-01T09:30:00.000Z',
};

export const ReplicaSchema = z
  .object({
    name: z.string(),
    volume: z.string(),
    node: z.string(),
    disk: z.string(),
    diskPath: z.string(),
    size: z.number(),
    createdAt: z.string(),
    createdBy: z.string().nullable().describe('Who claimed it (token name or JWT subject); null without authentication'),
  })
  .meta({ id: 'ReplicasReplica', examples: [REPLICA_EXAMPLE] });

const ProposedReplicaSchema = z
  .object({
    volume: z.string(),
    node: z.string(),
    disk: z.string(),
    diskPath: z.string(),
    size: z.number(),
  })
  .meta({ id: 'ReplicasProposedReplica', description: 'Where a replica would go (dry_run): nothing is claimed, so it has no name' });

export const ScheduleResponseSchema = z
  .object({
    dryRun: z.boolean().describe('true: decided only, nothing claimed, and replicas say where they would go'),
    replicas: z.array(z.union([ReplicaSchema, ProposedReplicaSchema]))
      .describe('The replicas placed by this request (none if nothing was missing); with dry_run, where they would go'),
    unscheduled: z.array(z.object({ reason: z.string() })).optional().describe('Replicas that could not be placed (degraded availability)'),
    explain: z.record(z.string(), z.unknown()).optional(),
    explainTarget: z.record(z.string(), z.unknown()).optional().describe('With explain_target: that node\'s or disk\'s verdict'),
  })
  .meta({ id: 'ReplicasScheduleResponse', examples: [{ dryRun: false, replicas: [REPLICA_EXAMPLE] }] });

export const ReplicaListQuerySchema = z.object({ volume: VolumeName.optional().meta({ example: 'pvc-1' }) });
export const ReplicaListSchema = z.object({ replicas: z.array(ReplicaSchema) })
  .meta({ id: 'ReplicasReplicaList', examples: [{ replicas: [REPLICA_EXAMPLE] }] });
