// /traits[/{name}] and /resource_providers/{uuid}/traits (handlers/trait.py), from 1.6.
import { notFound } from '../errors.ts';
import { parseTraitsQuery, queryPairs } from '../query.ts';
import * as S from '../schemas.ts';
import { providerTraitsBody } from '../serialize.ts';
import { cacheHeaders, doc, EMPTY, errors, jsonBody, location, param, type PlacementRoutes, route } from './common.ts';

export const traitRoutes: PlacementRoutes = (app, { service, ctx }) => {
  route(app, {
    method: 'GET', url: '/traits', since: 6,
    schema: doc('List traits (name=in:A,B | startswith:X; associated=true|false)', { querystring: S.TraitsQuerySchema, response: { 200: S.TraitListSchema, ...errors } }),
    handler: async (request, reply) => {
      const traits = service.listTraits(parseTraitsQuery(queryPairs(request.url)));
      cacheHeaders(request, reply, ctx.now());
      return { traits };
    },
  });

  route(app, {
    method: 'GET', url: '/traits/:name', since: 6,
    schema: doc('Check that a trait exists (204)', { params: S.TraitShowParams, response: { 204: S.noContent('Exists'), ...errors } }),
    handler: async (request, reply) => {
      const name = param(request, 'name');
      if (!service.model.traits.has(name)) throw notFound(`No such trait(s): ${name}.`);
      cacheHeaders(request, reply, ctx.now());
      return reply.code(204).send(EMPTY);
    },
  });

  route(app, {
    method: 'PUT', url: '/traits/:name', since: 6,
    schema: doc('Create a CUSTOM_ trait (201 created, 204 existed)', { params: S.TraitParams, response: { 201: S.noContent('Created'), 204: S.noContent('Already existed'), ...errors } }),
    handler: async (request, reply) => {
      const name = param(request, 'name');
      const created = await service.createTrait(name);
      reply.header('location', location(request, `/traits/${name}`));
      cacheHeaders(request, reply, ctx.now());
      return reply.code(created ? 201 : 204).send(EMPTY);
    },
  });

  route(app, {
    method: 'DELETE', url: '/traits/:name', since: 6,
    schema: doc('Delete a CUSTOM_ trait', { params: S.TraitParams, response: { 204: S.noContent('Deleted'), ...errors } }),
    handler: async (request, reply) => {
      await service.deleteTrait(param(request, 'name'));
      return reply.code(204).send(EMPTY);
    },
  });

  route(app, {
    method: 'GET', url: '/resource_providers/:uuid/traits', since: 6,
    schema: doc('List traits of a provider', { params: S.ProviderParams, response: { 200: S.ProviderTraitsSchema, ...errors } }),
    handler: async (request, reply) => {
      const uuid = param(request, 'uuid');
      const p = service.model.providers.get(uuid);
      if (!p) throw notFound(`No resource provider with uuid ${uuid} found: No resource provider with uuid ${uuid} found`);
      cacheHeaders(request, reply, ctx.now());
      return providerTraitsBody(service.model, p);
    },
  });

  route(app, {
    method: 'PUT', url: '/resource_providers/:uuid/traits', since: 6, json: true,
    schema: doc('Replace the traits of a provider', { params: S.ProviderParams, body: S.ProviderTraitsPutSchema, response: { 200: S.ProviderTraitsSchema, ...errors } }),
    handler: async (request, reply) => {
      const body = jsonBody(request, S.ProviderTraitsPutSchema);
      const p = await service.setProviderTraits(service.provider(param(request, 'uuid')).uuid, body.resource_provider_generation, body.traits);
      cacheHeaders(request, reply, ctx.now());
      return providerTraitsBody(service.model, p);
    },
  });

  route(app, {
    method: 'DELETE', url: '/resource_providers/:uuid/traits', since: 6,
    schema: doc('Remove every trait of a provider', { params: S.ProviderParams, response: { 204: S.noContent('Deleted'), ...errors } }),
    handler: async (request, reply) => {
      await service.deleteProviderTraits(service.provider(param(request, 'uuid')).uuid);
      return reply.code(204).send(EMPTY);
    },
  });
};
