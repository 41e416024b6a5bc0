// Nodes and their disks as Longhorn reports them: PUT replaces a report, GET shows it with the conditions Longhorn
// derives and Berth's scheduled bytes, DELETE forgets a node.
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { zodApp, type BerthContext } from '../../http/context.ts';
import { problemResponse, ProblemError } from '../../http/problem.ts';
import type { NodeReport } from '../model.ts';
import { nodeRefusal } from '../scheduler.ts';
import { NodeDetailSchema, NodeListSchema, NodeParams, NodeReportSchema } from '../schemas.ts';
import type { NodeState, ReplicaService } from '../service.ts';
import { sendJson } from '../../http/serialize.ts';
import { TAGS } from './tags.ts';

function nodeDetail(service: ReplicaService, node: NodeState, now: number, staleAfterSeconds: number): z.output<typeof NodeDetailSchema> {
  const age = service.reportAgeSeconds(node, now);
  const settings = service.settings;
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
    schedulable: nodeRefusal(node, settings, now, staleAfterSeconds) === null,
    conditions: service.nodeConditions(node),
    disks,
  };
}

export function nodeRoutes(fastify: FastifyInstance, service: ReplicaService, ctx: BerthContext): void {
  const app = zodApp(fastify);
  const staleAfterSeconds = ctx.config.stats_stale_after_seconds;

  app.put('/nodes/:name', {
    schema: {
      tags: TAGS,
      summary: 'Report a node and its disks (Longhorn node status); replaces the previous report',
      description: 'Malformed reports are refused with 400 naming the field and are not stored. Removing a disk that holds replicas placed by Berth is refused with 409.',
      params: NodeParams,
      body: NodeReportSchema,
      response: {
        200: NodeDetailSchema,
        400: problemResponse('Malformed report (the field is named); nothing stored'),
        409: problemResponse('The report drops a disk that holds replicas placed by Berth, or it kept conflicting with other instances\' claims on that disk (/conflict)'),
      },
    },
  }, async (request, reply) => {
    const now = ctx.now();
    const node = await service.putNode(request.params.name, request.body as NodeReport, now);
    return sendJson(reply, nodeDetail(service, node, now, staleAfterSeconds));
  });

  app.get('/nodes', {
    schema: { tags: TAGS, summary: 'List nodes with their disks, conditions and scheduled bytes', response: { 200: NodeListSchema } },
  }, async (_request, reply) => {
    const now = ctx.now();
    return sendJson(reply, { nodes: service.nodes.map((n) => nodeDetail(service, n, now, staleAfterSeconds)) });
  });

  app.get('/nodes/:name', {
    schema: {
      tags: TAGS,
      summary: 'One node: its report, conditions (Ready, Schedulable per disk as Longhorn derives them) and Berth\'s scheduled bytes',
      params: NodeParams,
      response: { 200: NodeDetailSchema, 400: problemResponse('Bad node name'), 404: problemResponse('Unknown node') },
    },
  }, async (request, reply) => {
    const node = service.node(request.params.name);
    if (!node) throw new ProblemError(404, 'not-found', 'Not Found', `node ${request.params.name} not found`);
    return sendJson(reply, nodeDetail(service, node, ctx.now(), staleAfterSeconds));
  });

  app.delete('/nodes/:name', {
    schema: {
      tags: TAGS,
      summary: 'Forget a node (refused while it holds replicas placed by Berth, as Longhorn refuses)',
      params: NodeParams,
      response: {
        204: z.null().describe('Deleted'),
        400: problemResponse('Bad node name'),
        404: problemResponse('Unknown node'),
        409: problemResponse('The node holds replicas placed by Berth, or the deletion kept conflicting with other instances\' claims on it (/conflict)'),
      },
    },
  }, async (request, reply) => {
    await service.deleteNode(request.params.name);
    return reply.code(204).send(null);
  });
}
