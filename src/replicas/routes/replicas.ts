// The replicas Berth placed: list, read, delete (which releases their disk's scheduled bytes).
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { zodApp } from '../../http/context.ts';
import { problemResponse, ProblemError } from '../../http/problem.ts';
import { ReplicaListQuerySchema, ReplicaListSchema, ReplicaParams, ReplicaSchema } from '../schemas.ts';
import type { ReplicaService } from '../service.ts';
import { sendJson } from '../../http/serialize.ts';
import { TAGS } from './tags.ts';

export function replicaRoutes(fastify: FastifyInstance, service: ReplicaService): void {
  const app = zodApp(fastify);

  app.get('/replicas', {
    schema: {
      tags: TAGS,
      summary: 'Replicas placed by Berth (optionally of one volume)',
      querystring: ReplicaListQuerySchema,
      response: { 200: ReplicaListSchema, 400: problemResponse('Bad volume name') },
    },
  }, async (request, reply) => sendJson(reply, { replicas: service.replicas(request.query.volume) }));

  app.get('/replicas/:name', {
    schema: {
      tags: TAGS,
      summary: 'One replica placed by Berth',
      params: ReplicaParams,
      response: { 200: ReplicaSchema, 400: problemResponse('Bad replica name'), 404: problemResponse('Unknown replica') },
    },
  }, async (request, reply) => {
    const replica = service.replica(request.params.name);
    if (!replica) throw new ProblemError(404, 'not-found', 'Not Found', `replica ${request.params.name} not found`);
    return sendJson(reply, replica);
  });

  app.delete('/replicas/:name', {
    schema: {
      tags: TAGS,
      summary: 'Delete a replica placed by Berth; its disk\'s scheduled bytes go down by its size',
      params: ReplicaParams,
      response: {
        204: z.null().describe('Deleted'),
        400: problemResponse('Bad replica name'),
        404: problemResponse('Unknown replica'),
        409: problemResponse('The deletion kept conflicting with other instances\' changes to its disk or volume (/conflict); nothing deleted'),
      },
    },
  }, async (request, reply) => {
    await service.deleteReplica(request.params.name);
    return reply.code(204).send(null);
  });
}
