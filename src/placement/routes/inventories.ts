// /resource_providers/{uuid}/inventories[/{resource_class}] (handlers/inventory.py).
import { notFound } from '../errors.ts';
import * as S from '../schemas.ts';
import { inventoriesBody, inventoryBody } from '../serialize.ts';
import { doc, EMPTY, errors, withZod, type PlacementRoutes } from './common.ts';

export const inventoryRoutes: PlacementRoutes = (app, { service }) => {
  const routes = withZod(app);

  routes.get('/resource_providers/:uuid/inventories', {
    schema: doc('List inventories of a provider', { params: S.UuidParams, response: { 200: S.AnyObjectSchema, ...errors } }),
  }, async (request) => inventoriesBody(service.provider(request.params.uuid)));

  routes.put('/resource_providers/:uuid/inventories', {
    schema: doc('Replace all inventories of a provider', { params: S.UuidParams, body: S.InventoriesPutSchema, response: { 200: S.AnyObjectSchema, ...errors } }),
  }, async (request) => inventoriesBody(service.setInventories(request.params.uuid, request.body.resource_provider_generation, request.body.inventories)));

  routes.post('/resource_providers/:uuid/inventories', {
    schema: doc('Create one inventory', { params: S.UuidParams, body: S.InventoryPostSchema, response: { 201: S.AnyObjectSchema, ...errors } }),
  }, async (request, reply) => {
    const { resource_class: rc, resource_provider_generation: gen, ...inv } = request.body;
    const p = service.createInventory(request.params.uuid, rc, gen, inv);
    reply.code(201).header('location', `/resource_providers/${p.uuid}/inventories/${rc}`);
    return inventoryBody(p, rc);
  });

  routes.delete('/resource_providers/:uuid/inventories', {
    schema: doc('Delete all inventories of a provider', { params: S.UuidParams, response: { 204: S.noContent('Deleted'), ...errors } }),
  }, async (request, reply) => {
    service.deleteInventories(request.params.uuid);
    return reply.code(204).send(EMPTY);
  });

  routes.get('/resource_providers/:uuid/inventories/:resource_class', {
    schema: doc('Show one inventory', { params: S.UuidRcParams, response: { 200: S.AnyObjectSchema, ...errors } }),
  }, async (request) => {
    const p = service.provider(request.params.uuid);
    const rc = request.params.resource_class;
    if (!p.inventories.has(rc)) throw notFound(`No inventory of class ${rc} for ${p.uuid}`);
    return inventoryBody(p, rc);
  });

  routes.put('/resource_providers/:uuid/inventories/:resource_class', {
    schema: doc('Update one inventory', { params: S.UuidRcParams, body: S.InventoryPutSchema, response: { 200: S.AnyObjectSchema, ...errors } }),
  }, async (request) => {
    const { resource_provider_generation: gen, ...inv } = request.body;
    const rc = request.params.resource_class;
    return inventoryBody(service.setInventory(request.params.uuid, rc, gen, inv), rc);
  });

  routes.delete('/resource_providers/:uuid/inventories/:resource_class', {
    schema: doc('Delete one inventory (409 placement.inventory.inuse while allocated)', { params: S.UuidRcParams, response: { 204: S.noContent('Deleted'), ...errors } }),
  }, async (request, reply) => {
    service.deleteInventory(request.params.uuid, request.params.resource_class);
    return reply.code(204).send(EMPTY);
  });
};
