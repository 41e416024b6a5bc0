// Helpers for the HTTP tests of the replica dialect.
import type { FastifyInstance } from 'fastify';

export const GiB = 1024 ** 3;

export function diskBody(spec: Record<string, unknown> = {}) {
  return { path: '/var/lib/longhorn', storageMaximum: 100 * GiB, storageAvailable: 100 * GiB, ...spec };
}

export async function putNode(app: FastifyInstance, name: string, body: Record<string, unknown> = {}) {
  return app.inject({ method: 'PUT', url: `/nodes/${name}`, payload: { disks: { d1: diskBody() }, ...body } });
}

export async function scheduleVolume(app: FastifyInstance, volume: Record<string, unknown>, query = '', extra: Record<string, unknown> = {}) {
  return app.inject({ method: 'POST', url: `/replicas/schedule${query}`, payload: { volume: { size: 10 * GiB, ...volume }, ...extra } });
}

/** Everything a client can read back: nodes, replicas, settings. */
export async function snapshot(app: FastifyInstance) {
  const nodes = (await app.inject({ method: 'GET', url: '/nodes' })).json() as { nodes: Array<Record<string, unknown>> };
  // The report age moves with the clock; it is not state.
  for (const n of nodes.nodes) delete n.reportAgeSeconds;
  return {
    nodes,
    replicas: (await app.inject({ method: 'GET', url: '/replicas' })).json(),
    settings: (await app.inject({ method: 'GET', url: '/replicas/settings' })).json(),
  };
}
