// /resource_providers/{uuid}/aggregates (handlers/aggregate.py) and Nova's host-aggregate metadata, which
// isolate_aggregates reads (/aggregates/{uuid}/metadata: Berth's stand-in for Nova's API database).
import { badRequest } from '../errors.ts';
import { isUuidLike } from '../query.ts';
import * as S from '../schemas.ts';
import { providerAggregatesBody } from '../serialize.ts';
import { doc, errors, withZod, type PlacementRoutes } from './common.ts';

export const aggregateRoutes: PlacementRoutes = (app, { service }) => {
  const routes = withZod(app);

  routes.get('/resource_providers/:uuid/aggregates', {
    schema: doc('List aggregates of a provider', { params: S.UuidParams, response: { 200: S.AnyObjectSchema, ...errors } }),
  }, async (request) => providerAggregatesBody(service.provider(request.params.uuid)));

  routes.put('/resource_providers/:uuid/aggregates', {
    schema: doc('Replace the aggregates of a provider', { params: S.UuidParams, body: S.ProviderAggregatesPutSchema, response: { 200: S.AnyObjectSchema, ...errors } }),
  }, async (request) => providerAggregatesBody(
    service.setProviderAggregates(request.params.uuid, request.body.resource_provider_generation, request.body.aggregates),
  ));

  routes.get('/aggregates/:uuid/metadata', {
    schema: doc('Nova host-aggregate metadata (isolate_aggregates reads trait:X=required entries)', { params: S.UuidParams, response: { 200: S.AggregateMetadataSchema, ...errors } }),
  }, async (request) => ({ metadata: service.model.aggregateMetadata.get(request.params.uuid) ?? {} }));

  routes.put('/aggregates/:uuid/metadata', {
    schema: doc('Replace Nova host-aggregate metadata, e.g. {"metadata": {"trait:CUSTOM_WINDOWS_LICENSED": "required"}}', {
      params: S.UuidParams, body: S.AggregateMetadataSchema, response: { 200: S.AggregateMetadataSchema, ...errors },
    }),
  }, async (request) => {
    if (!isUuidLike(request.params.uuid)) throw badRequest(`Malformed aggregate uuid: ${request.params.uuid}`);
    service.setAggregateMetadata(request.params.uuid, request.body.metadata);
    return { metadata: service.model.aggregateMetadata.get(request.params.uuid) ?? {} };
  });
};
