// Swagger UI's "Try it out" works on every operation as shipped: this walks the COMMITTED openapi/openapi.json and
// executes every operation with its examples (path, query and header parameters, request body), in an order that
// works on an empty server, against a fresh app, expecting the first documented 2xx status. An operation without
// the examples it needs fails here.
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import t from 'tap';
import { build } from '../helper.ts';

type Json = Record<string, unknown>;
interface Parameter { in: string; name: string; required?: boolean; example?: unknown; examples?: Record<string, { value: unknown }>; schema?: Json }
interface Operation { tags?: string[]; parameters?: Parameter[]; requestBody?: { content: Record<string, Media> }; responses: Record<string, { content?: Record<string, Media> }> }
interface Media { schema?: Json; example?: unknown; examples?: Record<string, { value: unknown }> }

const root = resolve(import.meta.dirname, '..', '..');
const doc = JSON.parse(readFileSync(join(root, 'openapi', 'openapi.json'), 'utf8')) as {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Json> };
};

/** Report, then schedule; a provider, then inventories, candidates and a claim; a node, then replicas; deletes last. */
const ORDER = [
  'GET /healthz', 'GET /readyz', 'GET /metrics',

  'PUT /backends/{host}', 'GET /backends', 'GET /pools', 'POST /volumes/schedule', 'POST /volumes/headroom', 'POST /volumes/simulate', 'GET /volumes', 'GET /volumes/{id}',
  'GET /volume/', 'GET /volume/v3/{project_id}/scheduler-stats/get_pools',

  // Placement: each example carries the provider generation the one before it leaves.
  'GET /',
  'POST /resource_providers', 'GET /resource_providers', 'GET /resource_providers/{uuid}', 'PUT /resource_providers/{uuid}',
  'PUT /resource_providers/{uuid}/inventories', 'POST /resource_providers/{uuid}/inventories',
  'GET /resource_providers/{uuid}/inventories', 'GET /resource_providers/{uuid}/inventories/{resource_class}',
  'PUT /resource_providers/{uuid}/inventories/{resource_class}', 'DELETE /resource_providers/{uuid}/inventories/{resource_class}',
  'PUT /traits/{name}', 'GET /traits', 'GET /traits/{name}',
  'PUT /resource_providers/{uuid}/traits', 'GET /resource_providers/{uuid}/traits',
  'PUT /resource_providers/{uuid}/aggregates', 'GET /resource_providers/{uuid}/aggregates',
  'GET /resource_classes', 'POST /resource_classes', 'GET /resource_classes/{name}', 'PUT /resource_classes/{name}',
  'PUT /aggregates/{uuid}/metadata', 'GET /aggregates/{uuid}/metadata',
  'GET /allocation_candidates', 'GET /headroom', 'PUT /allocations/{consumer_uuid}', 'GET /allocations/{consumer_uuid}', 'POST /allocations',
  'GET /resource_providers/{uuid}/allocations', 'GET /resource_providers/{uuid}/usages', 'GET /usages', 'POST /reshaper',

  'PUT /nodes/{name}', 'GET /nodes', 'GET /nodes/{name}', 'GET /replicas/settings', 'PUT /replicas/settings',
  'POST /replicas/schedule', 'POST /replicas/headroom', 'POST /replicas/simulate', 'GET /replicas', 'GET /replicas/{name}',

  // The console reads what the decisions above left.
  'GET /console/', 'GET /console/api/fleet', 'GET /console/api/decisions', 'GET /console/api/decisions/{id}',

  // Runtime settings last: a changed ratio must not move the examples above.
  'GET /settings/{dialect}', 'PUT /settings/{dialect}', 'GET /settings/{dialect}/history',

  'DELETE /allocations/{consumer_uuid}', 'DELETE /resource_providers/{uuid}/traits', 'DELETE /traits/{name}',
  'DELETE /resource_classes/{name}', 'DELETE /resource_providers/{uuid}/inventories', 'DELETE /resource_providers/{uuid}',
  'DELETE /replicas/{name}', 'DELETE /nodes/{name}', 'DELETE /volumes/{id}', 'DELETE /backends/{host}',
];

function operation(key: string): Operation | undefined {
  const [method, path] = key.split(' ') as [string, string];
  return doc.paths[path]?.[method.toLowerCase()];
}

function resolveRef(schema: Json | undefined): Json | undefined {
  const ref = schema?.$ref;
  if (typeof ref !== 'string') return schema;
  return doc.components.schemas[ref.replace('#/components/schemas/', '')];
}

/** The example Swagger UI shows for a body or response: the media type's, else the schema's. */
function mediaExample(media: Media | undefined): { found: boolean; value?: unknown } {
  if (!media) return { found: false };
  if (media.example !== undefined) return { found: true, value: media.example };
  const named = media.examples && Object.values(media.examples)[0];
  if (named) return { found: true, value: named.value };
  const schema = resolveRef(media.schema);
  if (Array.isArray(schema?.examples) && schema.examples.length > 0) return { found: true, value: schema.examples[0] };
  if (schema?.example !== undefined) return { found: true, value: schema.example };
  return { found: false };
}

function parameterExample(p: Parameter): { found: boolean; value?: unknown } {
  if (p.example !== undefined) return { found: true, value: p.example };
  const named = p.examples && Object.values(p.examples)[0];
  if (named) return { found: true, value: named.value };
  if (p.schema?.example !== undefined) return { found: true, value: p.schema.example };
  if (Array.isArray(p.schema?.examples) && p.schema.examples.length > 0) return { found: true, value: p.schema.examples[0] };
  return { found: false };
}

export interface Planned {
  url: string;
  headers: Record<string, string>;
  body?: unknown;
  status: number;
  responseExample?: unknown;
  problems: string[];
}

/** The request Try it out sends with the examples, and what the document says should come back. */
export function plan(path: string, op: Operation): Planned {
  const problems: string[] = [];
  let url = path;
  const query = new URLSearchParams();
  const headers: Record<string, string> = {};
  for (const p of op.parameters ?? []) {
    const ex = parameterExample(p);
    if (p.in === 'path') {
      if (!ex.found) problems.push(`path parameter ${p.name} has no example`);
      url = url.replace(`{${p.name}}`, encodeURIComponent(String(ex.value)));
    } else if (ex.found && p.in === 'query') {
      query.append(p.name, String(ex.value));
    } else if (ex.found && p.in === 'header') {
      headers[p.name] = String(ex.value);
    } else if (p.required && !ex.found) {
      problems.push(`required ${p.in} parameter ${p.name} has no example`);
    }
  }
  if ([...query].length > 0) url += `?${query}`;
  const planned: Planned = { url, headers, status: 0, problems };
  if (op.requestBody) {
    const ex = mediaExample(op.requestBody.content['application/json']);
    if (!ex.found) problems.push('the request body has no example');
    else {
      planned.body = ex.value;
      headers['content-type'] = 'application/json';
    }
  }
  // The first 2xx; an operation whose success is a 300 (Cinder's versions document) has no 2xx.
  const statuses = Object.keys(op.responses).sort();
  const success = statuses.filter((s) => /^2\d\d$/.test(s));
  if (success.length === 0) success.push(...statuses.filter((s) => s === '300'));
  if (success.length === 0) problems.push('no 2xx response is documented');
  planned.status = Number(success[0]);
  const response = op.responses[success[0]!];
  // A JSON body needs an example; an empty answer (204, Placement's 201 with a Location) or a page does not.
  const json = response?.content?.['application/json'];
  if (json) {
    const ex = mediaExample(json);
    if (!ex.found) problems.push(`the ${planned.status} response has no example`);
    else planned.responseExample = ex.value;
  }
  return planned;
}

t.test('the document and the order list name the same operations', async (t) => {
  const inDoc = Object.entries(doc.paths).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`));
  t.same([...inDoc].sort(), [...ORDER].sort(), 'every documented operation has its place in ORDER (add new ones there)');
});

t.test('every operation answers its first documented 2xx with its own examples, in order, on a fresh app', async (t) => {
  const app = await build(t);
  let executed = 0;
  for (const key of ORDER) {
    const [method, path] = key.split(' ') as [string, string];
    const op = operation(key);
    if (!op) continue;
    const p = plan(path, op);
    t.same(p.problems, [], `${key}: has the examples Try it out needs`);
    // Without the header Placement answers at 1.0, where most of its operations do not exist yet.
    if (op.tags?.includes('placement')) t.equal(p.headers['openstack-api-version'], 'placement 1.39', `${key}: the microversion header is pre-filled`);
    if (p.problems.length > 0) continue;
    const res = await app.inject({
      method: method as 'GET', url: p.url, headers: p.headers,
      ...(p.body === undefined ? {} : { payload: JSON.stringify(p.body) }),
    });
    t.equal(res.statusCode, p.status, `${key} → ${p.status} (${p.url}): ${res.body.slice(0, 300)}`);
    if (p.responseExample && typeof p.responseExample === 'object' && !Array.isArray(p.responseExample) && res.statusCode === p.status) {
      const body = res.json() as Json;
      const missing = Object.keys(p.responseExample).filter((k) => !(k in body));
      t.same(missing, [], `${key}: the response example shows only fields the answer has`);
    }
    executed++;
  }
  t.equal(executed, ORDER.length, 'every operation ran');
});

t.test('the walk refuses an operation without examples', async (t) => {
  const bare = plan('/things/{id}', {
    parameters: [{ in: 'path', name: 'id', required: true, schema: { type: 'string' } }],
    requestBody: { content: { 'application/json': { schema: { type: 'object' } } } },
    responses: { 200: { content: { 'application/json': { schema: { type: 'object' } } } } },
  });
  t.same(bare.problems, ['path parameter id has no example', 'the request body has no example', 'the 200 response has no example']);
  const ok = plan('/things/{id}', {
    parameters: [{ in: 'path', name: 'id', required: true, schema: { type: 'string', example: 'a b' } }, { in: 'query', name: 'q', schema: { example: 'x' } }],
    requestBody: { content: { 'application/json': { schema: { type: 'object', examples: [{ n: 1 }] } } } },
    responses: { 201: { content: { 'application/json': { example: { n: 1 } } } }, 204: {} },
  });
  t.same(ok, { url: '/things/a%20b?q=x', headers: { 'content-type': 'application/json' }, body: { n: 1 }, status: 201, responseExample: { n: 1 }, problems: [] });
});
