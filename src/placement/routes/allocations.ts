// /allocations/{consumer_uuid}, POST /allocations (1.13+) and /resource_providers/{uuid}/allocations
// (handlers/allocation.py). Bodies come in the form of the requested microversion and reach the service as the
// 1.12+ dict form.
import { badRequest, notFound } from '../errors.ts';
import * as S from '../schemas.ts';
import { canonicalUuid } from '../service.ts';
import { consumerAllocationsBody, providerAllocationsBody } from '../serialize.ts';
import { isUuidLike } from '../validate.ts';
import { cacheHeaders, doc, EMPTY, errors, jsonBody, param, route, type PlacementRoutes } from './common.ts';

export const allocationRoutes: PlacementRoutes = (app, { service, ctx }) => {
  route(app, {
    method: 'GET', url: '/allocations/:consumer_uuid',
    schema: doc('Allocations of a consumer', { params: S.ConsumerParams, response: { 200: S.ConsumerAllocationsResponseSchema, ...errors } }),
    handler: async (request, reply) => {
      cacheHeaders(request, reply, ctx.now());
      return consumerAllocationsBody(service.model, service.consumer(param(request, 'consumer_uuid')), request.placementMv);
    },
  });

  route(app, {
    method: 'PUT', url: '/allocations/:consumer_uuid', json: true,
    schema: doc('Replace the allocations of a consumer (capacity checked; 409 on conflicts)', {
      params: S.ConsumerParams, body: S.ConsumerAllocationsSchema, response: { 204: S.noContent('Written'), ...errors },
    }),
    handler: async (request, reply) => {
      const mv = request.placementMv;
      const consumer = param(request, 'consumer_uuid');
      if (!isUuidLike(consumer)) throw badRequest(`Malformed consumer_uuid: ${consumer}`);
      const body = jsonBody(request, S.consumerAllocationsSchema(mv));
      await service.setAllocations(new Map([[canonicalUuid(consumer), body]]), mv, true);
      return reply.code(204).send(EMPTY);
    },
  });

  route(app, {
    method: 'POST', url: '/allocations', since: 13, json: true,
    schema: doc('Replace the allocations of several consumers atomically (1.13+)', { body: S.AllocationsPostSchema, response: { 204: S.noContent('Written'), ...errors } }),
    handler: async (request, reply) => {
      const mv = request.placementMv;
      const body = jsonBody(request, S.allocationsPostSchema(mv));
      await service.setAllocations(new Map(Object.entries(body)), mv, false);
      return reply.code(204).send(EMPTY);
    },
  });

  route(app, {
    method: 'DELETE', url: '/allocations/:consumer_uuid',
    schema: doc('Delete the allocations of a consumer', { params: S.ConsumerParams, response: { 204: S.noContent('Deleted'), ...errors } }),
    handler: async (request, reply) => {
      await service.deleteAllocations(param(request, 'consumer_uuid'));
      return reply.code(204).send(EMPTY);
    },
  });

  route(app, {
    method: 'GET', url: '/resource_providers/:uuid/allocations',
    schema: doc('Allocations against a provider', { params: S.ProviderParams, response: { 200: S.ProviderAllocationsSchema, ...errors } }),
    handler: async (request, reply) => {
      const uuid = param(request, 'uuid');
      const p = service.model.providers.get(uuid);
      if (!p) throw notFound(`Resource provider '${uuid}' not found: No resource provider with uuid ${uuid} found`);
      cacheHeaders(request, reply, ctx.now());
      return providerAllocationsBody(service.model, p, request.placementMv);
    },
  });
};
