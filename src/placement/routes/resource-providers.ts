// /resource_providers and /resource_providers/{uuid} (handlers/resource_provider.py).
import { parseProvidersQuery, queryPairs } from '../query.ts';
import * as S from '../schemas.ts';
import { providerBody } from '../serialize.ts';
import { doc, EMPTY, errors, withZod, type PlacementRoutes } from './common.ts';

export const resourceProviderRoutes: PlacementRoutes = (app, { service }) => {
  const routes = withZod(app);

  routes.get('/resource_providers', {
    schema: doc('List resource providers (filters: name, uuid, member_of, in_tree, resources, required)', {
      querystring: S.ProvidersQuerySchema, response: { 200: S.AnyObjectSchema.describe('{"resource_providers": [...]}'), ...errors },
    }),
  }, async (request) => {
    const filters = parseProvidersQuery(queryPairs(request.url), request.placementMv);
    return { resource_providers: service.listProviders(filters).map(providerBody) };
  });

  routes.post('/resource_providers', {
    schema: doc('Create a resource provider', { body: S.ProviderCreateSchema, response: { 200: S.AnyObjectSchema, 201: S.noContent('Created (before 1.20)'), ...errors } }),
  }, async (request, reply) => {
    const p = service.createProvider(request.body);
    reply.header('location', `/resource_providers/${p.uuid}`);
    if (request.placementMv < 20) return reply.code(201).send(EMPTY);
    return providerBody(p);
  });

  routes.get('/resource_providers/:uuid', {
    schema: doc('Show a resource provider', { params: S.UuidParams, response: { 200: S.AnyObjectSchema, ...errors } }),
  }, async (request) => providerBody(service.provider(request.params.uuid)));

  routes.put('/resource_providers/:uuid', {
    schema: doc('Update a resource provider (name)', { params: S.UuidParams, body: S.ProviderUpdateSchema, response: { 200: S.AnyObjectSchema, ...errors } }),
  }, async (request) => providerBody(service.updateProvider(request.params.uuid, request.body)));

  routes.delete('/resource_providers/:uuid', {
    schema: doc('Delete a resource provider', { params: S.UuidParams, response: { 204: S.noContent('Deleted'), ...errors } }),
  }, async (request, reply) => {
    service.deleteProvider(request.params.uuid);
    return reply.code(204).send(EMPTY);
  });
};
