// /resource_classes[/{name}] (handlers/resource_class.py).
import { badRequest, notFound } from '../errors.ts';
import * as S from '../schemas.ts';
import { resourceClassBody } from '../serialize.ts';
import { doc, EMPTY, errors, withZod, type PlacementRoutes } from './common.ts';

export const resourceClassRoutes: PlacementRoutes = (app, { service }) => {
  const routes = withZod(app);

  routes.get('/resource_classes', {
    schema: doc('List resource classes', { response: { 200: S.AnyObjectSchema, ...errors } }),
  }, async () => ({ resource_classes: [...service.model.resourceClasses].map(resourceClassBody) }));

  routes.post('/resource_classes', {
    schema: doc('Create a CUSTOM_ resource class', { body: S.ResourceClassCreateSchema, response: { 201: S.noContent('Created'), ...errors } }),
  }, async (request, reply) => {
    service.createResourceClass(request.body.name, true);
    return reply.code(201).header('location', `/resource_classes/${request.body.name}`).send(EMPTY);
  });

  routes.get('/resource_classes/:name', {
    schema: doc('Show a resource class', { params: S.NameParams, response: { 200: S.AnyObjectSchema, ...errors } }),
  }, async (request) => {
    if (!service.model.resourceClasses.has(request.params.name)) throw notFound(`No such resource class ${request.params.name}.`);
    return resourceClassBody(request.params.name);
  });

  routes.put('/resource_classes/:name', {
    schema: doc('Create a CUSTOM_ resource class (201 created, 204 existed)', { params: S.NameParams, response: { 201: S.noContent('Created'), 204: S.noContent('Existed'), ...errors } }),
  }, async (request, reply) => {
    const name = request.params.name;
    if (service.model.resourceClasses.has(name) && !name.startsWith('CUSTOM_')) throw badRequest(`Cannot update standard resource class ${name}`);
    const created = service.createResourceClass(name, false);
    reply.header('location', `/resource_classes/${name}`);
    return reply.code(created ? 201 : 204).send(EMPTY);
  });

  routes.delete('/resource_classes/:name', {
    schema: doc('Delete a CUSTOM_ resource class', { params: S.NameParams, response: { 204: S.noContent('Deleted'), ...errors } }),
  }, async (request, reply) => {
    service.deleteResourceClass(request.params.name);
    return reply.code(204).send(EMPTY);
  });
};
