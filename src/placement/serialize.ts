// Placement's response bodies, built from the in-memory model: providers, inventories, usages, allocations and
// the allocation candidates (serialised directly, they can be hundreds of KB). Pure: no Fastify imports.
import { capacity } from './capacity.ts';
import type { Candidate } from './candidates.ts';
import type { Consumer, PlacementModel, Provider } from './model.ts';

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

export function inventoriesBody(p: Provider) {
  return { inventories: Object.fromEntries(p.inventories), resource_provider_generation: p.generation };
}

export function inventoryBody(p: Provider, rc: string) {
  return { resource_provider_generation: p.generation, ...p.inventories.get(rc) };
}

export function providerTraitsBody(p: Provider) {
  return { traits: [...p.traits].sort(), resource_provider_generation: p.generation };
}

export function providerAggregatesBody(p: Provider) {
  return { aggregates: [...p.aggregates].sort(), resource_provider_generation: p.generation };
}

export function resourceClassBody(name: string) {
  return { links: [{ href: `/resource_classes/${name}`, rel: 'self' }], name };
}

/** The allocations of a consumer (GET /allocations/{consumer_uuid}). */
export function consumerAllocationsBody(model: PlacementModel, c: Consumer | undefined, mv: number) {
  if (!c) return { allocations: {} };
  const allocations: Record<string, { generation: number; resources: Record<string, number> }> = {};
  for (const [rp, res] of c.allocations) {
    allocations[rp] = { generation: model.providers.get(rp)?.generation ?? 0, resources: Object.fromEntries(res) };
  }
  const body: Record<string, unknown> = { allocations, consumer_generation: c.generation, project_id: c.project_id, user_id: c.user_id };
  if (mv >= 38) body.consumer_type = c.consumer_type ?? 'unknown';
  return body;
}

/** The allocations against a provider (GET /resource_providers/{uuid}/allocations). */
export function providerAllocationsBody(model: PlacementModel, p: Provider) {
  const allocations: Record<string, { resources: Record<string, number> }> = {};
  for (const c of [...p.consumers].sort()) {
    const res = model.consumers.get(c)?.allocations.get(p.uuid);
    if (res) allocations[c] = { resources: Object.fromEntries(res) };
  }
  return { allocations, resource_provider_generation: p.generation };
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
 * The response of GET /allocation_candidates, serialised directly: provider uuids (hex and dashes, checked on
 * creation), class names ([A-Z0-9_]) and suffixes ([a-zA-Z0-9_-]) need no escaping, so the allocation requests
 * are concatenated; summaries come from a per-provider cache.
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
