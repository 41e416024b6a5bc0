// /resource_providers and /resource_providers/{uuid} (handlers/resource_provider.py).
import { notFound } from '../errors.ts';
import { parseProvidersQuery, queryPairs } from '../query.ts';
import * as S from '../schemas.ts';
import { providerBody } from '../serialize.ts';
import { cacheHeaders, doc, EMPTY, errors, jsonBody, location, param, type PlacementRoutes, route } from './common.ts';

export const resourceProviderRoutes: PlacementRoutes = (app, { service, ctx }) => {
  route(app, {
    method: 'GET', url: '/resource_providers',
    schema: doc('List resource providers (filters: name, uuid, member_of, in_tree, resources, required)', {
      querystring: S.ProvidersQuerySchema, response: { 200: S.ProviderListSchema, ...errors },
    }),
    handler: async (request, reply) => {
      const mv = request.placementMv;
      const providers = service.listProviders(parseProvidersQuery(queryPairs(request.url), mv));
      cacheHeaders(request, reply, ctx.now());
      return { resource_providers: providers.map((p) => providerBody(p, mv)) };
    },
  });

  route(app, {
    method: 'POST', url: '/resource_providers', json: true,
    schema: doc('Create a resource provider', {
      description: 'From 1.20 the answer is the provider (200); before, 201 without a body.',
      body: S.ProviderCreateSchema, response: { 200: S.ProviderSchema, ...errors },
    }),
    handler: async (request, reply) => {
      const mv = request.placementMv;
      const p = await service.createProvider(jsonBody(request, S.providerCreateSchema(mv)) as S.ProviderCreate);
      reply.header('location', location(request, `/resource_providers/${p.uuid}`));
      if (mv < 20) return reply.code(201).send(EMPTY);
      cacheHeaders(request, reply, ctx.now());
      return providerBody(p, mv);
    },
  });

  route(app, {
    method: 'GET', url: '/resource_providers/:uuid',
    schema: doc('Show a resource provider', { params: S.ProviderParams, response: { 200: S.ProviderSchema, ...errors } }),
    handler: async (request, reply) => {
      const p = service.provider(param(request, 'uuid'));
      cacheHeaders(request, reply, ctx.now());
      return providerBody(p, request.placementMv);
    },
  });

  route(app, {
    method: 'PUT', url: '/resource_providers/:uuid', json: true,
    schema: doc('Update a resource provider: rename, give it a parent, or (1.37+) re-parent or un-parent it; the generation stays', {
      params: S.ProviderParams, body: S.ProviderUpdateSchema, response: { 200: S.ProviderSchema, ...errors },
    }),
    handler: async (request, reply) => {
      const mv = request.placementMv;
      const p = service.provider(param(request, 'uuid'));
      const updated = await service.updateProvider(p.uuid, jsonBody(request, S.providerUpdateSchema(mv)) as S.ProviderUpdate, mv >= 37);
      cacheHeaders(request, reply, ctx.now());
      return providerBody(updated, mv);
    },
  });

  route(app, {
    method: 'DELETE', url: '/resource_providers/:uuid',
    schema: doc('Delete a resource provider', { params: S.ProviderParams, response: { 204: S.noContent('Deleted'), ...errors } }),
    handler: async (request, reply) => {
      const uuid = param(request, 'uuid');
      if (!service.model.providers.has(uuid)) throw notFound(`No resource provider with uuid ${uuid} found for delete`);
      await service.deleteProvider(uuid);
      return reply.code(204).send(EMPTY);
    },
  });
};
