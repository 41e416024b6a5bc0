// Every Placement operation of the committed OpenAPI document, executed with its own examples (path, query and
// header parameters, request body) against a fresh app in the order a Swagger UI user would follow: create a
// provider → inventories → traits, aggregates, resource classes → allocation candidates → allocations → usages →
// deletions. Each must answer its documented success status, with the keys of its documented response example.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { build } from '../helper.ts';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const doc = JSON.parse(readFileSync(join(import.meta.dirname, '..', '..', 'openapi', 'openapi.json'), 'utf8')) as Json;

const ORDER: Array<[string, string]> = [
  ['GET', '/'],
  ['POST', '/resource_providers'],
  ['GET', '/resource_providers'],
  ['GET', '/resource_providers/{uuid}'],
  ['PUT', '/resource_providers/{uuid}'],
  ['PUT', '/resource_providers/{uuid}/inventories'],
  ['POST', '/resource_providers/{uuid}/inventories'],
  ['GET', '/resource_providers/{uuid}/inventories'],
  ['GET', '/resource_providers/{uuid}/inventories/{resource_class}'],
  ['PUT', '/resource_providers/{uuid}/inventories/{resource_class}'],
  ['DELETE', '/resource_providers/{uuid}/inventories/{resource_class}'],
  ['PUT', '/traits/{name}'],
  ['GET', '/traits'],
  ['GET', '/traits/{name}'],
  ['PUT', '/resource_providers/{uuid}/traits'],
  ['GET', '/resource_providers/{uuid}/traits'],
  ['PUT', '/resource_providers/{uuid}/aggregates'],
  ['GET', '/resource_providers/{uuid}/aggregates'],
  ['GET', '/resource_classes'],
  ['POST', '/resource_classes'],
  ['GET', '/resource_classes/{name}'],
  ['PUT', '/resource_classes/{name}'],
  ['PUT', '/aggregates/{uuid}/metadata'],
  ['GET', '/aggregates/{uuid}/metadata'],
  ['GET', '/allocation_candidates'],
  ['PUT', '/allocations/{consumer_uuid}'],
  ['GET', '/allocations/{consumer_uuid}'],
  ['POST', '/allocations'],
  ['GET', '/resource_providers/{uuid}/allocations'],
  ['GET', '/resource_providers/{uuid}/usages'],
  ['GET', '/usages'],
  ['POST', '/reshaper'],
  ['DELETE', '/allocations/{consumer_uuid}'],
  ['DELETE', '/resource_providers/{uuid}/traits'],
  ['DELETE', '/traits/{name}'],
  ['DELETE', '/resource_classes/{name}'],
  ['DELETE', '/resource_providers/{uuid}/inventories'],
  ['DELETE', '/resource_providers/{uuid}'],
];

const resolve = (schema: Json | undefined): Json | undefined =>
  schema?.$ref ? doc.components.schemas[(schema.$ref as string).split('/').pop()!] : schema;

const placementOps = Object.entries(doc.paths as Json)
  .flatMap(([path, ops]) => Object.entries(ops as Json).map(([method, op]) => ({ method: method.toUpperCase(), path, op: op as Json })))
  .filter(({ op }) => (op.tags as string[] | undefined)?.includes('placement'));

t.test('the walk covers every Placement operation of the document, once', async (t) => {
  const inDoc = placementOps.map(({ method, path }) => `${method} ${path}`).sort();
  t.same([...ORDER.map(([m, p]) => `${m} ${p}`)].sort(), inDoc);
});

t.test("every Placement operation succeeds with its documented examples, in a newcomer's order", async (t) => {
  const app = await build(t);
  for (const [method, path] of ORDER) {
    const { op } = placementOps.find((o) => o.method === method && o.path === path)!;
    const label = `${method} ${path}`;
    const params = (op.parameters ?? []) as Json[];
    const example = (p: Json) => p.example ?? p.schema?.example;
    let url = path;
    const query: string[] = [];
    const headers: Record<string, string> = {};
    for (const p of params) {
      const value = example(p);
      if (p.in === 'path') {
        t.ok(value !== undefined, `${label}: path parameter ${p.name} has an example`);
        url = url.replace(`{${p.name}}`, encodeURIComponent(String(value)));
      } else if (p.in === 'query' && value !== undefined) {
        query.push(`${encodeURIComponent(p.name)}=${encodeURIComponent(String(value))}`);
      } else if (p.in === 'header' && value !== undefined) {
        headers[p.name] = String(value);
      }
    }
    t.equal(headers['openstack-api-version'], 'placement 1.39', `${label}: the microversion header is pre-filled`);
    const bodySchema = resolve(op.requestBody?.content?.['application/json']?.schema);
    let payload: string | undefined;
    if (bodySchema) {
      t.ok(bodySchema.examples?.length, `${label}: the request body has an example`);
      payload = JSON.stringify(bodySchema.examples[0]);
      headers['content-type'] = 'application/json';
    }
    const success = Object.keys(op.responses).map(Number).filter((s) => s >= 200 && s < 300).sort((a, b) => a - b);
    t.ok(success.length > 0, `${label}: a success status is documented`);
    const res = await app.inject({ method: method as 'GET', url: query.length ? `${url}?${query.join('&')}` : url, headers, ...(payload ? { payload } : {}) });
    t.equal(res.statusCode, success[0], `${label}: ${res.statusCode} ${res.body.slice(0, 300)}`);
    const responseSchema = resolve(op.responses[String(success[0])]?.content?.['application/json']?.schema);
    if (responseSchema && res.body) {
      t.ok(responseSchema.examples?.length, `${label}: the response has an example`);
      const body = JSON.parse(res.body) as Json;
      for (const key of Object.keys(responseSchema.examples[0] as Json)) {
        t.ok(key in body, `${label}: the answer has the example's key ${key}`);
      }
    }
  }
});
