// /allocations/{consumer_uuid}, POST /allocations and /resource_providers/{uuid}/allocations
// (handlers/allocation.py).
import { badRequest } from '../errors.ts';
import { isUuidLike } from '../query.ts';
import * as S from '../schemas.ts';
import { consumerAllocationsBody, providerAllocationsBody } from '../serialize.ts';
import { doc, EMPTY, errors, withZod, type PlacementRoutes } from './common.ts';

/** Placement's allocation schemas: consumer_type is required from 1.38 and unknown before it. */
function checkConsumerType(body: { consumer_type?: string | undefined }, mv: number): void {
  if (mv >= 38 && body.consumer_type === undefined) {
    throw badRequest("JSON does not validate: 'consumer_type' is a required property");
  }
  if (mv < 38 && body.consumer_type !== undefined) {
    throw badRequest("JSON does not validate: Additional properties are not allowed ('consumer_type' was unexpected)");
  }
}

export const allocationRoutes: PlacementRoutes = (app, { service }) => {
  const routes = withZod(app);

  routes.get('/allocations/:consumer_uuid', {
    schema: doc('Allocations of a consumer', { params: S.ConsumerParams, response: { 200: S.AnyObjectSchema, ...errors } }),
  }, async (request) => consumerAllocationsBody(service.model, service.consumer(request.params.consumer_uuid), request.placementMv));

  routes.put('/allocations/:consumer_uuid', {
    schema: doc('Replace the allocations of a consumer (capacity checked; 409 on conflicts)', {
      params: S.ConsumerParams, body: S.ConsumerAllocationsSchema, response: { 204: S.noContent('Written'), ...errors },
    }),
  }, async (request, reply) => {
    const consumer = request.params.consumer_uuid;
    if (!isUuidLike(consumer)) throw badRequest(`Malformed consumer_uuid: ${consumer}`);
    checkConsumerType(request.body, request.placementMv);
    service.setAllocations(new Map([[consumer, request.body]]));
    return reply.code(204).send(EMPTY);
  });

  routes.post('/allocations', {
    schema: doc('Replace the allocations of several consumers atomically', { body: S.AllocationsPostSchema, response: { 204: S.noContent('Written'), ...errors } }),
  }, async (request, reply) => {
    for (const body of Object.values(request.body)) checkConsumerType(body, request.placementMv);
    service.setAllocations(new Map(Object.entries(request.body)));
    return reply.code(204).send(EMPTY);
  });

  routes.delete('/allocations/:consumer_uuid', {
    schema: doc('Delete the allocations of a consumer', { params: S.ConsumerParams, response: { 204: S.noContent('Deleted'), ...errors } }),
  }, async (request, reply) => {
    service.deleteAllocations(request.params.consumer_uuid);
    return reply.code(204).send(EMPTY);
  });

  routes.get('/resource_providers/:uuid/allocations', {
    schema: doc('Allocations against a provider', { params: S.UuidParams, response: { 200: S.AnyObjectSchema, ...errors } }),
  }, async (request) => providerAllocationsBody(service.model, service.provider(request.params.uuid)));
};
