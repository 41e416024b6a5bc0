// /resource_providers/{uuid}/aggregates (handlers/aggregate.py, 1.1+; with generations from 1.19) and Nova's
// host-aggregate metadata, which isolate_aggregates reads (/aggregates/{uuid}/metadata: Berth's stand-in for
// Nova's API database).
import { badRequest } from '../errors.ts';
import * as S from '../schemas.ts';
import { providerAggregatesBody } from '../serialize.ts';
import { isUuidLike } from '../validate.ts';
import { cacheHeaders, doc, errors, jsonBody, param, route, type PlacementRoutes } from './common.ts';

export const aggregateRoutes: PlacementRoutes = (app, { service, ctx }) => {
  route(app, {
    method: 'GET', url: '/resource_providers/:uuid/aggregates', since: 1,
    schema: doc('List aggregates of a provider', { params: S.ProviderParams, response: { 200: S.ProviderAggregatesSchema, ...errors } }),
    handler: async (request, reply) => {
      const p = service.provider(param(request, 'uuid'));
      cacheHeaders(request, reply, ctx.now());
      return providerAggregatesBody(p, request.placementMv);
    },
  });

  route(app, {
    method: 'PUT', url: '/resource_providers/:uuid/aggregates', since: 1, json: true,
    schema: doc('Replace the aggregates of a provider (a bare list before 1.19)', {
      params: S.ProviderParams, body: S.ProviderAggregatesPutSchema, response: { 200: S.ProviderAggregatesSchema, ...errors },
    }),
    handler: async (request, reply) => {
      const mv = request.placementMv;
      const p = service.provider(param(request, 'uuid'));
      const body = jsonBody(request, S.providerAggregatesSchema(mv));
      const [aggregates, generation] = Array.isArray(body) ? [body, null] : [body.aggregates, body.resource_provider_generation];
      const updated = await service.setProviderAggregates(p.uuid, aggregates, generation);
      cacheHeaders(request, reply, ctx.now());
      return providerAggregatesBody(updated, mv, aggregates);
    },
  });

  route(app, {
    method: 'GET', url: '/aggregates/:uuid/metadata',
    schema: doc('Nova host-aggregate metadata (isolate_aggregates reads trait:X=required entries)', { params: S.AggregateParams, response: { 200: S.AggregateMetadataSchema, ...errors } }),
    handler: async (request) => ({ metadata: service.model.aggregateMetadata.get(param(request, 'uuid')) ?? {} }),
  });

  route(app, {
    method: 'PUT', url: '/aggregates/:uuid/metadata', json: true,
    schema: doc('Replace Nova host-aggregate metadata, e.g. {"metadata": {"trait:CUSTOM_WINDOWS_LICENSED": "required"}}', {
      params: S.AggregateParams, body: S.AggregateMetadataSchema, response: { 200: S.AggregateMetadataSchema, ...errors },
    }),
    handler: async (request) => {
      const uuid = param(request, 'uuid');
      if (!isUuidLike(uuid)) throw badRequest(`Malformed aggregate uuid: ${uuid}`);
      const { metadata } = jsonBody(request, S.AggregateMetadataSchema);
      await service.setAggregateMetadata(uuid, metadata);
      return { metadata: service.model.aggregateMetadata.get(uuid) ?? {} };
    },
  });
};
