// GET /usages (1.9+) and GET /resource_providers/{uuid}/usages (handlers/usage.py).
import { notFound } from '../errors.ts';
import { parseUsagesQuery, queryPairs } from '../query.ts';
import * as S from '../schemas.ts';
import { cacheHeaders, doc, errors, param, route, type PlacementRoutes } from './common.ts';

export const usageRoutes: PlacementRoutes = (app, { service, ctx }) => {
  route(app, {
    method: 'GET', url: '/resource_providers/:uuid/usages',
    schema: doc('Usages of a provider', { params: S.ProviderParams, response: { 200: S.ProviderUsagesSchema, ...errors } }),
    handler: async (request, reply) => {
      const uuid = param(request, 'uuid');
      const p = service.model.providers.get(uuid);
      if (!p) throw notFound(`No resource provider with uuid ${uuid} found: No resource provider with uuid ${uuid} found`);
      cacheHeaders(request, reply, ctx.now());
      return { resource_provider_generation: p.generation, usages: service.providerUsages(p) };
    },
  });

  route(app, {
    method: 'GET', url: '/usages', since: 9,
    schema: doc('Usages of a project (and user); by consumer type from 1.38', { querystring: S.UsagesQuerySchema, response: { 200: S.UsagesSchema, ...errors } }),
    handler: async (request, reply) => {
      const mv = request.placementMv;
      const usages = service.totalUsages(parseUsagesQuery(queryPairs(request.url), mv));
      cacheHeaders(request, reply, ctx.now());
      return { usages: mv < 38 ? usages.flat : usages.byType };
    },
  });
};
