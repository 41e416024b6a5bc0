// Backends' capability reports (Cinder's get_volume_stats, as the volume service would send them to the scheduler).
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { zodApp } from '../../http/context.ts';
import { problemResponse } from '../../http/problem.ts';
import { BackendAcceptedSchema, BackendListSchema, BackendReportSchema, HostParamsSchema } from '../schemas.ts';
import type { VolumesService } from '../service.ts';
import { TAGS } from './tags.ts';

export function backendRoutes(fastify: FastifyInstance, service: VolumesService): void {
  const app = zodApp(fastify);

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
        409: problemResponse('Other Berth instances kept changing this backend\'s pools under the report; nothing was stored, retry'),
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
      response: {
        204: z.null().describe('Forgotten'),
        404: problemResponse('No such backend'),
        409: problemResponse('Other Berth instances kept changing this backend\'s pools; nothing was removed, retry'),
      },
    },
  }, async (request, reply) => {
    await service.deleteBackend(request.params.host);
    return reply.code(204).send(null);
  });
}
