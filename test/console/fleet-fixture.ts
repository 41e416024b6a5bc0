// A small fleet in each dialect, reported through the public routes (the console must show what clients report),
// and a large one for the 10,000-pool views.
import type { FastifyInstance } from 'fastify';
import { call as placementCall, createProviders, u } from '../placement/fixtures.ts';

export const GiB = 1024 ** 3;

async function put(app: FastifyInstance, url: string, body: unknown): Promise<void> {
  const res = await app.inject({ method: 'PUT', url, payload: body as object });
  if (res.statusCode !== 200) throw new Error(`PUT ${url}: ${res.statusCode} ${res.body}`);
}

/**
 * Volumes: node1@lvm with a thin pool (`big`, auto ratio), a small thick pool (`small`) and a pool in another zone
 * (`far`). A 100 GiB volume fits only `big`: `small` fails CapacityFilter, `far` the zone when a zone is asked.
 */
async function seedVolumes(app: FastifyInstance): Promise<void> {
  await put(app, '/backends/node1@lvm', {
    volume_backend_name: 'lvm',
    pools: [
      { pool_name: 'big', total_capacity_gb: 1024, free_capacity_gb: 500, provisioned_capacity_gb: 924, max_over_subscription_ratio: 'auto', thin_provisioning_support: true },
      { pool_name: 'small', total_capacity_gb: 50, free_capacity_gb: 50, thick_provisioning_support: true },
    ],
  });
  await put(app, '/backends/node2@nfs', {
    volume_backend_name: 'nfs', availability_zone: 'az2',
    pools: [{ pool_name: 'far', total_capacity_gb: 2048, free_capacity_gb: 1800, provisioned_capacity_gb: 400, max_over_subscription_ratio: 2, thin_provisioning_support: true }],
  });
}

/** Replicas: three nodes in three zones, two disks each, one disk already well used. */
async function seedReplicas(app: FastifyInstance): Promise<void> {
  for (const n of [1, 2, 3]) {
    await put(app, `/nodes/node-${n}`, {
      zone: `zone-${n}`,
      disks: {
        'disk-a': { path: '/var/lib/longhorn', storageMaximum: 100 * GiB, storageAvailable: 90 * GiB, storageReserved: 10 * GiB, storageScheduled: n === 1 ? 60 * GiB : 0 },
        'disk-b': { path: '/mnt/ssd', storageMaximum: 200 * GiB, storageAvailable: 200 * GiB, storageReserved: 20 * GiB, tags: ['ssd'] },
      },
    });
  }
}

export const PROVIDERS = {
  cn1: u('console-cn1'),
  cn2: u('console-cn2'),
  numa0: u('console-cn2-numa0'),
  numa1: u('console-cn2-numa1'),
};

/** Placement: a flat compute node and a tree with two NUMA children; an allocation uses part of cn1. */
async function seedPlacement(app: FastifyInstance): Promise<void> {
  await createProviders(app, [
    { uuid: PROVIDERS.cn1, name: 'cn1', inventories: { VCPU: { total: 8, allocation_ratio: 16 }, MEMORY_MB: { total: 16384, reserved: 512 }, DISK_GB: 500 }, traits: ['HW_CPU_X86_AVX2'] },
    { uuid: PROVIDERS.cn2, name: 'cn2', inventories: { DISK_GB: 1000 } },
    { uuid: PROVIDERS.numa0, name: 'cn2-numa0', parent: PROVIDERS.cn2, inventories: { VCPU: 16, MEMORY_MB: 32768 } },
    { uuid: PROVIDERS.numa1, name: 'cn2-numa1', parent: PROVIDERS.cn2, inventories: { VCPU: 16, MEMORY_MB: 32768 } },
  ]);
  const res = await placementCall(app, 'PUT', `/allocations/${u('console-consumer-1')}`, {
    allocations: { [PROVIDERS.cn1]: { resources: { VCPU: 100, MEMORY_MB: 8192 } } },
    project_id: u('console-project'), user_id: u('console-user'), consumer_generation: null, consumer_type: 'INSTANCE',
  });
  if (res.status !== 204) throw new Error(`allocation: ${res.status} ${JSON.stringify(res.body)}`);
}

export async function seedFleet(app: FastifyInstance): Promise<void> {
  await seedVolumes(app);
  await seedReplicas(app);
  await seedPlacement(app);
}

/**
 * `backends` × `poolsPerBackend` pools with varied figures (pool-00042 on backend host-0000@b, …): every third pool
 * thick only, the others thin with ratios 1.5 to 4.5, and one in 97 provisioned past its ratio.
 */
export async function seedManyPools(app: FastifyInstance, backends: number, poolsPerBackend: number): Promise<void> {
  for (let b = 0; b < backends; b++) {
    const pools = [];
    for (let p = 0; p < poolsPerBackend; p++) {
      const i = b * poolsPerBackend + p;
      const total = 1000 + (i % 17) * 250;
      const free = Math.round((total * ((i % 10) + 0.5)) / 11);
      const thin = i % 3 !== 0;
      const ratio = 1.5 + (i % 4);
      const provisioned = !thin ? total - free : i % 97 === 0 ? Math.round(total * ratio) + 10 : Math.round((total - free) * (1 + (i % 5) / 10));
      pools.push({
        pool_name: `pool-${String(i).padStart(5, '0')}`, total_capacity_gb: total, free_capacity_gb: free,
        provisioned_capacity_gb: provisioned, max_over_subscription_ratio: thin ? ratio : 1, thin_provisioning_support: thin,
        thick_provisioning_support: !thin,
      });
    }
    await put(app, `/backends/host-${String(b).padStart(4, '0')}@b`, { volume_backend_name: 'b', pools });
  }
}
