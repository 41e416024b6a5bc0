// The OpenAPI 3.1 document generated from the routes' zod schemas, served at /openapi.json, and Swagger UI at /docs.
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import { jsonSchemaTransform, jsonSchemaTransformObject } from 'fastify-type-provider-zod';

export const OPENAPI_INFO = {
  title: 'Berth',
  version: '0.1.0',
  description:
    'A scheduler microservice: volumes onto storage pools (Cinder), compute requests onto resource providers ' +
    '(Placement), volume replicas onto node disks (Longhorn). Every scheduling route takes `explain=true` ' +
    '(the filter and weigher trace) and `dry_run=true` (decide, claim nothing).',
};

/** Must be registered before any route so that every route lands in the document. */
export async function registerOpenApi(app: FastifyInstance): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: OPENAPI_INFO,
      tags: [
        { name: 'volumes', description: 'Volumes onto storage pools (OpenStack Cinder scheduler)' },
        { name: 'placement', description: 'Compute requests onto resource providers (OpenStack Placement 1.39)' },
        { name: 'replicas', description: 'Volume replicas onto node disks (Longhorn replica scheduler)' },
        { name: 'operations', description: 'Health, readiness and metrics' },
      ],
    },
    transform: jsonSchemaTransform,
    transformObject: jsonSchemaTransformObject,
  });
  await app.register(swaggerUi, { routePrefix: '/docs' });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
}
