// /resource_classes[/{name}] (handlers/resource_class.py), from 1.2. PUT /resource_classes/{name} renames a
// custom class with a body until 1.6 and creates one without a body from 1.7.
import { notFound } from '../errors.ts';
import * as S from '../schemas.ts';
import { resourceClassBody } from '../serialize.ts';
import { validateWith } from '../validate.ts';
import { cacheHeaders, doc, EMPTY, errors, jsonBody, location, param, type PlacementRoutes, route } from './common.ts';

export const resourceClassRoutes: PlacementRoutes = (app, { service, ctx }) => {
  route(app, {
    method: 'GET', url: '/resource_classes', since: 2,
    schema: doc('List resource classes', { response: { 200: S.ResourceClassListSchema, ...errors } }),
    handler: async (request, reply) => {
      cacheHeaders(request, reply, ctx.now());
      return { resource_classes: [...service.model.resourceClasses].map(resourceClassBody) };
    },
  });

  route(app, {
    method: 'POST', url: '/resource_classes', since: 2, json: true,
    schema: doc('Create a CUSTOM_ resource class', { body: S.ResourceClassCreateSchema, response: { 201: S.noContent('Created'), ...errors } }),
    handler: async (request, reply) => {
      const { name } = jsonBody(request, S.ResourceClassCreateSchema);
      await service.createResourceClass(name, true);
      return reply.code(201).header('location', location(request, `/resource_classes/${name}`)).send(EMPTY);
    },
  });

  route(app, {
    method: 'GET', url: '/resource_classes/:name', since: 2,
    schema: doc('Show a resource class', { params: S.ResourceClassShowParams, response: { 200: S.ResourceClassSchema, ...errors } }),
    handler: async (request, reply) => {
      const name = param(request, 'name');
      if (!service.model.resourceClasses.has(name)) throw notFound(`No such resource class ${name}.`);
      cacheHeaders(request, reply, ctx.now());
      return resourceClassBody(name);
    },
  });

  route(app, {
    method: 'PUT', url: '/resource_classes/:name', since: 2, json: (mv) => mv < 7,
    schema: doc('Create a CUSTOM_ resource class: 201 created, 204 existed (1.2–1.6: rename it, body {"name": "CUSTOM_NEW"}, 200)', {
      params: S.ResourceClassParams, response: { 201: S.noContent('Created'), 204: S.noContent('Existed'), ...errors },
    }),
    handler: async (request, reply) => {
      const name = param(request, 'name');
      if (request.placementMv < 7) {
        const { name: to } = jsonBody(request, S.ResourceClassCreateSchema);
        await service.renameResourceClass(name, to);
        return resourceClassBody(to);
      }
      validateWith(S.ResourceClassCreateSchema, { name });
      const created = await service.createResourceClass(name, false);
      reply.header('location', location(request, `/resource_classes/${name}`));
      return reply.code(created ? 201 : 204).send(EMPTY);
    },
  });

  route(app, {
    method: 'DELETE', url: '/resource_classes/:name', since: 2,
    schema: doc('Delete a CUSTOM_ resource class', { params: S.ResourceClassParams, response: { 204: S.noContent('Deleted'), ...errors } }),
    handler: async (request, reply) => {
      await service.deleteResourceClass(param(request, 'name'));
      return reply.code(204).send(EMPTY);
    },
  });
};
