// The Placement-compatible HTTP routes (Placement 8, microversion ≤ 1.39) plus Nova's aggregate metadata, as an
// encapsulated Fastify plugin with Placement's own error shape.
import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Counter, Gauge } from 'prom-client';
import type { BerthContext } from '../http/context.ts';
import { zodApp } from '../http/context.ts';
import { classifyError } from '../http/problem.ts';
import { capacity } from './capacity.ts';
import { findCandidates, type Candidate } from './candidates.ts';
import { badRequest, errorBody, notFound, PlacementError } from './errors.ts';
import { isolatedAggregates, requiredTraitsOf, type IsolatedAggregate } from './isolate.ts';
import { formatVersion, MAX_VERSION, MIN_VERSION, parseMicroversion } from './microversion.ts';
import type { PlacementModel, Provider } from './model.ts';
import { isUuidLike, parseAllocationCandidatesQuery, parseResources, type QueryPairs } from './query.ts';
import * as S from './schemas.ts';
import { PlacementService } from './service.ts';

declare module 'fastify' {
  interface FastifyRequest {
    placementMv: number;
    placementRequestId: string;
  }
}

/** webob-style query parsing: pairs in order, '+' is a space, bad %-escapes are kept as they are. */
export function queryPairs(url: string): Array<[string, string]> {
  const q = url.indexOf('?');
  if (q < 0) return [];
  const decode = (s: string) => {
    const spaced = s.replace(/\+/g, ' ');
    try {
      return decodeURIComponent(spaced);
    } catch {
      return spaced.replace(/%([0-9a-fA-F]{2})/g, (_m, h: string) => String.fromCharCode(parseInt(h, 16)));
    }
  };
  const out: Array<[string, string]> = [];
  for (const part of url.slice(q + 1).split('&')) {
    if (part === '') continue;
    const eq = part.indexOf('=');
    out.push(eq < 0 ? [decode(part), ''] : [decode(part.slice(0, eq)), decode(part.slice(eq + 1))]);
  }
  return out;
}

const isTrue = (pairs: QueryPairs, key: string) => pairs.some(([k, v]) => k === key && ['true', '1', 'yes'].includes(v.toLowerCase()));

function links(uuid: string) {
  const base = `/resource_providers/${uuid}`;
  return [
    { href: base, rel: 'self' },
    { href: `${base}/aggregates`, rel: 'aggregates' },
    { href: `${base}/inventories`, rel: 'inventories' },
    { href: `${base}/usages`, rel: 'usages' },
    { href: `${base}/traits`, rel: 'traits' },
    { href: `${base}/allocations`, rel: 'allocations' },
  ];
}

export function providerBody(p: Provider) {
  return {
    generation: p.generation, links: links(p.uuid), name: p.name, uuid: p.uuid,
    parent_provider_uuid: p.parent?.uuid ?? null, root_provider_uuid: p.root.uuid,
  };
}

function inventoriesBody(p: Provider) {
  return { inventories: Object.fromEntries(p.inventories), resource_provider_generation: p.generation };
}

function usagesOf(p: Provider): Record<string, number> {
  const usages: Record<string, number> = {};
  for (const rc of p.inventories.keys()) usages[rc] = p.used.get(rc) ?? 0;
  for (const [rc, n] of p.used) if (n > 0) usages[rc] = n;
  return usages;
}

/** The response of GET /allocation_candidates at microversion `mv`, as an object (tests and small answers). */
export function candidatesBody(model: PlacementModel, candidates: readonly Candidate[], mv: number) {
  return JSON.parse(candidatesJson(model, candidates, mv)) as {
    allocation_requests: Array<Record<string, unknown>>;
    provider_summaries: Record<string, Record<string, unknown>>;
  };
}

/** Provider summaries change only with the provider's generation (inventories, traits, allocations all bump it). */
const summaryCache = new WeakMap<Provider, { generation: number; band: number; json: string }>();

function summaryJson(p: Provider, mv: number): string {
  const band = mv >= 29 ? 2 : mv >= 17 ? 1 : 0;
  const cached = summaryCache.get(p);
  if (cached && cached.generation === p.generation && cached.band === band) return cached.json;
  const resources: Record<string, { capacity: number; used: number }> = {};
  for (const [rc, inv] of p.inventories) resources[rc] = { capacity: capacity(inv), used: p.used.get(rc) ?? 0 };
  const summary: Record<string, unknown> = { resources };
  if (band >= 1) summary.traits = [...p.traits].sort();
  if (band >= 2) {
    summary.parent_provider_uuid = p.parent?.uuid ?? null;
    summary.root_provider_uuid = p.root.uuid;
  }
  const json = JSON.stringify(summary);
  summaryCache.set(p, { generation: p.generation, band, json });
  return json;
}

/**
 * Serialises the response directly: provider uuids (hex and dashes, checked on creation), class names
 * ([A-Z0-9_]) and suffixes ([a-zA-Z0-9_-]) need no escaping, so the allocation requests are concatenated;
 * summaries come from a per-provider cache.
 */
export function candidatesJson(model: PlacementModel, candidates: readonly Candidate[], mv: number): string {
  const trees = new Set<Provider>();
  const requests: string[] = new Array(candidates.length);
  const resourcesJson = (res: Map<string, number>) => {
    let out = '';
    for (const [rc, n] of res) out += (out ? ',' : '') + `"${rc}":${n}`;
    return `{"resources":{${out}}}`;
  };
  // In the one-group, one-provider case every request carries the same resources: one fragment for all.
  let sharedFragment: string | undefined;
  candidates.forEach((c, i) => {
    if (c.single && mv >= 12) {
      const p = c.single;
      trees.add(p.root);
      sharedFragment ??= resourcesJson(c.allocations.get(p)!);
      requests[i] = mv >= 34
        ? `{"allocations":{"${p.uuid}":${sharedFragment}},"mappings":{"":["${p.uuid}"]}}`
        : `{"allocations":{"${p.uuid}":${sharedFragment}}}`;
      return;
    }
    const parts: string[] = [];
    for (const [p, res] of c.allocations) {
      trees.add(p.root);
      parts.push(mv < 12
        ? `{"resource_provider":{"uuid":"${p.uuid}"},${resourcesJson(res).slice(1, -1)}}`
        : `"${p.uuid}":${resourcesJson(res)}`);
    }
    if (mv < 12) {
      requests[i] = `{"allocations":[${parts.join(',')}]}`;
      return;
    }
    let json = `{"allocations":{${parts.join(',')}}`;
    if (mv >= 34) {
      const maps = [...c.mappings].map(([suffix, ps]) => `"${suffix}":[${ps.map((p) => `"${p.uuid}"`).join(',')}]`);
      json += `,"mappings":{${maps.join(',')}}`;
    }
    requests[i] = json + '}';
  });
  const summaries: string[] = [];
  for (const root of trees) {
    for (const p of model.treeOf(root)) summaries.push(`"${p.uuid}":${summaryJson(p, mv)}`);
  }
  return `{"allocation_requests":[${requests.join(',')}],"provider_summaries":{${summaries.join(',')}}}`;
}

function placementErrorFrom(err: unknown): PlacementError {
  if (err instanceof PlacementError) return err;
  const { problem } = classifyError(err);
  if (problem.type.endsWith('/validation')) return badRequest(`JSON does not validate: ${problem.detail}`);
  if (problem.type.endsWith('/malformed-body')) return badRequest(`Malformed JSON: ${problem.detail}`);
  if (problem.status === 415) {
    return new PlacementError(415, 'The media type is not supported, use application/json');
  }
  return new PlacementError(problem.status, problem.detail);
}

/** The service of each app (by its context), for in-process loading in the bench. */
export const placementServices = new WeakMap<BerthContext, PlacementService>();

export async function placementPlugin(app: FastifyInstance, ctx: BerthContext): Promise<void> {
  const service = new PlacementService(ctx.store);
  service.load();
  const routesDeclared: Array<{ url: string; method: string }> = [];
  app.addHook('onRoute', (route) => {
    for (const m of [route.method].flat()) routesDeclared.push({ url: route.url, method: m });
  });
  placementServices.set(ctx, service);
  const model = service.model;
  const z = zodApp(app);

  // ---- metrics: candidates returned, capacity and usage per resource class (no per-provider labels)
  const candidatesReturned = new Counter({
    name: 'berth_placement_candidates_returned_total',
    help: 'Allocation requests returned by GET /allocation_candidates',
    registers: [ctx.metrics.registry],
  });
  new Gauge({
    name: 'berth_placement_capacity',
    help: 'Capacity ((total - reserved) * allocation_ratio) summed over providers, per resource class',
    labelNames: ['resource_class'] as const,
    registers: [ctx.metrics.registry],
    collect() {
      this.reset();
      for (const [rc, t] of model.totalsByResourceClass()) this.set({ resource_class: rc }, t.capacity);
    },
  });
  new Gauge({
    name: 'berth_placement_usage',
    help: 'Allocated amounts summed over providers, per resource class',
    labelNames: ['resource_class'] as const,
    registers: [ctx.metrics.registry],
    collect() {
      this.reset();
      for (const [rc, t] of model.totalsByResourceClass()) this.set({ resource_class: rc }, t.used);
    },
  });
  new Gauge({
    name: 'berth_placement_resource_providers',
    help: 'Resource providers known to Placement',
    registers: [ctx.metrics.registry],
    collect() {
      this.set(model.providers.size);
    },
  });

  // ---- microversion, request id, headers, error shape
  app.decorateRequest('placementMv', 0);
  app.decorateRequest('placementRequestId', '');
  app.addHook('onRequest', async (request) => {
    request.placementRequestId = `req-${randomUUID()}`;
    request.placementMv = parseMicroversion(request.headers['openstack-api-version']);
  });
  app.addHook('onSend', async (request, reply, payload) => {
    // 401 and 429 come from the authentication in front of Placement (src/http/auth.ts): no microversion headers.
    if (reply.statusCode !== 401 && reply.statusCode !== 429) {
      reply.header('openstack-api-version', `placement ${formatVersion(request.placementMv ?? 0)}`);
      reply.header('vary', 'openstack-api-version');
    }
    request.placementRequestId ||= `req-${randomUUID()}`;
    reply.header('x-openstack-request-id', request.placementRequestId);
    return payload;
  });
  // Placement accepts an empty body on body-less routes (PUT /traits/{name}) whatever the content type says.
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    const text = body as string;
    if (text.trim() === '') return done(null, undefined);
    try {
      done(null, JSON.parse(text));
    } catch (e) {
      done(badRequest(`Malformed JSON: ${(e as Error).message}`), undefined);
    }
  });
  app.setErrorHandler((err: unknown, request: FastifyRequest, reply: FastifyReply) => {
    const perr = placementErrorFrom(err);
    if (perr.status >= 500) request.log.error({ err }, 'unexpected error');
    else request.log.info({ status: perr.status, detail: perr.message }, 'request refused');
    const requestId = request.placementRequestId || `req-${randomUUID()}`;
    const mv = Number.isFinite(request.placementMv) ? request.placementMv : 0;
    return reply.code(perr.status).type('application/json').send(errorBody(perr, requestId, mv >= 23));
  });

  // Bodies are built by the handlers; serialise them directly (the response schemas document, not re-validate).
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));
  const errors = {
    400: S.placementErrorResponse('Bad request (Placement error body)'),
    404: S.placementErrorResponse('Not found'),
    409: S.placementErrorResponse('Conflict (generation, capacity or in use)'),
  };
  const doc = <T extends object>(summary: string, extra: T) => ({ tags: ['placement'], summary, headers: S.PlacementHeadersSchema, ...extra });

  // ---------------------------------------------------------------- version discovery (GET /, as Placement's root)
  z.get('/', {
    schema: doc('Placement version document (microversion discovery for Placement clients)', { response: { 200: S.AnyObjectSchema } }),
  }, async () => ({
    versions: [{ id: 'v1.0', min_version: MIN_VERSION, max_version: MAX_VERSION, status: 'CURRENT', links: [{ href: '', rel: 'self' }] }],
  }));

  // ---------------------------------------------------------------- resource providers
  z.get('/resource_providers', {
    schema: doc('List resource providers (filters: name, uuid, member_of, in_tree, resources, required)', {
      querystring: S.ProvidersQuerySchema, response: { 200: S.AnyObjectSchema.describe('{"resource_providers": [...]}'), ...errors },
    }),
  }, async (request) => {
    const pairs = queryPairs(request.url);
    const allowed = new Set(['name', 'uuid', 'member_of', 'in_tree', 'resources', 'required']);
    for (const [k] of pairs) if (!allowed.has(k)) throw badRequest(`Invalid query string parameters: Additional properties are not allowed ('${k}' was unexpected)`);
    const get = (k: string) => pairs.filter(([key]) => key === k).map(([, v]) => v);
    let list = [...model.providers.values()];
    const name = get('name').at(-1);
    if (name !== undefined) list = list.filter((p) => p.name === name);
    const uuid = get('uuid').at(-1);
    if (uuid !== undefined) list = list.filter((p) => p.uuid === uuid);
    const inTree = get('in_tree').at(-1);
    if (inTree !== undefined) {
      if (!isUuidLike(inTree)) throw badRequest(`Invalid query string parameters: Expected 'in_tree' parameter to be a format of uuid. Got: ${inTree}`);
      const root = model.providers.get(inTree)?.root;
      list = root ? list.filter((p) => p.root === root) : [];
    }
    for (const value of get('member_of')) {
      const forbidden = value.startsWith('!');
      const v = forbidden ? value.slice(1) : value;
      const aggs = (v.startsWith('in:') ? v.slice(3) : v).split(',');
      for (const a of aggs) if (!isUuidLike(a)) throw badRequest(`Invalid query string parameters: Expected 'member_of' parameter to contain valid UUID(s). Got: ${a}`);
      list = list.filter((p) => aggs.some((a) => p.aggregates.has(a)) !== forbidden);
    }
    const resources = get('resources').at(-1);
    if (resources !== undefined) {
      const wanted = parseResources(resources);
      for (const rc of wanted.keys()) if (!model.resourceClasses.has(rc)) throw badRequest(`Invalid resource class in resources parameter: No such resource class ${rc}.`);
      list = list.filter((p) => [...wanted].every(([rc, n]) => {
        const inv = p.inventories.get(rc);
        return inv !== undefined && (p.used.get(rc) ?? 0) + n <= (inv.total - inv.reserved) * inv.allocation_ratio && n <= inv.max_unit && n >= inv.min_unit;
      }));
    }
    for (const value of get('required')) {
      const traits = value.split(',').map((t) => t.trim());
      for (const t of traits) {
        const name = t.replace(/^!+/, '');
        if (!model.traits.has(name)) throw badRequest(`No such trait(s): ${name}.`);
      }
      list = list.filter((p) => traits.every((t) => (t.startsWith('!') ? !p.traits.has(t.replace(/^!+/, '')) : p.traits.has(t))));
    }
    return { resource_providers: list.map(providerBody) };
  });

  z.post('/resource_providers', {
    schema: doc('Create a resource provider', { body: S.ProviderCreateSchema, response: { 200: S.AnyObjectSchema, 201: S.noContent('Created (before 1.20)'), ...errors } }),
  }, async (request, reply) => {
    const p = service.createProvider(request.body);
    reply.header('location', `/resource_providers/${p.uuid}`);
    if (request.placementMv < 20) return reply.code(201).send(undefined as never);
    return providerBody(p);
  });

  z.get('/resource_providers/:uuid', {
    schema: doc('Show a resource provider', { params: S.UuidParams, response: { 200: S.AnyObjectSchema, ...errors } }),
  }, async (request) => providerBody(service.provider(request.params.uuid)));

  z.put('/resource_providers/:uuid', {
    schema: doc('Update a resource provider (name)', { params: S.UuidParams, body: S.ProviderUpdateSchema, response: { 200: S.AnyObjectSchema, ...errors } }),
  }, async (request) => providerBody(service.updateProvider(request.params.uuid, request.body)));

  z.delete('/resource_providers/:uuid', {
    schema: doc('Delete a resource provider', { params: S.UuidParams, response: { 204: S.noContent('Deleted'), ...errors } }),
  }, async (request, reply) => {
    service.deleteProvider(request.params.uuid);
    return reply.code(204).send(undefined as never);
  });

  // ---------------------------------------------------------------- inventories
  z.get('/resource_providers/:uuid/inventories', {
    schema: doc('List inventories of a provider', { params: S.UuidParams, response: { 200: S.AnyObjectSchema, ...errors } }),
  }, async (request) => inventoriesBody(service.provider(request.params.uuid)));

  z.put('/resource_providers/:uuid/inventories', {
    schema: doc('Replace all inventories of a provider', { params: S.UuidParams, body: S.InventoriesPutSchema, response: { 200: S.AnyObjectSchema, ...errors } }),
  }, async (request) => inventoriesBody(service.setInventories(request.params.uuid, request.body.resource_provider_generation, request.body.inventories)));

  z.post('/resource_providers/:uuid/inventories', {
    schema: doc('Create one inventory', { params: S.UuidParams, body: S.InventoryPostSchema, response: { 201: S.AnyObjectSchema, ...errors } }),
  }, async (request, reply) => {
    const { resource_class: rc, resource_provider_generation: gen, ...inv } = request.body;
    const p = service.createInventory(request.params.uuid, rc, gen, inv);
    reply.code(201).header('location', `/resource_providers/${p.uuid}/inventories/${rc}`);
    return { resource_provider_generation: p.generation, ...p.inventories.get(rc) };
  });

  z.delete('/resource_providers/:uuid/inventories', {
    schema: doc('Delete all inventories of a provider', { params: S.UuidParams, response: { 204: S.noContent('Deleted'), ...errors } }),
  }, async (request, reply) => {
    service.deleteInventories(request.params.uuid);
    return reply.code(204).send(undefined as never);
  });

  z.get('/resource_providers/:uuid/inventories/:resource_class', {
    schema: doc('Show one inventory', { params: S.UuidRcParams, response: { 200: S.AnyObjectSchema, ...errors } }),
  }, async (request) => {
    const p = service.provider(request.params.uuid);
    const inv = p.inventories.get(request.params.resource_class);
    if (!inv) throw notFound(`No inventory of class ${request.params.resource_class} for ${p.uuid}`);
    return { resource_provider_generation: p.generation, ...inv };
  });

  z.put('/resource_providers/:uuid/inventories/:resource_class', {
    schema: doc('Update one inventory', { params: S.UuidRcParams, body: S.InventoryPutSchema, response: { 200: S.AnyObjectSchema, ...errors } }),
  }, async (request) => {
    const { resource_provider_generation: gen, ...inv } = request.body;
    const rc = request.params.resource_class;
    const p = service.setInventory(request.params.uuid, rc, gen, inv);
    return { resource_provider_generation: p.generation, ...p.inventories.get(rc) };
  });

  z.delete('/resource_providers/:uuid/inventories/:resource_class', {
    schema: doc('Delete one inventory (409 placement.inventory.inuse while allocated)', { params: S.UuidRcParams, response: { 204: S.noContent('Deleted'), ...errors } }),
  }, async (request, reply) => {
    service.deleteInventory(request.params.uuid, request.params.resource_class);
    return reply.code(204).send(undefined as never);
  });

  // ---------------------------------------------------------------- provider traits, aggregates, usages, allocations
  z.get('/resource_providers/:uuid/traits', {
    schema: doc('List traits of a provider', { params: S.UuidParams, response: { 200: S.AnyObjectSchema, ...errors } }),
  }, async (request) => {
    const p = service.provider(request.params.uuid);
    return { traits: [...p.traits].sort(), resource_provider_generation: p.generation };
  });

  z.put('/resource_providers/:uuid/traits', {
    schema: doc('Replace the traits of a provider', { params: S.UuidParams, body: S.ProviderTraitsPutSchema, response: { 200: S.AnyObjectSchema, ...errors } }),
  }, async (request) => {
    const p = service.setProviderTraits(request.params.uuid, request.body.resource_provider_generation, request.body.traits);
    return { traits: [...p.traits].sort(), resource_provider_generation: p.generation };
  });

  z.delete('/resource_providers/:uuid/traits', {
    schema: doc('Remove every trait of a provider', { params: S.UuidParams, response: { 204: S.noContent('Deleted'), ...errors } }),
  }, async (request, reply) => {
    service.deleteProviderTraits(request.params.uuid);
    return reply.code(204).send(undefined as never);
  });

  z.get('/resource_providers/:uuid/aggregates', {
    schema: doc('List aggregates of a provider', { params: S.UuidParams, response: { 200: S.AnyObjectSchema, ...errors } }),
  }, async (request) => {
    const p = service.provider(request.params.uuid);
    return { aggregates: [...p.aggregates].sort(), resource_provider_generation: p.generation };
  });

  z.put('/resource_providers/:uuid/aggregates', {
    schema: doc('Replace the aggregates of a provider', { params: S.UuidParams, body: S.ProviderAggregatesPutSchema, response: { 200: S.AnyObjectSchema, ...errors } }),
  }, async (request) => {
    const p = service.setProviderAggregates(request.params.uuid, request.body.resource_provider_generation, request.body.aggregates);
    return { aggregates: [...p.aggregates].sort(), resource_provider_generation: p.generation };
  });

  z.get('/resource_providers/:uuid/usages', {
    schema: doc('Usages of a provider', { params: S.UuidParams, response: { 200: S.AnyObjectSchema, ...errors } }),
  }, async (request) => {
    const p = service.provider(request.params.uuid);
    return { resource_provider_generation: p.generation, usages: usagesOf(p) };
  });

  z.get('/resource_providers/:uuid/allocations', {
    schema: doc('Allocations against a provider', { params: S.UuidParams, response: { 200: S.AnyObjectSchema, ...errors } }),
  }, async (request) => {
    const p = service.provider(request.params.uuid);
    const allocations: Record<string, { resources: Record<string, number> }> = {};
    for (const c of [...p.consumers].sort()) {
      const res = model.consumers.get(c)?.allocations.get(p.uuid);
      if (res) allocations[c] = { resources: Object.fromEntries(res) };
    }
    return { allocations, resource_provider_generation: p.generation };
  });

  // ---------------------------------------------------------------- traits and resource classes
  z.get('/traits', {
    schema: doc('List traits (name=in:A,B | startswith:X; associated=true|false)', { querystring: S.TraitsQuerySchema, response: { 200: S.AnyObjectSchema, ...errors } }),
  }, async (request) => {
    const pairs = queryPairs(request.url);
    let traits = [...model.traits];
    for (const [k, v] of pairs) {
      if (k === 'name') {
        if (v.startsWith('in:')) {
          const names = new Set(v.slice(3).split(','));
          traits = traits.filter((t) => names.has(t));
        } else if (v.startsWith('startswith:')) {
          traits = traits.filter((t) => t.startsWith(v.slice('startswith:'.length)));
        } else {
          throw badRequest(`Badly formatted name parameter. Expected name query string parameter in form: ?name=[in|startswith]:[name1,name2|prefix]. Got: "${v}"`);
        }
      } else if (k === 'associated') {
        if (v !== 'true' && v !== 'false') throw badRequest(`Invalid query string parameters: '${v}' is not one of ['true', 'false']`);
        traits = traits.filter((t) => (model.providersWithTrait(t).size > 0) === (v === 'true'));
      } else {
        throw badRequest(`Invalid query string parameters: Additional properties are not allowed ('${k}' was unexpected)`);
      }
    }
    return { traits: traits.sort() };
  });

  z.get('/traits/:name', {
    schema: doc('Check that a trait exists (204)', { params: S.NameParams, response: { 204: S.noContent('Exists'), ...errors } }),
  }, async (request, reply) => {
    if (!model.traits.has(request.params.name)) throw notFound(`No such trait(s): ${request.params.name}.`);
    return reply.code(204).send(undefined as never);
  });

  z.put('/traits/:name', {
    schema: doc('Create a CUSTOM_ trait (201 created, 204 existed)', { params: S.NameParams, response: { 201: S.noContent('Created'), 204: S.noContent('Already existed'), ...errors } }),
  }, async (request, reply) => {
    const created = service.createTrait(request.params.name);
    reply.header('location', `/traits/${request.params.name}`);
    return reply.code(created ? 201 : 204).send(undefined as never);
  });

  z.delete('/traits/:name', {
    schema: doc('Delete a CUSTOM_ trait', { params: S.NameParams, response: { 204: S.noContent('Deleted'), ...errors } }),
  }, async (request, reply) => {
    service.deleteTrait(request.params.name);
    return reply.code(204).send(undefined as never);
  });

  const rcBody = (name: string) => ({ links: [{ href: `/resource_classes/${name}`, rel: 'self' }], name });
  z.get('/resource_classes', {
    schema: doc('List resource classes', { response: { 200: S.AnyObjectSchema, ...errors } }),
  }, async () => ({ resource_classes: [...model.resourceClasses].map(rcBody) }));

  z.post('/resource_classes', {
    schema: doc('Create a CUSTOM_ resource class', { body: S.ResourceClassCreateSchema, response: { 201: S.noContent('Created'), ...errors } }),
  }, async (request, reply) => {
    service.createResourceClass(request.body.name, true);
    return reply.code(201).header('location', `/resource_classes/${request.body.name}`).send(undefined as never);
  });

  z.get('/resource_classes/:name', {
    schema: doc('Show a resource class', { params: S.NameParams, response: { 200: S.AnyObjectSchema, ...errors } }),
  }, async (request) => {
    if (!model.resourceClasses.has(request.params.name)) throw notFound(`No such resource class ${request.params.name}.`);
    return rcBody(request.params.name);
  });

  z.put('/resource_classes/:name', {
    schema: doc('Create a CUSTOM_ resource class (201 created, 204 existed)', { params: S.NameParams, response: { 201: S.noContent('Created'), 204: S.noContent('Existed'), ...errors } }),
  }, async (request, reply) => {
    const name = request.params.name;
    if (model.resourceClasses.has(name) && !name.startsWith('CUSTOM_')) throw badRequest(`Cannot update standard resource class ${name}`);
    const created = service.createResourceClass(name, false);
    reply.header('location', `/resource_classes/${name}`);
    return reply.code(created ? 201 : 204).send(undefined as never);
  });

  z.delete('/resource_classes/:name', {
    schema: doc('Delete a CUSTOM_ resource class', { params: S.NameParams, response: { 204: S.noContent('Deleted'), ...errors } }),
  }, async (request, reply) => {
    service.deleteResourceClass(request.params.name);
    return reply.code(204).send(undefined as never);
  });

  // ---------------------------------------------------------------- allocations and usages
  z.get('/allocations/:consumer_uuid', {
    schema: doc('Allocations of a consumer', { params: S.ConsumerParams, response: { 200: S.AnyObjectSchema, ...errors } }),
  }, async (request) => {
    const c = model.consumers.get(request.params.consumer_uuid);
    if (!c) return { allocations: {} };
    const allocations: Record<string, { generation: number; resources: Record<string, number> }> = {};
    for (const [rp, res] of c.allocations) {
      allocations[rp] = { generation: model.providers.get(rp)?.generation ?? 0, resources: Object.fromEntries(res) };
    }
    const body: Record<string, unknown> = { allocations, consumer_generation: c.generation, project_id: c.project_id, user_id: c.user_id };
    if (request.placementMv >= 38) body.consumer_type = c.consumer_type ?? 'unknown';
    return body;
  });

  /** Placement's allocation schemas: consumer_type is required from 1.38 and unknown before it. */
  function checkConsumerType(body: { consumer_type?: string | undefined }, mv: number): void {
    if (mv >= 38 && body.consumer_type === undefined) {
      throw badRequest("JSON does not validate: 'consumer_type' is a required property");
    }
    if (mv < 38 && body.consumer_type !== undefined) {
      throw badRequest("JSON does not validate: Additional properties are not allowed ('consumer_type' was unexpected)");
    }
  }

  z.put('/allocations/:consumer_uuid', {
    schema: doc('Replace the allocations of a consumer (capacity checked; 409 on conflicts)', {
      params: S.ConsumerParams, body: S.ConsumerAllocationsSchema, response: { 204: S.noContent('Written'), ...errors },
    }),
  }, async (request, reply) => {
    const consumer = request.params.consumer_uuid;
    if (!isUuidLike(consumer)) throw badRequest(`Malformed consumer_uuid: ${consumer}`);
    checkConsumerType(request.body, request.placementMv);
    service.setAllocations(new Map([[consumer, request.body]]));
    return reply.code(204).send(undefined as never);
  });

  z.post('/allocations', {
    schema: doc('Replace the allocations of several consumers atomically', { body: S.AllocationsPostSchema, response: { 204: S.noContent('Written'), ...errors } }),
  }, async (request, reply) => {
    for (const body of Object.values(request.body)) checkConsumerType(body, request.placementMv);
    service.setAllocations(new Map(Object.entries(request.body)));
    return reply.code(204).send(undefined as never);
  });

  z.delete('/allocations/:consumer_uuid', {
    schema: doc('Delete the allocations of a consumer', { params: S.ConsumerParams, response: { 204: S.noContent('Deleted'), ...errors } }),
  }, async (request, reply) => {
    service.deleteAllocations(request.params.consumer_uuid);
    return reply.code(204).send(undefined as never);
  });

  z.get('/usages', {
    schema: doc('Usages of a project (and user), by consumer type', { querystring: S.UsagesQuerySchema, response: { 200: S.AnyObjectSchema, ...errors } }),
  }, async (request) => {
    const pairs = queryPairs(request.url);
    const get = (k: string) => pairs.filter(([key]) => key === k).at(-1)?.[1];
    const project = get('project_id');
    if (project === undefined) throw badRequest("Invalid query string parameters: 'project_id' is a required property");
    const user = get('user_id');
    const type = get('consumer_type');
    const byType = new Map<string, Record<string, number>>();
    const flat: Record<string, number> = {};
    for (const c of model.consumers.values()) {
      if (c.project_id !== project || (user !== undefined && c.user_id !== user)) continue;
      const ctype = c.consumer_type ?? 'unknown';
      if (type !== undefined && type !== 'all' && type !== ctype) continue;
      const key = type === 'all' ? 'all' : ctype;
      const entry = byType.get(key) ?? { consumer_count: 0 };
      byType.set(key, entry);
      entry.consumer_count!++;
      for (const res of c.allocations.values()) {
        for (const [rc, n] of res) {
          entry[rc] = (entry[rc] ?? 0) + n;
          flat[rc] = (flat[rc] ?? 0) + n;
        }
      }
    }
    if (request.placementMv < 38) return { usages: flat };
    return { usages: Object.fromEntries(byType) };
  });

  // ---------------------------------------------------------------- Nova aggregate metadata (isolate_aggregates)
  z.get('/aggregates/:uuid/metadata', {
    schema: doc('Nova host-aggregate metadata (isolate_aggregates reads trait:X=required entries)', { params: S.UuidParams, response: { 200: S.AggregateMetadataSchema, ...errors } }),
  }, async (request) => ({ metadata: model.aggregateMetadata.get(request.params.uuid) ?? {} }));

  z.put('/aggregates/:uuid/metadata', {
    schema: doc('Replace Nova host-aggregate metadata, e.g. {"metadata": {"trait:CUSTOM_WINDOWS_LICENSED": "required"}}', {
      params: S.UuidParams, body: S.AggregateMetadataSchema, response: { 200: S.AggregateMetadataSchema, ...errors },
    }),
  }, async (request) => {
    if (!isUuidLike(request.params.uuid)) throw badRequest(`Malformed aggregate uuid: ${request.params.uuid}`);
    service.setAggregateMetadata(request.params.uuid, request.body.metadata);
    return { metadata: model.aggregateMetadata.get(request.params.uuid) ?? {} };
  });

  // ---------------------------------------------------------------- allocation candidates
  z.get('/allocation_candidates', {
    schema: doc('Allocation candidates (Placement query language at microversion ≤ 1.39; send OpenStack-API-Version: placement 1.39)', {
      querystring: S.AllocationCandidatesQuerySchema,
      response: { 200: S.AllocationCandidatesResponseSchema, 400: errors[400], 404: errors[404] },
    }),
  }, async (request, reply) => {
    const mv = request.placementMv;
    if (mv < 10) throw notFound('');
    const started = process.hrtime.bigint();
    const pairs = queryPairs(request.url);
    const explain = isTrue(pairs, 'explain');
    const parsed = parseAllocationCandidatesQuery(pairs, mv);

    // Nova's isolate_aggregates: applied to the query as Nova would have sent it.
    let isolated: IsolatedAggregate[] = [];
    if (ctx.config.enable_isolated_aggregate_filtering) {
      isolated = isolatedAggregates(model.aggregateMetadata, requiredTraitsOf(parsed.groups));
      if (isolated.length > 0) {
        const unsuffixed = parsed.groups.find((g) => g.suffix === '');
        // Nova then sends "resources=&member_of=!in:…", which Placement refuses.
        if (!unsuffixed) parseResources('');
        else for (const a of isolated) unsuffixed.forbiddenAggs.add(a.uuid);
      }
    }

    const result = findCandidates(model, parsed, { randomize: ctx.config.randomize_allocation_candidates, nestedAware: mv >= 29 });
    let json = candidatesJson(model, result.candidates, mv);
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    const outcome = result.candidates.length > 0 ? 'candidates' : 'no_candidates';
    ctx.metrics.observeDecision({ domain: 'placement', outcome, seconds });
    candidatesReturned.inc(result.candidates.length);
    request.log.info({
      domain: 'placement', outcome, target: result.candidates[0]?.anchor.uuid ?? null,
      candidates: result.total, passed: result.candidates.length, ms: seconds * 1000,
    }, 'decision');
    if (explain) {
      const trace = {
        ...result.trace,
        total: result.total,
        isolate_aggregates: ctx.config.enable_isolated_aggregate_filtering
          ? isolated.map((a) => ({
            uuid: a.uuid, missing: a.missing,
            reason: `aggregate requires trait(s) ${a.missing.join(', ')} that the request does not require; added as member_of=!in:${a.uuid}`,
          }))
          : 'disabled (enable_isolated_aggregate_filtering=false)',
        weighed: ctx.config.randomize_allocation_candidates ? 'randomized' : result.candidates.map((c, i) => ({
          index: i, root_provider_uuid: c.anchor.uuid, weight: c.weight, weighers: c.weighers,
        })),
      };
      json = `${json.slice(0, -1)},"explain":${JSON.stringify(trace)}}`;
    }
    reply.header('cache-control', 'no-cache');
    reply.header('last-modified', new Date(ctx.now()).toUTCString());
    return reply.type('application/json').send(json as never);
  });

  // ---------------------------------------------------------------- wrong methods and unknown sub-paths
  // Placement answers these in its own shape: 405 for a known path with another method, 404 below its prefixes.
  const METHODS = ['GET', 'PUT', 'POST', 'DELETE', 'PATCH'] as const;
  const known: Record<string, string[]> = {};
  for (const route of routesDeclared) (known[route.url] ??= []).push(route.method);
  for (const [url, methods] of Object.entries(known)) {
    const others = METHODS.filter((m) => !methods.includes(m) && !(m === 'GET' && methods.includes('HEAD')));
    if (others.length === 0) continue;
    app.route({
      method: [...others], url, schema: { hide: true },
      handler: async (request, reply) => {
        const err = new PlacementError(405, 'The method specified is not allowed for this resource.');
        return reply.code(405).header('allow', methods.filter((m) => m !== 'HEAD').join(', ')).type('application/json')
          .send(errorBody(err, request.placementRequestId, request.placementMv >= 23) as never);
      },
    });
  }
  for (const prefix of ['/resource_providers/*', '/traits/*', '/resource_classes/*', '/allocations/*', '/aggregates/*']) {
    app.route({
      method: [...METHODS], url: prefix, schema: { hide: true },
      handler: async () => {
        throw notFound('');
      },
    });
  }
}
