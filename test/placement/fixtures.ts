// Helpers for Placement tests: HTTP calls at microversion 1.39 and small fleet builders.
import type { FastifyInstance } from 'fastify';

export interface Reply {
  status: number;
  body: any;  
  headers: Record<string, unknown>;
}

export async function call(app: FastifyInstance, method: string, url: string, payload?: unknown, mv = '1.39'): Promise<Reply> {
  const res = await app.inject({
    method: method as 'GET',
    url,
    headers: { 'openstack-api-version': `placement ${mv}`, 'x-auth-token': 'admin', ...(payload !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(payload !== undefined ? { payload: JSON.stringify(payload) } : {}),
  });
  return { status: res.statusCode, body: res.body ? safeJson(res.body) : undefined, headers: res.headers };
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

export interface ProviderSpec {
  uuid: string;
  name?: string;
  parent?: string;
  inventories?: Record<string, number | Record<string, number>>;
  traits?: string[];
  aggregates?: string[];
}

/** Creates providers (parents first), their inventories, traits (CUSTOM_ ones created) and aggregates. */
export async function createProviders(app: FastifyInstance, specs: ProviderSpec[]): Promise<void> {
  for (const s of specs) {
    const r = await call(app, 'POST', '/resource_providers', {
      name: s.name ?? s.uuid, uuid: s.uuid, ...(s.parent ? { parent_provider_uuid: s.parent } : {}),
    });
    if (r.status !== 200) throw new Error(`create ${s.uuid}: ${r.status} ${JSON.stringify(r.body)}`);
    let gen = r.body.generation as number;
    if (s.inventories) {
      const inventories: Record<string, Record<string, number>> = {};
      for (const [rc, v] of Object.entries(s.inventories)) inventories[rc] = typeof v === 'number' ? { total: v } : (v as { total: number });
      for (const rc of Object.keys(inventories)) if (rc.startsWith('CUSTOM_')) await call(app, 'PUT', `/resource_classes/${rc}`);
      const ri = await call(app, 'PUT', `/resource_providers/${s.uuid}/inventories`, { resource_provider_generation: gen, inventories });
      if (ri.status !== 200) throw new Error(`inventories ${s.uuid}: ${ri.status} ${JSON.stringify(ri.body)}`);
      gen = ri.body.resource_provider_generation;
    }
    if (s.traits) {
      for (const t of s.traits) if (t.startsWith('CUSTOM_')) await call(app, 'PUT', `/traits/${t}`);
      const rt = await call(app, 'PUT', `/resource_providers/${s.uuid}/traits`, { resource_provider_generation: gen, traits: s.traits });
      if (rt.status !== 200) throw new Error(`traits ${s.uuid}: ${rt.status} ${JSON.stringify(rt.body)}`);
      gen = rt.body.resource_provider_generation;
    }
    if (s.aggregates) {
      const ra = await call(app, 'PUT', `/resource_providers/${s.uuid}/aggregates`, { resource_provider_generation: gen, aggregates: s.aggregates });
      if (ra.status !== 200) throw new Error(`aggregates ${s.uuid}: ${ra.status} ${JSON.stringify(ra.body)}`);
    }
  }
}

/** A uuid from a short readable name ("cnA" → deterministic uuid), so tables stay legible. */
export function u(name: string): string {
  let h = 0;
  const hex: string[] = [];
  for (let i = 0; i < 32; i++) {
    h = (h * 31 + name.charCodeAt(i % name.length) + i * 7) >>> 0;
    hex.push((h % 16).toString(16));
  }
  const s = hex.join('');
  return `${s.slice(0, 8)}-${s.slice(8, 12)}-4${s.slice(13, 16)}-8${s.slice(17, 20)}-${s.slice(20, 32)}`;
}

/** Candidates as comparable sets: each allocation request as "rp:RC=n,…" sorted, the list sorted. */
export function shapes(body: { allocation_requests: Array<{ allocations: Record<string, { resources: Record<string, number> }> }> }, names: Record<string, string>): string[] {
  return body.allocation_requests.map((ar) =>
    Object.entries(ar.allocations)
      .map(([rp, a]) => `${names[rp] ?? rp}(${Object.entries(a.resources).sort().map(([rc, n]) => `${rc}:${n}`).join(',')})`)
      .sort()
      .join('+'),
  ).sort();
}
