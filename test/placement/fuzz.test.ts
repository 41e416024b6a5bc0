// fast-check fuzz of the Placement routes: random paths, bodies and query strings never produce a 5xx, errors
// always come in Placement's shape, and a refused request leaves the state as it was.
import fc from 'fast-check';
import type { FastifyInstance } from 'fastify';
import t from 'tap';
import { build } from '../helper.ts';
import { call, createProviders, u } from './fixtures.ts';

const RP = u('fuzz-rp');
const CHILD = u('fuzz-child');
const CONSUMER = u('fuzz-consumer');

async function snapshot(app: FastifyInstance): Promise<string> {
  const parts: unknown[] = [];
  const rps = (await call(app, 'GET', '/resource_providers')).body.resource_providers as Array<{ uuid: string }>;
  parts.push(rps);
  for (const p of rps) {
    for (const sub of ['inventories', 'traits', 'aggregates', 'usages', 'allocations']) {
      parts.push((await call(app, 'GET', `/resource_providers/${p.uuid}/${sub}`)).body);
    }
  }
  parts.push((await call(app, 'GET', '/traits?name=startswith:CUSTOM_')).body);
  parts.push((await call(app, 'GET', '/resource_classes')).body);
  parts.push((await call(app, 'GET', `/allocations/${CONSUMER}`)).body);
  parts.push((await call(app, 'GET', `/aggregates/${u('agg')}/metadata`)).body);
  return JSON.stringify(parts);
}

const segment = fc.oneof(
  fc.constantFrom(RP, CHILD, CONSUMER, 'VCPU', 'CUSTOM_X', 'HW_CPU_X86_AVX2', u('agg'), '%zz', '..', ''),
  fc.string({ maxLength: 12 }).map(encodeURIComponent),
);
const path = fc.oneof(
  fc.tuple(fc.constantFrom(
    '/resource_providers/{}', '/resource_providers/{}/inventories', '/resource_providers/{}/inventories/{}',
    '/resource_providers/{}/traits', '/resource_providers/{}/aggregates', '/resource_providers/{}/usages',
    '/resource_providers/{}/allocations', '/traits/{}', '/resource_classes/{}', '/allocations/{}', '/aggregates/{}/metadata',
    '/resource_providers', '/allocations', '/resource_classes', '/traits', '/usages',
  ), segment, segment).map(([tpl, a, b]) => tpl.replace('{}', a).replace('{}', b)),
);
const queryKey = fc.oneof(
  fc.constantFrom('resources', 'required', 'member_of', 'in_tree', 'limit', 'group_policy', 'root_required', 'same_subtree',
    'resources1', 'required1', 'member_of_X', 'resources_X', 'explain', 'name', 'project_id', 'associated'),
  fc.string({ maxLength: 8 }),
);
const queryValue = fc.oneof(
  fc.constantFrom('VCPU:1', 'VCPU:1,MEMORY_MB:64', 'VCPU:0', 'VCPU:x', 'CUSTOM_GOLD', '!CUSTOM_GOLD', 'in:A,B', '!in:',
    `in:${u('agg')}`, `!${u('agg')}`, RP, 'isolate', 'none', '_X', '_X,', '1', '0', 'true', 'startswith:C', ''),
  fc.string({ maxLength: 16 }),
);
const query = fc.array(fc.tuple(queryKey, queryValue), { maxLength: 5 })
  .map((pairs) => pairs.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&'));
const body = fc.oneof(
  fc.constant(undefined),
  fc.json({ maxDepth: 3 }),
  fc.string({ maxLength: 20 }),
  fc.record({
    resource_provider_generation: fc.oneof(fc.integer({ min: -1, max: 3 }), fc.string()),
    inventories: fc.dictionary(fc.constantFrom('VCPU', 'CUSTOM_NOPE', 'DISK_GB'), fc.record({ total: fc.integer({ min: -2, max: 5 }), reserved: fc.integer({ min: -1, max: 6 }) })),
    traits: fc.array(fc.constantFrom('CUSTOM_NOPE', 'HW_CPU_X86_AVX2', '')),
    aggregates: fc.array(fc.constantFrom(u('agg'), 'not-a-uuid')),
  }, { requiredKeys: [] }).map((o) => JSON.stringify(o)),
  fc.record({
    allocations: fc.dictionary(fc.constantFrom(RP, CHILD, u('ghost'), 'bad'), fc.record({ resources: fc.dictionary(fc.constantFrom('VCPU', 'DISK_GB', 'CUSTOM_NOPE'), fc.integer({ min: -1, max: 50 })) })),
    consumer_generation: fc.oneof(fc.constant(null), fc.integer({ min: 0, max: 3 })),
    project_id: fc.constantFrom('p', ''), user_id: fc.constant('u'),
  }, { requiredKeys: [] }).map((o) => JSON.stringify(o)),
);

t.test('fuzz: never a 5xx, always Placement error shape, refused requests change nothing', async (t) => {
  const app = await build(t);
  await createProviders(app, [
    { uuid: RP, inventories: { VCPU: 8, DISK_GB: 100 }, traits: ['CUSTOM_GOLD'], aggregates: [u('agg')] },
    { uuid: CHILD, parent: RP, inventories: { VCPU: 4 } },
  ]);
  await call(app, 'PUT', `/allocations/${CONSUMER}`, {
    allocations: { [RP]: { resources: { VCPU: 2 } } }, consumer_generation: null, project_id: 'p', user_id: 'u',
  });
  let baseline = await snapshot(app);
  await fc.assert(fc.asyncProperty(
    fc.constantFrom('GET', 'PUT', 'POST', 'DELETE'), path, query, body, fc.constantFrom('application/json', 'text/plain', undefined),
    fc.constantFrom('placement 1.39', 'placement 1.0', 'placement 1.25', 'placement 2.0', 'placement x', undefined), fc.boolean(),
    async (method, p, q, b, contentType, version, candidates) => {
      const headers: Record<string, string> = {};
      if (contentType && b !== undefined) headers['content-type'] = contentType;
      if (version) headers['openstack-api-version'] = version;
      const url = method === 'GET' && candidates ? `/allocation_candidates?${q}` : `${p}${q ? `?${q}` : ''}`;
      const res = await app.inject({ method, url, headers, ...(b !== undefined ? { payload: b } : {}) });
      if (res.statusCode >= 500) throw new Error(`${method} ${url} ${b} → ${res.statusCode} ${res.body}`);
      if (res.statusCode >= 400) {
        const parsed = JSON.parse(res.body) as { errors?: Array<Record<string, unknown>>; type?: string };
        const isPlacementRoute = res.headers['openstack-api-version'] !== undefined;
        if (isPlacementRoute) {
          const e = parsed.errors?.[0];
          if (!e || e.status !== res.statusCode || typeof e.title !== 'string' || typeof e.detail !== 'string' || typeof e.request_id !== 'string') {
            throw new Error(`not Placement's error shape: ${method} ${url} → ${res.body}`);
          }
        }
        if (method !== 'GET') {
          const now = await snapshot(app);
          if (now !== baseline) throw new Error(`refused ${method} ${url} ${b} changed the state`);
        }
      } else if (method !== 'GET') {
        baseline = await snapshot(app);
      }
    },
  ), { numRuns: 400, seed: 20261130 });
  t.pass('fuzz completed');
});
