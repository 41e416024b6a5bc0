// The OpenAPI 3.1 document generated from the routes' zod schemas, served at /openapi.json, and Swagger UI at /docs.
import helmet from '@fastify/helmet';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import { jsonSchemaTransform, jsonSchemaTransformObject } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Config } from '../config.ts';
import { effectiveAccess, lookupRule, UNLISTED_ROUTE } from './roles.ts';

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
function parameterSchemaToJson(schema: z.ZodType): Json {
  const json = z.toJSONSchema(schema, { io: 'input', target: 'draft-2020-12', unrepresentable: 'any' }) as Json;
  return inlineDefs(json, (json.$defs ?? {}) as Record<string, unknown>) as Json;
}

/** The two ways to send a token, as the document declares them (Swagger UI's Authorize dialog offers both). */
const SECURITY_SCHEMES = {
  bearerAuth: { type: 'http', scheme: 'bearer', description: '`Authorization: Bearer TOKEN`: a Berth token or a JWT' },
  authToken: { type: 'apiKey', in: 'header', name: 'X-Auth-Token', description: '`X-Auth-Token: TOKEN`, as OpenStack clients send it' },
} as const;
const TOKEN_REQUIRED: Array<Record<string, string[]>> = [{ bearerAuth: [] }, { authToken: [] }];

/** Each operation's role from the role table: in its description, and whether it needs a token at all. */
function accessDoc(method: string, url: string, config: Pick<Config, 'metrics_require_auth'>): { note: string; open: boolean } {
  const rule = lookupRule(method, url)?.rule ?? UNLISTED_ROUTE;
  const access = effectiveAccess(rule, config);
  if (access === 'open') {
    const unless = rule.openUnless ? ` (with ${rule.openUnless}=true: requires role ${rule.access})` : '';
    return { note: `Open: no token needed${unless}.`, open: true };
  }
  if (access === 'authenticated') return { note: 'Requires a token (any role).', open: false };
  return { note: `Requires role: ${access}.`, open: false };
}

function makeTransform(config: Pick<Config, 'metrics_require_auth'>): typeof jsonSchemaTransform {
  return (document) => {
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
    const method = [document.route.method].flat()[0]!;
    const { note, open } = accessDoc(method, document.route.url, config);
    out.description = typeof out.description === 'string' ? `${out.description}\n\n${note}` : note;
    out.security = open ? [] : TOKEN_REQUIRED;
    return { ...result, schema: out as typeof result.schema };
  };
}

/**
 * The content-security policy of Swagger UI's pages: its own scripts and styles only, its logo is a data: image,
 * "Try it out" calls this origin. No upgrade-insecure-requests: Berth serves plain HTTP unless TLS is configured.
 */
const DOCS_CSP = {
  defaultSrc: ["'self'"],
  baseUri: ["'self'"],
  connectSrc: ["'self'"],
  fontSrc: ["'self'", 'data:'],
  formAction: ["'self'"],
  frameAncestors: ["'none'"],
  imgSrc: ["'self'", 'data:'],
  objectSrc: ["'none'"],
  scriptSrc: ["'self'"],
  scriptSrcAttr: ["'none'"],
  // The one inline <style> Swagger UI renders: its top-bar logo (swagger-ui-standalone-preset.js). A new UI version
  // that changes it shows up as a violation in test/browser/swagger-ui.test.ts.
  styleSrc: ["'self'", "'sha256-RL3ie0nH+Lzz2YNqQN83mnU0J1ot4QL7b99vMdIX99w='"],
  upgradeInsecureRequests: null,
};

const OPENAPI_INFO = {
  title: 'Berth',
  version: '0.1.0',
  description:
    'A scheduler microservice: volumes onto storage pools (Cinder), compute requests onto resource providers ' +
    '(Placement), volume replicas onto node disks (Longhorn). Every scheduling route takes `explain=true` ' +
    '(the filter and weigher trace) and `dry_run=true` (decide, claim nothing). With tokens configured every ' +
    'operation but the open ones needs a token (Authorization: Bearer or X-Auth-Token) holding the role its ' +
    'description names; roles are reader, reporter and scheduler (each including reader) and admin (everything).',
};

/** Must be registered before any route so that every route lands in the document. */
export async function registerOpenApi(app: FastifyInstance): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: OPENAPI_INFO,
      components: { securitySchemes: SECURITY_SCHEMES },
      security: TOKEN_REQUIRED,
      tags: [
        { name: 'volumes', description: 'Volumes onto storage pools (OpenStack Cinder scheduler)' },
        { name: 'placement', description: 'Compute requests onto resource providers (OpenStack Placement 1.39)' },
        { name: 'replicas', description: 'Volume replicas onto node disks (Longhorn replica scheduler)' },
        { name: 'operations', description: 'Health, readiness and metrics' },
        { name: 'console', description: 'The console at /console and the read routes it calls: the fleet as capacity bars, the latest decisions' },
      ],
    },
    transform: makeTransform(app.berth.config),
    transformObject: jsonSchemaTransformObject,
  });
  // Security headers on Swagger UI's pages only (helmet in the same encapsulated scope as the UI's routes).
  await app.register(async (docs) => {
    await docs.register(helmet, { contentSecurityPolicy: { useDefaults: false, directives: DOCS_CSP }, frameguard: { action: 'deny' } });
    await docs.register(swaggerUi, { routePrefix: '/docs', uiConfig: { persistAuthorization: false } });
  });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
}
