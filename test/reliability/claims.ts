// Claims in all three dialects against a running Berth, what a client saw acknowledged, and the check that a
// Berth (restarted, or another instance on the same database) holds every acknowledged claim and counts nothing
// twice. Shared by the crash and scale-out tests.
import type { Test } from 'tap';
import type { RunningBerth } from '../process-helper.ts';

export const PLACEMENT = { 'content-type': 'application/json', 'openstack-api-version': 'placement 1.39' };
const JSON_HEADERS = { 'content-type': 'application/json' };
const RP = 'c0ffee00-0000-4000-8000-000000000001';
const GiB = 2 ** 30;

/** mulberry32: a small seeded PRNG, so a failing run can be replayed with BERTH_CRASH_SEED. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = Math.imul(a ^ (a >>> 15), 1 | a);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

export async function call(base: string, method: string, path: string, body?: unknown, headers = JSON_HEADERS) {
  const res = await fetch(base + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

export async function seed(base: string): Promise<void> {
  const ok = (r: { status: number; body: unknown }, what: string) => {
    if (r.status >= 300) throw new Error(`${what}: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body as Record<string, unknown>;
  };
  ok(await call(base, 'PUT', '/backends/crash@lvm', {
    volume_backend_name: 'lvm',
    pools: [{ pool_name: 'p1', total_capacity_gb: 1_000_000, free_capacity_gb: 1_000_000, reserved_percentage: 0, thin_provisioning_support: true, max_over_subscription_ratio: 1.0 }],
  }), 'backend');
  const rp = ok(await call(base, 'POST', '/resource_providers', { uuid: RP, name: 'crash-cn1' }, PLACEMENT), 'provider');
  ok(await call(base, 'PUT', `/resource_providers/${RP}/inventories`, {
    resource_provider_generation: rp.generation,
    inventories: { VCPU: { total: 100_000 }, MEMORY_MB: { total: 10_000_000 } },
  }, PLACEMENT), 'inventory');
  for (const name of ['n1', 'n2', 'n3']) {
    ok(await call(base, 'PUT', `/nodes/${name}`, {
      zone: `z-${name}`, region: 'r1', tags: [], cordoned: false, ready: true, allowScheduling: true, evictionRequested: false,
      disks: {
        d1: {
          path: '/var/lib/longhorn', type: 'filesystem', tags: [], allowScheduling: true, evictionRequested: false,
          storageMaximum: 2 ** 50, storageAvailable: 2 ** 50, storageReserved: 0, storageScheduled: 0,
        },
      },
    }), `node ${name}`);
  }
}

export interface Acked {
  volumes: Map<string, number>;
  allocations: Map<string, number>;
  replicas: Map<string, number>;
}

export type Kind = 0 | 1 | 2;

/** Sends claims with a few in flight until the process dies; records what was acknowledged and reports each ack. */
export async function drive(berth: RunningBerth, round: number, acked: Acked, rnd: () => number, onAck: (kind: Kind) => void): Promise<void> {
  let n = 0;
  let dead = false;
  void berth.exited.then(() => { dead = true; });
  const worker = async () => {
    while (!dead) {
      const i = `${round}-${n++}`;
      const kind = Math.floor(rnd() * 3) as Kind;
      try {
        if (kind === 0) {
          const size = 1 + Math.floor(rnd() * 50);
          const r = await call(berth.base, 'POST', '/volumes/schedule', { id: `vol-${i}`, size });
          if (r.status === 200) { acked.volumes.set(`vol-${i}`, size); onAck(kind); }
        } else if (kind === 1) {
          const vcpu = 1 + Math.floor(rnd() * 8);
          const consumer = `${(round + 1).toString(16).padStart(8, '0')}-0000-4000-8000-${n.toString(16).padStart(12, '0')}`;
          const r = await call(berth.base, 'PUT', `/allocations/${consumer}`, {
            allocations: { [RP]: { resources: { VCPU: vcpu, MEMORY_MB: 128 } } },
            project_id: 'p', user_id: 'u', consumer_generation: null, consumer_type: 'INSTANCE',
          }, PLACEMENT);
          if (r.status === 204) { acked.allocations.set(consumer, vcpu); onAck(kind); }
        } else {
          const size = (1 + Math.floor(rnd() * 4)) * GiB;
          const r = await call(berth.base, 'POST', '/replicas/schedule', { volume: { name: `rv-${i}`, size, numberOfReplicas: 2 } });
          if (r.status === 200) {
            for (const rep of r.body.replicas as Array<{ name: string }>) acked.replicas.set(rep.name, size);
            onAck(kind);
          }
        }
      } catch {
        // The connection died with the process: this claim was never acknowledged.
      }
    }
  };
  await Promise.all([worker(), worker(), worker(), worker()]);
}

/** Checks the restarted process: acknowledged claims present, capacity figures equal to the claims that exist. */
export async function verify(t: Test, base: string, acked: Acked, label: string): Promise<void> {
  const volumes = (await call(base, 'GET', '/volumes')).body.volumes as Array<{ id: string; size: number; pool: string }>;
  const volumeIds = new Map(volumes.map((v) => [v.id, v.size]));
  let missing = [...acked.volumes.keys()].filter((id) => volumeIds.get(id) !== acked.volumes.get(id));
  t.same(missing, [], `${label}: every acknowledged volume is back`);
  const pools = (await call(base, 'GET', '/pools?detail=true')).body.pools as Array<{ name: string; capabilities: { allocated_capacity_gb: number } }>;
  const sumVolumes = volumes.reduce((s, v) => s + v.size, 0);
  t.equal(pools[0]!.capabilities.allocated_capacity_gb, sumVolumes, `${label}: pool allocated = sum of its volumes`);

  const usages = (await call(base, 'GET', `/resource_providers/${RP}/usages`, undefined, PLACEMENT)).body.usages as Record<string, number>;
  const allocs = (await call(base, 'GET', `/resource_providers/${RP}/allocations`, undefined, PLACEMENT)).body.allocations as Record<string, { resources: Record<string, number> }>;
  missing = [...acked.allocations.keys()].filter((c) => allocs[c]?.resources.VCPU !== acked.allocations.get(c));
  t.same(missing, [], `${label}: every acknowledged allocation is back`);
  const sumVcpu = Object.values(allocs).reduce((s, a) => s + (a.resources.VCPU ?? 0), 0);
  t.equal(usages.VCPU ?? 0, sumVcpu, `${label}: provider usage = sum of its allocations`);

  const replicas = (await call(base, 'GET', '/replicas')).body.replicas as Array<{ name: string; node: string; disk: string; size: number }>;
  const replicaSizes = new Map(replicas.map((r) => [r.name, r.size]));
  missing = [...acked.replicas.keys()].filter((name) => replicaSizes.get(name) !== acked.replicas.get(name));
  t.same(missing, [], `${label}: every acknowledged replica is back`);
  for (const node of ['n1', 'n2', 'n3']) {
    const detail = (await call(base, 'GET', `/nodes/${node}`)).body as { disks: Record<string, { storageScheduled: number }> };
    const onDisk = replicas.filter((r) => r.node === node && r.disk === 'd1').reduce((s, r) => s + r.size, 0);
    t.equal(detail.disks.d1!.storageScheduled, onDisk, `${label}: ${node}/d1 scheduled = sum of its replicas`);
  }
}

