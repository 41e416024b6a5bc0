// /resource_providers/{uuid}/inventories[/{resource_class}] (handlers/inventory.py).
import { notFound } from '../errors.ts';
import * as S from '../schemas.ts';
import { inventoriesBody, inventoryBody } from '../serialize.ts';
import { cacheHeaders, doc, EMPTY, errors, jsonBody, location, param, type PlacementRoutes, route } from './common.ts';

export const inventoryRoutes: PlacementRoutes = (app, { service, ctx }) => {
  /** get_inventories / get_inventory wrap the provider's 404 in their own sentence. */
  const providerForRead = (uuid: string) => {
    const p = service.model.providers.get(uuid);
    if (!p) throw notFound(`No resource provider with uuid ${uuid} found : No resource provider with uuid ${uuid} found`);
    return p;
  };

  route(app, {
    method: 'GET', url: '/resource_providers/:uuid/inventories',
    schema: doc('List inventories of a provider', { params: S.ProviderParams, response: { 200: S.InventoriesSchema, ...errors } }),
    handler: async (request, reply) => {
      const p = providerForRead(param(request, 'uuid'));
      cacheHeaders(request, reply, ctx.now());
      return inventoriesBody(p);
    },
  });

  route(app, {
    method: 'PUT', url: '/resource_providers/:uuid/inventories', json: true,
    schema: doc('Replace all inventories of a provider', { params: S.ProviderParams, body: S.InventoriesPutSchema, response: { 200: S.InventoriesSchema, ...errors } }),
    handler: async (request, reply) => {
      const p = service.provider(param(request, 'uuid'));
      const body = jsonBody(request, S.InventoriesPutSchema) as S.InventoriesPut;
      const updated = await service.setInventories(p.uuid, body.resource_provider_generation, body.inventories, request.placementMv);
      cacheHeaders(request, reply, ctx.now());
      return inventoriesBody(updated);
    },
  });

  route(app, {
    method: 'POST', url: '/resource_providers/:uuid/inventories', json: true,
    schema: doc('Create one inventory (no generation needed)', { params: S.ProviderParams, body: S.InventoryPostSchema, response: { 201: S.InventorySchema, ...errors } }),
    handler: async (request, reply) => {
      const p = service.provider(param(request, 'uuid'));
      const { resource_class: rc, ...inv } = jsonBody(request, S.InventoryPostSchema) as S.InventoryFields & { resource_class: string };
      const updated = await service.createInventory(p.uuid, rc, inv, request.placementMv);
      reply.code(201).header('location', location(request, `/resource_providers/${p.uuid}/inventories/${rc}`));
      cacheHeaders(request, reply, ctx.now());
      return inventoryBody(updated, rc);
    },
  });

  route(app, {
    method: 'DELETE', url: '/resource_providers/:uuid/inventories', since: 5, belowStatus: 405,
    schema: doc('Delete all inventories of a provider (1.5+)', { params: S.ProviderParams, response: { 204: S.noContent('Deleted'), ...errors } }),
    handler: async (request, reply) => {
      await service.deleteInventories(service.provider(param(request, 'uuid')).uuid);
      return reply.code(204).send(EMPTY);
    },
  });

  route(app, {
    method: 'GET', url: '/resource_providers/:uuid/inventories/:resource_class',
    schema: doc('Show one inventory', { params: S.ProviderClassParams, response: { 200: S.InventorySchema, ...errors } }),
    handler: async (request, reply) => {
      const p = providerForRead(param(request, 'uuid'));
      const rc = param(request, 'resource_class');
      if (!p.inventories.has(rc)) throw notFound(`No inventory of class ${rc} for ${p.uuid}`);
      cacheHeaders(request, reply, ctx.now());
      return inventoryBody(p, rc);
    },
  });

  route(app, {
    method: 'PUT', url: '/resource_providers/:uuid/inventories/:resource_class', json: true,
    schema: doc('Update one inventory', { params: S.ProviderClassParams, body: S.InventoryPutSchema, response: { 200: S.InventorySchema, ...errors } }),
    handler: async (request, reply) => {
      const p = service.provider(param(request, 'uuid'));
      const rc = param(request, 'resource_class');
      const updated = await service.updateInventory(p.uuid, rc, jsonBody(request, S.InventoryPutSchema) as S.InventoryFields, request.placementMv);
      cacheHeaders(request, reply, ctx.now());
      return inventoryBody(updated, rc);
    },
  });

  route(app, {
    method: 'DELETE', url: '/resource_providers/:uuid/inventories/:resource_class',
    schema: doc('Delete one inventory (409 while allocated)', { params: S.ProviderClassDeleteParams, response: { 204: S.noContent('Deleted'), ...errors } }),
    handler: async (request, reply) => {
      await service.deleteInventory(service.provider(param(request, 'uuid')).uuid, param(request, 'resource_class'));
      return reply.code(204).send(EMPTY);
    },
  });
};
