// The OpenAPI 3.1 document generated from the routes' zod schemas, served at /openapi.json, and Swagger UI at /docs.
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import { jsonSchemaTransform, jsonSchemaTransformObject } from 'fastify-type-provider-zod';
import { z } from 'zod';

type Json = Record<string, unknown>;

/** Replaces `{"$ref": "#/$defs/X"}` by the definition itself, recursively (parameter schemas are never cyclic). */
function inlineDefs(node: unknown, defs: Record<string, unknown>, depth = 0): unknown {
  if (depth > 32 || node === null || typeof node !== 'object') return node;
  if (Array.isArray(node)) return node.map((n) => inlineDefs(n, defs, depth + 1));
  const obj = node as Json;
  if (typeof obj.$ref === 'string' && obj.$ref.startsWith('#/$defs/')) {
    const { $ref, ...siblings } = obj;
    return { ...(inlineDefs(defs[$ref.slice('#/$defs/'.length)], defs, depth + 1) as Json), ...siblings };
  }
  const out: Json = {};
  for (const [k, v] of Object.entries(obj)) if (k !== '$defs' && k !== '$schema') out[k] = inlineDefs(v, defs, depth + 1);
  return out;
}

/**
 * @fastify/swagger expands querystring, params and headers schemas into individual parameters and cannot follow a
 * `$ref` to a component there; a zod schema registered with `.meta({id})` would become one. Those three are
 * converted inline instead; bodies and responses keep their named components.
 */
export function parameterSchemaToJson(schema: z.ZodType): Json {
  const json = z.toJSONSchema(schema, { io: 'input', target: 'draft-2020-12', unrepresentable: 'any' }) as Json;
  return inlineDefs(json, (json.$defs ?? {}) as Record<string, unknown>) as Json;
}

const transform: typeof jsonSchemaTransform = (document) => {
  const schema = document.schema as Json | undefined;
  if (!schema) return jsonSchemaTransform(document);
  const { querystring, params, headers, ...rest } = schema;
  const result = jsonSchemaTransform({ ...document, schema: rest } as typeof document);
  if (result.schema?.hide) return result;
  const parameters = { querystring, params, headers };
  const out = { ...(result.schema as Json) };
  for (const [key, value] of Object.entries(parameters)) {
    if (value instanceof z.ZodType) out[key] = parameterSchemaToJson(value);
    else if (value !== undefined) out[key] = value;
  }
  return { ...result, schema: out as typeof result.schema };
};

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
        { name: 'console', description: 'The console at /console and the read routes it calls: the fleet as capacity bars, the latest decisions' },
      ],
    },
    transform,
    transformObject: jsonSchemaTransformObject,
  });
  await app.register(swaggerUi, { routePrefix: '/docs' });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
}
