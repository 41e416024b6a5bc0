// HTTP routes of the replica dialect (Longhorn): nodes and disks, settings, scheduling, replicas.
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { BerthContext } from '../http/context.ts';
import { zodApp } from '../http/context.ts';
import { problemResponse, ProblemError } from '../http/problem.ts';
import { NODE_FILTERS } from './filters.ts';
import { registerReplicaMetrics } from './metrics.ts';
import type { NodeReport, VolumeSpec } from './model.ts';
import {
  NodeDetailSchema, NodeListSchema, NodeParams, NodeReportSchema, ReplicaListQuerySchema, ReplicaListSchema,
  ReplicaParams, ReplicaSchema, ScheduleBodySchema, ScheduleQuerySchema, ScheduleResponseSchema, SettingsSchema,
  SettingsUpdateSchema,
} from './schemas.ts';
import { ReplicaService, ServiceError, type NodeState } from './service.ts';
import type { ReplicaSettings } from './settings.ts';

const TAGS = ['replicas'];

/** Responses are built by us and can be large (explain, 1,000 nodes): serialise them directly, not through zod. */
const plainJson = () => (data: unknown) => JSON.stringify(data);

function toProblem(err: ServiceError): ProblemError {
  const title = err.status === 404 ? 'Not Found' : 'Conflict';
  return new ProblemError(err.status, err.slug, title, err.message);
}

/** The service of each app (by its context), for read-only views such as the console's fleet. */
export const replicasServices = new WeakMap<BerthContext, ReplicaService>();

export async function replicasPlugin(app: FastifyInstance, ctx: BerthContext): Promise<void> {
  const service = new ReplicaService(ctx.store);
  replicasServices.set(ctx, service);
  const metrics = registerReplicaMetrics(ctx.metrics.registry, service, ctx.now);
  const staleAfterSeconds = ctx.config.stats_stale_after_seconds;
  const r = zodApp(app);

  function nodeDetail(node: NodeState, now: number): z.output<typeof NodeDetailSchema> {
    const age = service.reportAgeSeconds(node, now);
    const settings = service.settings;
    const filterRequest = { settings, now, staleAfterSeconds };
    const disks: z.output<typeof NodeDetailSchema>['disks'] = {};
    for (const d of node.disks) {
      disks[d.name] = {
        path: d.path, type: d.type, tags: [...d.tags], allowScheduling: d.allowScheduling, evictionRequested: d.evictionRequested,
        storageMaximum: d.storageMaximum, storageAvailable: d.storageAvailable, storageReserved: d.storageReserved,
        storageScheduled: d.storageScheduled, storageScheduledReported: d.reportedScheduled,
        storageScheduledByBerth: d.berthScheduled, scheduledReplicas: [...d.replicas].sort(),
        conditions: service.diskConditions(node, d),
      };
    }
    return {
      name: node.name, zone: node.zone, region: node.region, tags: [...node.tags], cordoned: node.cordoned, ready: node.ready,
      allowScheduling: node.allowScheduling, evictionRequested: node.evictionRequested,
      reportedAt: new Date(node.reportedAt).toISOString(), reportAgeSeconds: age,
      stale: staleAfterSeconds > 0 && age > staleAfterSeconds,
      schedulable: NODE_FILTERS.every((f) => f.check(node, filterRequest) === null),
      conditions: service.nodeConditions(node),
      disks,
    };
  }

  r.put('/nodes/:name', {
    serializerCompiler: plainJson,
    schema: {
      tags: TAGS,
      summary: 'Report a node and its disks (Longhorn node status); replaces the previous report',
      description: 'Malformed reports are refused with 400 naming the field and are not stored. Removing a disk that holds replicas placed by Berth is refused with 409.',
      params: NodeParams,
      body: NodeReportSchema,
      response: {
        200: NodeDetailSchema,
        400: problemResponse('Malformed report (the field is named); nothing stored'),
        409: problemResponse('The report drops a disk that holds replicas placed by Berth'),
      },
    },
  }, async (request) => {
    try {
      const now = ctx.now();
      const node = service.putNode(request.params.name, request.body as NodeReport, now);
      return nodeDetail(node, now);
    } catch (err) {
      throw err instanceof ServiceError ? toProblem(err) : err;
    }
  });

  r.get('/nodes', {
    serializerCompiler: plainJson,
    schema: { tags: TAGS, summary: 'List nodes with their disks, conditions and scheduled bytes', response: { 200: NodeListSchema } },
  }, async () => {
    const now = ctx.now();
    return { nodes: service.nodes.map((n) => nodeDetail(n, now)) };
  });

  r.get('/nodes/:name', {
    serializerCompiler: plainJson,
    schema: {
      tags: TAGS,
      summary: 'One node: its report, conditions (Ready, Schedulable per disk as Longhorn derives them) and Berth\'s scheduled bytes',
      params: NodeParams,
      response: { 200: NodeDetailSchema, 400: problemResponse('Bad node name'), 404: problemResponse('Unknown node') },
    },
  }, async (request) => {
    const node = service.node(request.params.name);
    if (!node) throw new ProblemError(404, 'not-found', 'Not Found', `node ${request.params.name} not found`);
    return nodeDetail(node, ctx.now());
  });

  r.delete('/nodes/:name', {
    schema: {
      tags: TAGS,
      summary: 'Forget a node (refused while it holds replicas placed by Berth, as Longhorn refuses)',
      params: NodeParams,
      response: {
        204: z.null().describe('Deleted'),
        400: problemResponse('Bad node name'),
        404: problemResponse('Unknown node'),
        409: problemResponse('The node holds replicas placed by Berth'),
      },
    },
  }, async (request, reply) => {
    try {
      service.deleteNode(request.params.name);
    } catch (err) {
      throw err instanceof ServiceError ? toProblem(err) : err;
    }
    return reply.code(204).send(null);
  });

  r.get('/replicas/settings', {
    serializerCompiler: plainJson,
    schema: { tags: TAGS, summary: 'Longhorn scheduling settings (names and defaults as in Longhorn)', response: { 200: SettingsSchema } },
  }, async () => service.settings);

  r.put('/replicas/settings', {
    serializerCompiler: plainJson,
    schema: {
      tags: TAGS,
      summary: 'Change any subset of the settings',
      description: 'A refused value (unknown name, wrong type, out of range) gives 400 naming the setting and changes nothing.',
      body: SettingsUpdateSchema,
      response: { 200: SettingsSchema, 400: problemResponse('A setting is unknown or its value is refused') },
    },
  }, async (request) => service.putSettings(request.body as Partial<ReplicaSettings>));

  r.post('/replicas/schedule', {
    serializerCompiler: plainJson,
    schema: {
      tags: TAGS,
      summary: 'Place the missing replicas of a volume onto node disks (Longhorn v1.11 replica scheduler)',
      description:
        'Places numberOfReplicas minus the usable replicas (existingReplicas that are neither failed nor being evicted, plus ' +
        'replicas Berth placed for the volume), one at a time, each seeing the earlier ones. If some cannot be placed: with ' +
        'allow-volume-creation-with-degraded-availability and at least one placed, 200 with `unscheduled`; otherwise 409 ' +
        '(`detail` = Longhorn reason keys sorted and joined with "; "), nothing claimed.',
      querystring: ScheduleQuerySchema,
      body: ScheduleBodySchema,
      response: {
        200: ScheduleResponseSchema,
        400: problemResponse('Invalid request body or query'),
        409: problemResponse('Not every replica could be placed and degraded availability does not apply (type ends in /replica-scheduling-failure), or the store claim kept conflicting (/conflict); nothing claimed'),
      },
    },
  }, async (request) => {
    const started = process.hrtime.bigint();
    const dryRun = request.query.dry_run === 'true';
    const explain = request.query.explain === 'true';
    const settings = service.settings;
    const body = request.body;
    const volume: VolumeSpec = {
      ...body.volume,
      numberOfReplicas: body.volume.numberOfReplicas ?? settings['default-replica-count'],
    };
    let outcome;
    try {
      outcome = service.schedule(volume, body.existingReplicas, {
        dryRun, explain, now: ctx.now(), staleAfterSeconds, createdBy: request.berthPrincipal?.name ?? null,
      });
    } catch (err) {
      throw err instanceof ServiceError ? toProblem(err) : err;
    }
    const { result } = outcome;
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    const label = outcome.outcome === 'no_valid_target' ? 'no_valid_target' : dryRun ? 'dry_run' : outcome.outcome;
    ctx.metrics.observeDecision({ domain: 'replicas', outcome: label, seconds, rejections: result.rejections });
    if (!dryRun) for (const u of result.unscheduled) metrics.failures.inc({ reason: u.reason });
    // What was asked and what was chosen, so an operator can follow one volume through the log.
    const targets = dryRun ? outcome.proposed : outcome.replicas;
    request.log.info({
      domain: 'replicas', outcome: label, dryRun, volume: volume.name, size: volume.size,
      numberOfReplicas: volume.numberOfReplicas, existingReplicas: body.existingReplicas.length,
      target: targets.map((x) => `${x.node}/${x.disk}`),
      replicas: targets.map((x) => ({ ...('name' in x ? { name: x.name } : {}), node: x.node, disk: x.disk, size: x.size })),
      candidates: result.candidates, passed: result.passed,
      missing: result.missing, unscheduled: result.unscheduled.length, ms: seconds * 1000,
    }, 'decision');

    if (outcome.outcome === 'no_valid_target') {
      const reasons = [...new Set(result.unscheduled.flatMap((u) => u.reasons))].sort();
      const detail = reasons.length > 0 ? reasons.join('; ') : 'replica scheduling failed';
      throw new ProblemError(409, 'replica-scheduling-failure', 'Replica scheduling failure', detail, {
        volume: volume.name,
        missingReplicas: result.missing,
        placeable: result.placements.length,
        unscheduled: result.unscheduled.map((u) => ({ reason: u.reason })),
        ...(result.trace ? { explain: result.trace } : {}),
      });
    }
    return {
      dryRun,
      replicas: dryRun ? outcome.proposed : outcome.replicas,
      ...(result.unscheduled.length > 0 ? { unscheduled: result.unscheduled.map((u) => ({ reason: u.reason })) } : {}),
      // The trace is a typed interface; the schema documents it as an open object.
      ...(result.trace ? { explain: result.trace as unknown as Record<string, unknown> } : {}),
    };
  });

  r.get('/replicas', {
    serializerCompiler: plainJson,
    schema: {
      tags: TAGS,
      summary: 'Replicas placed by Berth (optionally of one volume)',
      querystring: ReplicaListQuerySchema,
      response: { 200: ReplicaListSchema, 400: problemResponse('Bad volume name') },
    },
  }, async (request) => ({ replicas: service.replicas(request.query.volume) }));

  r.get('/replicas/:name', {
    serializerCompiler: plainJson,
    schema: {
      tags: TAGS,
      summary: 'One replica placed by Berth',
      params: ReplicaParams,
      response: { 200: ReplicaSchema, 400: problemResponse('Bad replica name'), 404: problemResponse('Unknown replica') },
    },
  }, async (request) => {
    const replica = service.replica(request.params.name);
    if (!replica) throw new ProblemError(404, 'not-found', 'Not Found', `replica ${request.params.name} not found`);
    return replica;
  });

  r.delete('/replicas/:name', {
    schema: {
      tags: TAGS,
      summary: 'Delete a replica placed by Berth; its disk\'s scheduled bytes go down by its size',
      params: ReplicaParams,
      response: { 204: z.null().describe('Deleted'), 400: problemResponse('Bad replica name'), 404: problemResponse('Unknown replica') },
    },
  }, async (request, reply) => {
    try {
      service.deleteReplica(request.params.name);
    } catch (err) {
      throw err instanceof ServiceError ? toProblem(err) : err;
    }
    return reply.code(204).send(null);
  });
}
