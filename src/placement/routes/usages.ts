// GET /usages and GET /resource_providers/{uuid}/usages (handlers/usage.py).
import { parseUsagesQuery, queryPairs } from '../query.ts';
import * as S from '../schemas.ts';
import { doc, errors, withZod, type PlacementRoutes } from './common.ts';

export const usageRoutes: PlacementRoutes = (app, { service }) => {
  const routes = withZod(app);

  routes.get('/resource_providers/:uuid/usages', {
    schema: doc('Usages of a provider', { params: S.UuidParams, response: { 200: S.AnyObjectSchema, ...errors } }),
  }, async (request) => {
    const p = service.provider(request.params.uuid);
    return { resource_provider_generation: p.generation, usages: service.providerUsages(p) };
  });

  routes.get('/usages', {
    schema: doc('Usages of a project (and user), by consumer type', { querystring: S.UsagesQuerySchema, response: { 200: S.AnyObjectSchema, ...errors } }),
  }, async (request) => {
    const usages = service.totalUsages(parseUsagesQuery(queryPairs(request.url)));
    return { usages: request.placementMv < 38 ? usages.flat : usages.byType };
  });
};
