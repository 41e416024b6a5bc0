// POST /replicas/headroom: how many more volumes like this one get every replica placed, changing nothing.
import type { FastifyInstance } from 'fastify';
import { zodApp, type BerthContext } from '../../http/context.ts';
import { problemResponse } from '../../http/problem.ts';
import type { VolumeSpec } from '../model.ts';
import { HeadroomBodySchema, HeadroomResponseSchema } from '../schemas.ts';
import type { ReplicaService } from '../service.ts';
import { TAGS } from './tags.ts';

export function headroomRoutes(fastify: FastifyInstance, service: ReplicaService, ctx: BerthContext): void {
  const app = zodApp(fastify);

  app.post('/replicas/headroom', {
    schema: {
      tags: TAGS,
      summary: 'How many more such volumes fit: each scheduled and claimed as POST /replicas/schedule would, one after another',
      description: 'Counts new volumes like `volume` (the body of POST /replicas/schedule without existingReplicas), each ' +
        'seeing the replicas of the earlier ones, until the first that cannot get every replica placed; `limit` is ' +
        'that refusal\'s detail. Nothing is claimed or stored.',
      body: HeadroomBodySchema,
      response: {
        200: HeadroomResponseSchema,
        400: problemResponse('Invalid volume, or max outside 1 … 1,000,000 (the field is named)'),
      },
    },
  }, async (request) => {
    const { volume: body, max } = request.body;
    const volume: VolumeSpec = { ...body, numberOfReplicas: body.numberOfReplicas ?? service.settings['default-replica-count'] };
    const answer = service.headroom(volume, max, { now: ctx.now(), staleAfterSeconds: ctx.config.stats_stale_after_seconds });
    ctx.metrics.headroomRequests.inc({ domain: 'replicas', truncated: String(answer.truncated) });
    return answer;
  });
}
