// /traits[/{name}] and /resource_providers/{uuid}/traits (handlers/trait.py).
import { notFound } from '../errors.ts';
import { parseTraitsQuery, queryPairs } from '../query.ts';
import * as S from '../schemas.ts';
import { providerTraitsBody } from '../serialize.ts';
import { doc, EMPTY, errors, withZod, type PlacementRoutes } from './common.ts';

export const traitRoutes: PlacementRoutes = (app, { service }) => {
  const routes = withZod(app);

  routes.get('/traits', {
    schema: doc('List traits (name=in:A,B | startswith:X; associated=true|false)', { querystring: S.TraitsQuerySchema, response: { 200: S.AnyObjectSchema, ...errors } }),
  }, async (request) => ({ traits: service.listTraits(parseTraitsQuery(queryPairs(request.url))) }));

  routes.get('/traits/:name', {
    schema: doc('Check that a trait exists (204)', { params: S.NameParams, response: { 204: S.noContent('Exists'), ...errors } }),
  }, async (request, reply) => {
    if (!service.model.traits.has(request.params.name)) throw notFound(`No such trait(s): ${request.params.name}.`);
    return reply.code(204).send(EMPTY);
  });

  routes.put('/traits/:name', {
    schema: doc('Create a CUSTOM_ trait (201 created, 204 existed)', { params: S.NameParams, response: { 201: S.noContent('Created'), 204: S.noContent('Already existed'), ...errors } }),
  }, async (request, reply) => {
    const created = service.createTrait(request.params.name);
    reply.header('location', `/traits/${request.params.name}`);
    return reply.code(created ? 201 : 204).send(EMPTY);
  });

  routes.delete('/traits/:name', {
    schema: doc('Delete a CUSTOM_ trait', { params: S.NameParams, response: { 204: S.noContent('Deleted'), ...errors } }),
  }, async (request, reply) => {
    service.deleteTrait(request.params.name);
    return reply.code(204).send(EMPTY);
  });

  routes.get('/resource_providers/:uuid/traits', {
    schema: doc('List traits of a provider', { params: S.UuidParams, response: { 200: S.AnyObjectSchema, ...errors } }),
  }, async (request) => providerTraitsBody(service.provider(request.params.uuid)));

  routes.put('/resource_providers/:uuid/traits', {
    schema: doc('Replace the traits of a provider', { params: S.UuidParams, body: S.ProviderTraitsPutSchema, response: { 200: S.AnyObjectSchema, ...errors } }),
  }, async (request) => providerTraitsBody(
    service.setProviderTraits(request.params.uuid, request.body.resource_provider_generation, request.body.traits),
  ));

  routes.delete('/resource_providers/:uuid/traits', {
    schema: doc('Remove every trait of a provider', { params: S.UuidParams, response: { 204: S.noContent('Deleted'), ...errors } }),
  }, async (request, reply) => {
    service.deleteProviderTraits(request.params.uuid);
    return reply.code(204).send(EMPTY);
  });
};
