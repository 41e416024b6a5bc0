// POST /reshaper (handlers/reshaper.py, 1.30+): inventories and allocations of several providers and
// consumers replaced in one step (nova-compute moving VGPU or PCPU inventory to nested providers).
import * as S from '../schemas.ts';
import { doc, EMPTY, errors, jsonBody, route, type PlacementRoutes } from './common.ts';

export const reshaperRoutes: PlacementRoutes = (app, { service }) => {
  route(app, {
    method: 'POST', url: '/reshaper', since: 30, json: true,
    schema: doc('Reshape: replace inventories and allocations atomically (1.30+; mappings 1.34+, consumer_type 1.38+)', {
      body: S.ReshapeSchema, response: { 204: S.noContent('Reshaped'), ...errors },
    }),
    handler: async (request, reply) => {
      const mv = request.placementMv;
      await service.reshape(jsonBody(request, S.reshapeSchema(mv)), mv);
      return reply.code(204).send(EMPTY);
    },
  });
};
