// Nova's calls, replayed at HTTP level with the microversions nova/scheduler/client/report.py (Nova 26) sends:
// nova-compute's provider-tree sync (root and nested children, inventories, traits, aggregates, custom classes)
// with a generation conflict and its refresh-and-retry, a reshape of VGPU inventory to a child provider,
// nova-scheduler's candidates and claim with consumer generations, a resize's move_allocations (POST
// /allocations with two consumers on one provider), deletions, and the usages Nova counts for quotas.
import t from 'tap';
import { build } from '../helper.ts';
import { call, u } from './fixtures.ts';

const CN = u('nova-cn');
const GPU = u('nova-pgpu');
const AGG = u('nova-agg');
const INSTANCE = u('nova-instance');
const MIGRATION = u('nova-migration');
const PROJECT = 'nova-project';
const USER = 'nova-user';

t.test('nova-compute syncs its provider tree, refreshing after a generation conflict', async (t) => {
  const app = await build(t);
  // _ensure_resource_provider: look it up in_tree (1.14), create root and child (1.20 returns the body).
  let r = await call(app, 'GET', `/resource_providers?in_tree=${CN}`, undefined, '1.14');
  t.same(r.body, { resource_providers: [] });
  r = await call(app, 'POST', '/resource_providers', { uuid: CN, name: 'compute-7' }, '1.20');
  t.equal(r.status, 200);
  t.equal(r.body.generation, 0);
  r = await call(app, 'POST', '/resource_providers', { uuid: GPU, name: 'compute-7_pci_0000_84_00_0', parent_provider_uuid: CN }, '1.20');
  t.equal(r.body.root_provider_uuid, CN);
  // _refresh_associations: aggregates (1.19) and traits (1.6) of each provider.
  r = await call(app, 'GET', `/resource_providers/${CN}/aggregates`, undefined, '1.19');
  t.same(r.body, { aggregates: [], resource_provider_generation: 0 });
  r = await call(app, 'GET', `/resource_providers/${CN}/traits`, undefined, '1.6');
  t.same(r.body, { traits: [], resource_provider_generation: 0 });
  // _ensure_resource_classes (1.7, no body), then set_inventory_for_provider (1.26: reserved may equal total).
  t.equal((await call(app, 'PUT', '/resource_classes/CUSTOM_NVIDIA_11', undefined, '1.7')).status, 201);
  t.equal((await call(app, 'PUT', '/resource_classes/CUSTOM_NVIDIA_11', undefined, '1.7')).status, 204);
  r = await call(app, 'PUT', `/resource_providers/${CN}/inventories`, {
    resource_provider_generation: 0,
    inventories: {
      VCPU: { total: 8, reserved: 0, min_unit: 1, max_unit: 8, step_size: 1, allocation_ratio: 16.0 },
      MEMORY_MB: { total: 16384, reserved: 512, min_unit: 1, max_unit: 16384, step_size: 1, allocation_ratio: 1.5 },
      DISK_GB: { total: 100, reserved: 100, min_unit: 1, max_unit: 100, step_size: 1, allocation_ratio: 1.0 },
    },
  }, '1.26');
  t.equal(r.status, 200, 'reserved == total is fine at 1.26');
  t.equal(r.body.resource_provider_generation, 1);
  // Someone else moves the generation (an operator adds a trait); the compute's cached generation is stale.
  await call(app, 'PUT', '/traits/CUSTOM_OPERATOR', undefined, '1.6');
  await call(app, 'PUT', `/resource_providers/${CN}/traits`, { resource_provider_generation: 1, traits: ['CUSTOM_OPERATOR'] }, '1.6');
  r = await call(app, 'PUT', `/resource_providers/${CN}/inventories`, { resource_provider_generation: 1, inventories: { VCPU: { total: 16 } } }, '1.26');
  t.equal(r.status, 409);
  t.equal(r.body.errors[0].code, 'placement.concurrent_update', 'Nova tells a generation conflict by this code');
  // ... so it refreshes the provider (1.14) and redrives.
  const generation = (await call(app, 'GET', `/resource_providers/${CN}`, undefined, '1.14')).body.generation;
  t.equal(generation, 2);
  r = await call(app, 'PUT', `/resource_providers/${CN}/inventories`, {
    resource_provider_generation: generation,
    inventories: { VCPU: { total: 16, allocation_ratio: 16.0 }, MEMORY_MB: { total: 16384, reserved: 512 }, DISK_GB: { total: 100 } },
  }, '1.26');
  t.equal(r.status, 200);
  // set_traits_for_provider: the traits must exist (GET /traits?name=in:, PUT the missing custom ones), then 1.6.
  r = await call(app, 'GET', '/traits?name=in:COMPUTE_NODE,CUSTOM_GPU_NODE', undefined, '1.6');
  t.same(r.body.traits, ['COMPUTE_NODE']);
  t.equal((await call(app, 'PUT', '/traits/CUSTOM_GPU_NODE', undefined, '1.6')).status, 201);
  r = await call(app, 'PUT', `/resource_providers/${CN}/traits`, { resource_provider_generation: 3, traits: ['COMPUTE_NODE', 'CUSTOM_GPU_NODE', 'CUSTOM_OPERATOR'] }, '1.6');
  t.equal(r.body.resource_provider_generation, 4);
  // set_aggregates_for_provider (1.19).
  r = await call(app, 'PUT', `/resource_providers/${CN}/aggregates`, { aggregates: [AGG], resource_provider_generation: 4 }, '1.19');
  t.same(r.body, { aggregates: [AGG], resource_provider_generation: 5 });
  // The child's VGPU inventory.
  r = await call(app, 'PUT', `/resource_providers/${GPU}/inventories`, { resource_provider_generation: 0, inventories: { VGPU: { total: 4, max_unit: 4 } } }, '1.26');
  t.equal(r.status, 200);
  r = await call(app, 'GET', `/resource_providers?in_tree=${GPU}`, undefined, '1.14');
  t.same(r.body.resource_providers.map((p: { uuid: string }) => p.uuid), [CN, GPU]);
  // A trait still used cannot be deleted; a provider with a child cannot either.
  t.equal((await call(app, 'DELETE', '/traits/CUSTOM_OPERATOR', undefined, '1.6')).status, 409);
  r = await call(app, 'DELETE', `/resource_providers/${CN}`, undefined, '1.0');
  t.equal(r.status, 409);
  t.equal(r.body.errors[0].code, undefined, 'no codes before 1.23');
});

async function computeWithVgpuOnRoot(app: Awaited<ReturnType<typeof build>>) {
  await call(app, 'POST', '/resource_providers', { uuid: CN, name: 'compute-7' }, '1.20');
  await call(app, 'PUT', `/resource_providers/${CN}/inventories`, {
    resource_provider_generation: 0,
    inventories: { VCPU: { total: 8, max_unit: 4 }, MEMORY_MB: { total: 8192 }, VGPU: { total: 2 } },
  }, '1.26');
}

t.test('a reshape (1.30): VGPU inventory and its allocation move from the root to a child', async (t) => {
  const app = await build(t);
  await computeWithVgpuOnRoot(app);
  let r = await call(app, 'PUT', `/allocations/${INSTANCE}`, {
    allocations: { [CN]: { resources: { VCPU: 2, MEMORY_MB: 1024, VGPU: 1 } } }, project_id: PROJECT, user_id: USER, consumer_generation: null,
  }, '1.28');
  t.equal(r.status, 204);
  await call(app, 'POST', '/resource_providers', { uuid: GPU, name: 'compute-7_pgpu', parent_provider_uuid: CN }, '1.20');
  // The reshaper refuses to drop VGPU from the root while the instance still holds it there...
  r = await call(app, 'PUT', `/resource_providers/${CN}/inventories`, { resource_provider_generation: 2, inventories: { VCPU: { total: 8, max_unit: 4 }, MEMORY_MB: { total: 8192 } } }, '1.26');
  t.equal(r.body.errors[0].code, 'placement.inventory.inuse');
  // ... so Nova sends both at once.
  r = await call(app, 'POST', '/reshaper', {
    inventories: {
      [CN]: { resource_provider_generation: 2, inventories: { VCPU: { total: 8, max_unit: 4 }, MEMORY_MB: { total: 8192 } } },
      [GPU]: { resource_provider_generation: 0, inventories: { VGPU: { total: 2 } } },
    },
    allocations: {
      [INSTANCE]: {
        allocations: { [CN]: { resources: { VCPU: 2, MEMORY_MB: 1024 } }, [GPU]: { resources: { VGPU: 1 } } },
        project_id: PROJECT, user_id: USER, consumer_generation: 1,
      },
    },
  }, '1.30');
  t.equal(r.status, 204);
  r = await call(app, 'GET', `/allocations/${INSTANCE}`, undefined, '1.28');
  t.same(Object.keys(r.body.allocations).sort(), [CN, GPU].sort());
  t.equal(r.body.consumer_generation, 2);
  // The scheduler's next request for a VGPU (1.36) finds it on the child.
  r = await call(app, 'GET', '/allocation_candidates?resources=VCPU:1,MEMORY_MB:512,VGPU:1&limit=1000', undefined, '1.36');
  t.equal(r.body.allocation_requests.length, 1);
  t.same(r.body.allocation_requests[0].mappings, { '': [CN, GPU] });
});

t.test('the scheduler claims (1.36), a resize moves the allocations (POST /allocations 1.28), then they are deleted', async (t) => {
  const app = await build(t);
  await computeWithVgpuOnRoot(app);
  // Candidates as Nova asks for them, then the claim with the chosen allocation request and its mappings.
  let r = await call(app, 'GET', `/allocation_candidates?limit=1000&resources=MEMORY_MB:2048,VCPU:4&root_required=!COMPUTE_STATUS_DISABLED`, undefined, '1.36');
  const request = r.body.allocation_requests[0];
  t.ok(request);
  r = await call(app, 'PUT', `/allocations/${INSTANCE}`, {
    ...request, project_id: PROJECT, user_id: USER, consumer_generation: null,
  }, '1.36');
  t.equal(r.status, 204);
  // Resize to the same host: the old flavor goes to the migration consumer, the new one to the instance.
  const source = (await call(app, 'GET', `/allocations/${INSTANCE}`, undefined, '1.28')).body;
  const target = (await call(app, 'GET', `/allocations/${MIGRATION}`, undefined, '1.28')).body;
  t.same(target, { allocations: {} });
  r = await call(app, 'POST', '/allocations', {
    [INSTANCE]: { allocations: {}, project_id: source.project_id, user_id: source.user_id, consumer_generation: source.consumer_generation },
    [MIGRATION]: { allocations: source.allocations, project_id: source.project_id, user_id: source.user_id, consumer_generation: target.consumer_generation ?? null },
  }, '1.28');
  t.equal(r.status, 204, 'move_allocations');
  // The move emptied the instance, so Placement deleted it: it claims the new flavor as a new consumer, beside the
  // migration's old one: 4 + 4 VCPU on max_unit 4, within capacity 8.
  r = await call(app, 'PUT', `/allocations/${INSTANCE}`, {
    allocations: { [CN]: { resources: { VCPU: 4, MEMORY_MB: 4096 } } }, project_id: PROJECT, user_id: USER, consumer_generation: 2,
  }, '1.28');
  t.match(r.body.errors[0].detail, 'consumer generation conflict - expected null but got 2');
  r = await call(app, 'PUT', `/allocations/${INSTANCE}`, {
    allocations: { [CN]: { resources: { VCPU: 4, MEMORY_MB: 4096 } } }, project_id: PROJECT, user_id: USER, consumer_generation: null,
  }, '1.28');
  t.equal(r.status, 204);
  // Quotas: usages by project and user (1.9) and by consumer type (1.38).
  r = await call(app, 'GET', `/usages?project_id=${PROJECT}&user_id=${USER}`, undefined, '1.9');
  t.same(r.body.usages, { VCPU: 8, MEMORY_MB: 6144 });
  r = await call(app, 'GET', `/usages?project_id=${PROJECT}`, undefined, '1.38');
  t.same(r.body.usages, { unknown: { consumer_count: 2, VCPU: 8, MEMORY_MB: 6144 } });
  // Confirming the resize drops the migration's allocations: delete_allocation_for_instance reads, then PUTs {}.
  const migration = (await call(app, 'GET', `/allocations/${MIGRATION}`, undefined, '1.28')).body;
  r = await call(app, 'PUT', `/allocations/${MIGRATION}`, { ...migration, allocations: {} }, '1.28');
  t.equal(r.status, 204);
  t.same((await call(app, 'GET', `/allocations/${MIGRATION}`, undefined, '1.28')).body, { allocations: {} });
  // Deleting the instance (older path): DELETE, then a second DELETE is 404.
  t.equal((await call(app, 'DELETE', `/allocations/${INSTANCE}`, undefined, '1.0')).status, 204);
  t.equal((await call(app, 'DELETE', `/allocations/${INSTANCE}`, undefined, '1.0')).status, 404);
  t.same((await call(app, 'GET', `/resource_providers/${CN}/usages`)).body.usages, { VCPU: 0, MEMORY_MB: 0, VGPU: 0 });
});
