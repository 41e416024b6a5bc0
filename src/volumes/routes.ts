// HTTP routes of the volumes dialect (Cinder): backends' capability reports, get_pools, scheduling, volumes.
import { z } from 'zod';
import { zodApp, type BerthContext, type DomainPlugin } from '../http/context.ts';
import { ProblemError, problemResponse } from '../http/problem.ts';
import { registerVolumesMetrics } from './metrics.ts';
import {
  BackendAcceptedSchema,
  BackendListSchema,
  BackendReportSchema,
  HostParamsSchema,
  PoolListSchema,
  PoolsQuerySchema,
  ScheduleBodySchema,
  ScheduleQuerySchema,
  ScheduleResponseSchema,
  VolumeDetailSchema,
  VolumeListSchema,
  VolumeParamsSchema,
} from './schemas.ts';
import { NoValidBackendError, VolumesService } from './service.ts';

const TAGS = ['volumes'];
const JSON_TYPE = 'application/json; charset=utf-8';
/** Large or hot responses skip zod's runtime encoding (they are built from validated state). */
const stringify = (payload: unknown) => JSON.stringify(payload);

/** The service of each app (by its context), for read-only views such as the console's fleet. */
export const volumesServices = new WeakMap<BerthContext, VolumesService>();

export const volumesPlugin: DomainPlugin = async (fastify, ctx) => {
  const app = zodApp(fastify);
  const service = new VolumesService(ctx.config, ctx.store, ctx.now);
  volumesServices.set(ctx, service);
  registerVolumesMetrics(ctx.metrics.registry, service);

  app.put('/backends/:host', {
    schema: {
      tags: TAGS,
      summary: 'Report a backend\'s capabilities (Cinder get_volume_stats), with pools or as a legacy single pool',
      description: 'Replaces the backend\'s previous report. Pools are named host#pool_name. allocated_capacity_gb is ' +
        'Berth\'s own figure (a reported one is ignored with a warning); a pool without provisioned_capacity_gb uses ' +
        'it instead. max_over_subscription_ratio \'auto\' is computed now. Malformed stats are refused, nothing stored.',
      params: HostParamsSchema,
      body: BackendReportSchema,
      response: {
        200: BackendAcceptedSchema,
        400: problemResponse('Malformed stats (the field is named); nothing was stored'),
      },
    },
  }, async (request) => service.applyReport(request.params.host, request.body));

  app.get('/backends', {
    schema: {
      tags: TAGS,
      summary: 'List the backends that reported, in report order',
      response: { 200: BackendListSchema },
    },
  }, async () => ({ backends: service.listBackends() }));

  app.delete('/backends/:host', {
    schema: {
      tags: TAGS,
      summary: 'Forget a backend and its pools (volumes placed there stay listed)',
      params: HostParamsSchema,
      response: { 204: z.null().describe('Forgotten'), 404: problemResponse('No such backend') },
    },
  }, async (request, reply) => {
    service.deleteBackend(request.params.host);
    return reply.code(204).send(null);
  });

  app.get('/pools', {
    schema: {
      tags: TAGS,
      summary: 'List pools (Cinder get_pools); with size, only pools that would accept such a volume, best first',
      description: 'detail=true adds capabilities: the reported ones plus backend info, Berth\'s allocated_capacity_gb, ' +
        'the effective max_over_subscription_ratio, generation and current figures. Any other query parameter ' +
        'filters on a capability value.',
      querystring: PoolsQuerySchema,
      response: { 200: PoolListSchema, 400: problemResponse('Invalid query') },
    },
  }, async (request, reply) => {
    const { detail, name, volume_type, size, availability_zone, ...filters } = request.query;
    const pools = service.listPools({ name, volume_type, size, availability_zone, filters: filters as Record<string, string> });
    const body = {
      pools: pools.map((p) => (detail ? { name: p.name, capabilities: service.poolDetail(p) } : { name: p.name })),
    };
    return reply.type(JSON_TYPE).serializer(stringify).send(body);
  });

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
        409: problemResponse('No valid backend (type …/no-valid-backend, with each pool\'s rejection), or the volume id exists'),
      },
    },
  }, async (request, reply) => {
    const started = performance.now();
    const dryRun = request.query.dry_run ?? false;
    const explain = request.query.explain ?? false;
    try {
      const outcome = service.schedule(request.body, { dryRun, explain, createdBy: request.berthPrincipal?.name ?? null });
      const seconds = (performance.now() - started) / 1000;
      const result = dryRun ? 'dry_run' : 'placed';
      ctx.metrics.observeDecision({ domain: 'volumes', outcome: result, seconds, rejections: outcome.rejections });
      request.log.info({
        domain: 'volumes', outcome: result, target: outcome.pool, candidates: outcome.candidates, passed: outcome.passed,
        ms: seconds * 1000,
      }, 'decision');
      const body = { pool: outcome.pool, weight: outcome.weight, volume: outcome.volume, ...(outcome.explain ? { explain: outcome.explain } : {}) };
      return reply.type(JSON_TYPE).serializer(stringify).send(body);
    } catch (err) {
      if (err instanceof NoValidBackendError) {
        const seconds = (performance.now() - started) / 1000;
        ctx.metrics.observeDecision({ domain: 'volumes', outcome: 'no_valid_backend', seconds, rejections: err.rejections });
        request.log.info({
          domain: 'volumes', outcome: 'no_valid_backend', target: null, candidates: err.candidates, passed: 0, ms: seconds * 1000,
        }, 'decision');
      }
      if (err instanceof ProblemError && err.slug === 'conflict') {
        ctx.metrics.observeDecision({ domain: 'volumes', outcome: 'conflict', seconds: (performance.now() - started) / 1000 });
      }
      throw err;
    }
  });

  app.get('/volumes', {
    schema: { tags: TAGS, summary: 'List the volumes Berth placed', response: { 200: VolumeListSchema } },
  }, async (_request, reply) => reply.type(JSON_TYPE).serializer(stringify).send({ volumes: service.listVolumes().map(publicVolume) }));

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
      response: { 204: z.null().describe('Deleted'), 404: problemResponse('No such volume') },
    },
  }, async (request, reply) => {
    service.deleteVolume(request.params.id);
    return reply.code(204).send(null);
  });
};

function publicVolume(v: { id: string; size: number; pool: string; thin: boolean; created_at: string; created_by: string | null }) {
  return { id: v.id, size: v.size, pool: v.pool, thin: v.thin, created_at: v.created_at, created_by: v.created_by };
}
