// Scheduling (decide, claim) and the volumes Berth placed.
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { zodApp, type BerthContext } from '../../http/context.ts';
import { startDecision } from '../../http/decision-report.ts';
import { problemResponse } from '../../http/problem.ts';
import { sendJson } from '../../http/serialize.ts';
import {
  HeadroomBodySchema,
  HeadroomResponseSchema,
  ScheduleBodySchema,
  ScheduleQuerySchema,
  ScheduleResponseSchema,
  VolumeDetailSchema,
  VolumeListSchema,
  VolumeParamsSchema,
} from '../schemas.ts';
import type { VolumesService } from '../service.ts';
import type { VolumeRecord } from '../model.ts';
import { TAGS } from './tags.ts';

export function volumeRoutes(fastify: FastifyInstance, service: VolumesService, ctx: BerthContext): void {
  const app = zodApp(fastify);

  app.post('/volumes/schedule', {
    schema: {
      tags: TAGS,
      summary: 'Choose a pool for a volume and claim the space (dry_run: decide only; explain: the trace)',
      description: 'Filters (scheduler_default_filters) then weighers (scheduler_default_weighers) as Cinder 21 does. ' +
        'A request is thin unless extra spec provisioning:type is thick. 409 no-valid-backend lists every pool\'s rejection.',
      querystring: ScheduleQuerySchema,
      body: ScheduleBodySchema,
      response: {
        200: ScheduleResponseSchema,
        400: problemResponse('Invalid request'),
        404: problemResponse('explain_target names no pool'),
        409: problemResponse('No valid backend (type …/no-valid-backend, with each pool\'s rejection), the volume id exists, ' +
          'or other Berth instances kept changing the chosen pool under the claim (…/conflict)'),
      },
    },
  }, async (request, reply) => {
    const report = startDecision(request);
    const result = await service.schedule(request.body, {
      dryRun: request.query.dry_run ?? false, explain: request.query.explain ?? false, createdBy: request.berthPrincipal?.name ?? null,
      ...(request.query.explain_target !== undefined ? { explainTarget: request.query.explain_target } : {}),
    });
    const explain = result.answer ? result.answer.explain : result.error?.extensions.explain;
    report.finish({
      outcome: result.outcome,
      asked: { volume: request.body.id ?? result.answer?.volume.id ?? null, size: request.body.size },
      targets: result.error || result.pool === null ? [] : [result.pool],
      candidates: result.candidates,
      passed: result.passed,
      rejections: result.rejections,
      ...(result.error ? { detail: result.error.message } : {}),
      ...(explain !== undefined ? { explain } : {}),
    });
    if (result.error) throw result.error;
    return sendJson(reply, result.answer);
  });

  app.post('/volumes/headroom', {
    schema: {
      tags: TAGS,
      summary: 'How many more such volumes fit, one after another, each scheduled and claimed as now (nothing changes)',
      description: 'The body of POST /volumes/schedule (without id) plus max. The count equals scheduling and claiming ' +
        'one volume after another until the first refusal: the same filters, weighers, ranking and consumption. Per ' +
        'pool: how many it takes, and the sentence of the filter that would refuse the next one there.',
      body: HeadroomBodySchema,
      response: { 200: HeadroomResponseSchema, 400: problemResponse('Invalid request (a negative size, max out of range, …)') },
    },
  }, async (request, reply) => {
    const answer = service.headroom(request.body);
    ctx.metrics.headroomRequests.inc({ domain: 'volumes', truncated: String(answer.truncated) });
    return sendJson(reply, answer);
  });

  app.get('/volumes', {
    schema: { tags: TAGS, summary: 'List the volumes Berth placed', response: { 200: VolumeListSchema } },
  }, async (_request, reply) => sendJson(reply, { volumes: service.listVolumes().map(publicVolume) }));

  app.get('/volumes/:id', {
    schema: {
      tags: TAGS,
      summary: 'One placed volume',
      params: VolumeParamsSchema,
      response: { 200: VolumeDetailSchema, 404: problemResponse('No such volume') },
    },
  }, async (request) => publicVolume(service.getVolume(request.params.id)));

  app.delete('/volumes/:id', {
    schema: {
      tags: TAGS,
      summary: 'Delete a volume: releases its space on the pool',
      params: VolumeParamsSchema,
      response: {
        204: z.null().describe('Deleted'),
        404: problemResponse('No such volume'),
        409: problemResponse('Other Berth instances kept changing the volume\'s pool; nothing was released, retry'),
      },
    },
  }, async (request, reply) => {
    await service.deleteVolume(request.params.id);
    return reply.code(204).send(null);
  });
}

function publicVolume(v: VolumeRecord) {
  return { id: v.id, size: v.size, pool: v.pool, thin: v.thin, created_at: v.created_at, created_by: v.created_by };
}
