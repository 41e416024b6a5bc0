// GET /pools: Cinder's get_pools, and with a size the pools that would take such a volume now, best first.
import type { FastifyInstance } from 'fastify';
import { zodApp } from '../../http/context.ts';
import { problemResponse } from '../../http/problem.ts';
import { sendJson } from '../../http/serialize.ts';
import { PoolListSchema, PoolsQuerySchema } from '../schemas.ts';
import type { VolumesService } from '../service.ts';
import { TAGS } from './tags.ts';

export function poolRoutes(fastify: FastifyInstance, service: VolumesService): void {
  const app = zodApp(fastify);

  app.get('/pools', {
    schema: {
      tags: TAGS,
      summary: 'List pools (Cinder get_pools); with size, only pools that would accept such a volume, best first',
      description: 'detail=true adds capabilities: the reported ones plus backend info, Berth\'s allocated_capacity_gb, ' +
        'the effective max_over_subscription_ratio, generation and current figures. Any other query parameter ' +
        'filters on a capability value.',
      querystring: PoolsQuerySchema,
      response: { 200: PoolListSchema, 400: problemResponse('Invalid query'), 404: problemResponse('explain_target names no pool') },
    },
  }, async (request, reply) => {
    const { detail, name, volume_type, size, availability_zone, explain_target, ...filters } = request.query;
    const pools = service.listPools({ name, volume_type, size, availability_zone, explain_target, filters: filters as Record<string, string> });
    return sendJson(reply, { pools: service.poolViews(pools, detail ?? false), ...(pools.target ? { target: pools.target } : {}) });
  });
}
