// The Placement-compatible resources: providers, inventories, traits, resource classes, aggregates, usages and
// allocations, with Placement's bodies, generations, status codes and error codes; durability across a restart.
import t from 'tap';
import { build } from '../helper.ts';
import { openSqliteStore } from '../../src/store/sqlite.ts';
import { call, createProviders, u } from './fixtures.ts';

const CN = u('cn1');
const CN2 = u('cn2');
const C1 = u('consumer1');
const C2 = u('consumer2');
const alloc = (rp: string, resources: Record<string, number>, gen: number | null = null) => ({
  allocations: { [rp]: { resources } }, consumer_generation: gen, project_id: 'proj', user_id: 'user', consumer_type: 'INSTANCE',
});
const code = (r: { body: { errors: Array<{ code: string }> } }) => r.body.errors[0]!.code;

t.test('resource providers: create, show, list filters, update, delete, nested', async (t) => {
  const app = await build(t);
  let r = await call(app, 'POST', '/resource_providers', { name: 'cn1', uuid: CN });
  t.equal(r.status, 200);
  t.same(r.body, {
    generation: 0, name: 'cn1', uuid: CN, parent_provider_uuid: null, root_provider_uuid: CN,
    links: r.body.links,
  });
  t.equal(r.body.links[0].href, `/resource_providers/${CN}`);
  r = await call(app, 'POST', '/resource_providers', { name: 'cn1' });
  t.equal(r.status, 409);
  t.equal(code(r), 'placement.duplicate_name');
  r = await call(app, 'POST', '/resource_providers', { name: 'numa0', uuid: CN2, parent_provider_uuid: CN });
  t.equal(r.body.root_provider_uuid, CN);
  r = await call(app, 'GET', `/resource_providers?in_tree=${CN2}`);
  t.same(r.body.resource_providers.map((p: { name: string }) => p.name).sort(), ['cn1', 'numa0']);
  r = await call(app, 'GET', '/resource_providers?name=numa0');
  t.equal(r.body.resource_providers.length, 1);
  r = await call(app, 'DELETE', `/resource_providers/${CN}`);
  t.equal(r.status, 409);
  t.equal(code(r), 'placement.resource_provider.cannot_delete_parent');
  r = await call(app, 'PUT', `/resource_providers/${CN2}`, { name: 'numa-zero' });
  t.equal(r.body.name, 'numa-zero');
  t.equal(r.body.generation, 0, 'a rename does not move the generation');
  r = await call(app, 'GET', `/resource_providers/${u('nope')}`);
  t.equal(r.status, 404);
  t.equal(r.body.errors[0].detail, `The resource could not be found.\n\n No resource provider with uuid ${u('nope')} found  `);
  t.equal((await call(app, 'DELETE', `/resource_providers/${CN2}`)).status, 204);
  t.equal((await call(app, 'DELETE', `/resource_providers/${CN}`)).status, 204);
  t.same((await call(app, 'GET', '/resource_providers')).body, { resource_providers: [] });
  r = await call(app, 'POST', '/resource_providers', { name: '', uuid: CN });
  t.equal(r.status, 400);
  t.match(r.body.errors[0].detail, `Unable to create resource provider "", ${CN}: Object action create failed because: name is required`);
  r = await call(app, 'POST', '/resource_providers', { name: 'x'.repeat(201) });
  t.match(r.body.errors[0].detail, /JSON does not validate: 'x+' is too long/);
});

t.test('inventories, generations and stranded allocations', async (t) => {
  const app = await build(t);
  await call(app, 'POST', '/resource_providers', { name: 'cn1', uuid: CN });
  let r = await call(app, 'PUT', `/resource_providers/${CN}/inventories`, {
    resource_provider_generation: 0,
    inventories: { VCPU: { total: 8, allocation_ratio: 2.0, max_unit: 4 }, MEMORY_MB: { total: 4096, reserved: 512 } },
  });
  t.equal(r.status, 200);
  t.same(r.body, {
    resource_provider_generation: 1,
    inventories: {
      VCPU: { total: 8, reserved: 0, min_unit: 1, max_unit: 4, step_size: 1, allocation_ratio: 2.0 },
      MEMORY_MB: { total: 4096, reserved: 512, min_unit: 1, max_unit: 2147483647, step_size: 1, allocation_ratio: 1.0 },
    },
  });
  r = await call(app, 'PUT', `/resource_providers/${CN}/inventories`, { resource_provider_generation: 0, inventories: {} });
  t.equal(r.status, 409);
  t.equal(code(r), 'placement.concurrent_update');
  r = await call(app, 'PUT', `/resource_providers/${CN}/inventories`, { resource_provider_generation: 1, inventories: { VCPU: { total: 1, reserved: 2 } } });
  t.equal(r.status, 400, 'reserved > total');
  r = await call(app, 'PUT', `/resource_providers/${CN}/inventories`, { resource_provider_generation: 1, inventories: { CUSTOM_NOPE: { total: 1 } } });
  t.equal(r.status, 400, 'unknown class');
  t.equal((await call(app, 'PUT', `/allocations/${C1}`, alloc(CN, { VCPU: 2 }))).status, 204);
  r = await call(app, 'DELETE', `/resource_providers/${CN}/inventories/VCPU`);
  t.equal(r.status, 409);
  t.equal(code(r), 'placement.concurrent_update', "Placement's delete_inventory answers in-use with this code");
  r = await call(app, 'GET', `/resource_providers/${CN}/inventories`);
  const gen = r.body.resource_provider_generation;
  t.equal(gen, 2, 'allocation bumped the provider generation');
  r = await call(app, 'PUT', `/resource_providers/${CN}/inventories`, { resource_provider_generation: gen, inventories: { MEMORY_MB: { total: 4096 } } });
  t.equal(r.status, 409, 'dropping VCPU would strand the allocation');
  t.equal(code(r), 'placement.inventory.inuse');
  r = await call(app, 'GET', `/resource_providers/${CN}/inventories/VCPU`);
  t.same(r.body, { resource_provider_generation: 2, total: 8, reserved: 0, min_unit: 1, max_unit: 4, step_size: 1, allocation_ratio: 2.0 });
  r = await call(app, 'PUT', `/resource_providers/${CN}/inventories/VCPU`, { resource_provider_generation: 2, total: 16 });
  t.equal(r.body.total, 16);
  t.equal(r.body.resource_provider_generation, 3);
  r = await call(app, 'GET', `/resource_providers/${CN}/usages`);
  t.same(r.body, { resource_provider_generation: 3, usages: { VCPU: 2, MEMORY_MB: 0 } });
  t.equal((await call(app, 'DELETE', `/resource_providers/${CN}/inventories/MEMORY_MB`)).status, 204);
  r = await call(app, 'DELETE', `/resource_providers/${CN}`);
  t.equal(code(r), 'placement.resource_provider.inuse');
});

t.test('traits, resource classes and aggregates', async (t) => {
  const app = await build(t);
  await call(app, 'POST', '/resource_providers', { name: 'cn1', uuid: CN });
  t.equal((await call(app, 'GET', '/traits/HW_CPU_X86_AVX2')).status, 204, 'standard traits exist from the start');
  t.equal((await call(app, 'GET', '/traits/MISC_SHARES_VIA_AGGREGATE')).status, 204);
  t.equal((await call(app, 'GET', '/traits/CUSTOM_GOLD')).status, 404);
  t.equal((await call(app, 'PUT', '/traits/CUSTOM_GOLD')).status, 201);
  t.equal((await call(app, 'PUT', '/traits/CUSTOM_GOLD')).status, 204);
  t.equal((await call(app, 'PUT', '/traits/GOLD')).status, 400);
  t.same((await call(app, 'GET', '/traits?name=startswith:CUSTOM_')).body, { traits: ['CUSTOM_GOLD'] });
  let r = await call(app, 'PUT', `/resource_providers/${CN}/traits`, { resource_provider_generation: 0, traits: ['CUSTOM_GOLD', 'CUSTOM_NOPE'] });
  t.equal(r.status, 400);
  t.equal(r.body.errors[0].detail.split('\n\n ')[1], 'No such trait CUSTOM_NOPE  ');
  r = await call(app, 'PUT', `/resource_providers/${CN}/traits`, { resource_provider_generation: 0, traits: ['CUSTOM_GOLD', 'STORAGE_DISK_SSD'] });
  t.same(r.body, { traits: ['STORAGE_DISK_SSD', 'CUSTOM_GOLD'], resource_provider_generation: 1 }, 'standard traits first, as their ids are');
  r = await call(app, 'PUT', `/resource_providers/${CN}/traits`, { resource_provider_generation: 0, traits: [] });
  t.equal(code(r), 'placement.concurrent_update');
  t.same((await call(app, 'GET', '/traits?name=in:CUSTOM_GOLD,HW_CPU_X86_AVX2&associated=true')).body, { traits: ['CUSTOM_GOLD'] });
  t.equal((await call(app, 'DELETE', '/traits/CUSTOM_GOLD')).status, 409, 'in use');
  t.equal((await call(app, 'DELETE', '/traits/HW_CPU_X86_AVX2')).status, 400, 'standard');

  t.equal((await call(app, 'GET', '/resource_classes/VCPU')).status, 200);
  t.equal((await call(app, 'POST', '/resource_classes', { name: 'CUSTOM_FPGA' })).status, 201);
  t.equal((await call(app, 'POST', '/resource_classes', { name: 'CUSTOM_FPGA' })).status, 409);
  t.equal((await call(app, 'PUT', '/resource_classes/CUSTOM_FPGA')).status, 204);
  t.same((await call(app, 'GET', '/resource_classes/CUSTOM_FPGA')).body, { links: [{ href: '/resource_classes/CUSTOM_FPGA', rel: 'self' }], name: 'CUSTOM_FPGA' });
  t.equal((await call(app, 'DELETE', '/resource_classes/VCPU')).status, 400);
  t.equal((await call(app, 'DELETE', '/resource_classes/CUSTOM_FPGA')).status, 204);

  r = await call(app, 'PUT', `/resource_providers/${CN}/aggregates`, { resource_provider_generation: 1, aggregates: [u('agg1'), u('agg2')] });
  t.same(r.body, { aggregates: [u('agg1'), u('agg2')].sort(), resource_provider_generation: 2 });
  r = await call(app, 'PUT', `/resource_providers/${CN}/aggregates`, { resource_provider_generation: 1, aggregates: [] });
  t.equal(code(r), 'placement.concurrent_update');
  r = await call(app, 'GET', `/resource_providers?member_of=in:${u('agg1')},${u('agg9')}`);
  t.equal(r.body.resource_providers.length, 1);
});

t.test('allocations: consumer generations, capacity, POST /allocations, usages', async (t) => {
  const app = await build(t);
  await createProviders(app, [
    { uuid: CN, inventories: { VCPU: { total: 4, max_unit: 4 }, MEMORY_MB: { total: 2048, step_size: 256 } } },
    { uuid: CN2, inventories: { DISK_GB: 100 } },
  ]);
  t.equal((await call(app, 'PUT', `/allocations/${C1}`, alloc(CN, { VCPU: 2, MEMORY_MB: 512 }))).status, 204);
  let r = await call(app, 'GET', `/allocations/${C1}`);
  t.same(r.body, {
    allocations: { [CN]: { generation: 2, resources: { VCPU: 2, MEMORY_MB: 512 } } },
    consumer_generation: 1, project_id: 'proj', user_id: 'user', consumer_type: 'INSTANCE',
  });
  r = await call(app, 'PUT', `/allocations/${C1}`, alloc(CN, { VCPU: 1 }, null));
  t.equal(r.status, 409);
  t.equal(code(r), 'placement.concurrent_update');
  t.match(r.body.errors[0].detail, /consumer generation conflict - expected 1 but got None/);
  r = await call(app, 'PUT', `/allocations/${C2}`, alloc(CN, { VCPU: 3 }));
  t.equal(r.status, 409, 'only 2 VCPU left');
  t.equal(code(r), 'placement.undefined_code');
  t.match(r.body.errors[0].detail, /The requested amount would exceed the capacity\./);
  r = await call(app, 'PUT', `/allocations/${C2}`, alloc(CN, { MEMORY_MB: 100 }));
  t.match(r.body.errors[0].detail, /would violate inventory constraints/, 'step_size');
  r = await call(app, 'PUT', `/allocations/${C2}`, alloc(u('ghost'), { VCPU: 1 }));
  t.equal(r.status, 400);
  // Replacing a consumer's own allocations releases them first.
  t.equal((await call(app, 'PUT', `/allocations/${C1}`, alloc(CN, { VCPU: 4 }, 1))).status, 204);
  r = await call(app, 'POST', '/allocations', {
    [C1]: alloc(CN, { VCPU: 2 }, 2),
    [C2]: { ...alloc(CN, { VCPU: 2 }), allocations: { [CN]: { resources: { VCPU: 2 } }, [CN2]: { resources: { DISK_GB: 10 } } } },
  });
  t.equal(r.status, 204);
  r = await call(app, 'GET', `/resource_providers/${CN}/allocations`);
  t.same(r.body.allocations, { [C1]: { resources: { VCPU: 2 }, consumer_generation: 3 }, [C2]: { resources: { VCPU: 2 }, consumer_generation: 1 } });
  r = await call(app, 'GET', '/usages?project_id=proj');
  t.same(r.body, { usages: { INSTANCE: { consumer_count: 2, VCPU: 4, DISK_GB: 10 } } });
  t.equal((await call(app, 'DELETE', `/allocations/${C2}`)).status, 204);
  t.equal((await call(app, 'DELETE', `/allocations/${C2}`)).status, 404);
  t.same((await call(app, 'GET', `/allocations/${C2}`)).body, { allocations: {} });
  // Allocations feed candidates: 2 of 4 VCPU used.
  r = await call(app, 'GET', '/allocation_candidates?resources=VCPU:3');
  t.equal(r.body.allocation_requests.length, 0);
  r = await call(app, 'GET', '/allocation_candidates?resources=VCPU:2');
  t.same(r.body.provider_summaries[CN].resources.VCPU, { capacity: 4, used: 2 });
  // Summaries are cached per provider generation: a new allocation must show at once.
  t.equal((await call(app, 'PUT', `/allocations/${C2}`, alloc(CN, { VCPU: 1 }))).status, 204);
  r = await call(app, 'GET', '/allocation_candidates?resources=VCPU:1');
  t.same(r.body.provider_summaries[CN].resources.VCPU, { capacity: 4, used: 3 });
  const generation = (await call(app, 'GET', `/resource_providers/${CN}`)).body.generation;
  t.equal((await call(app, 'PUT', `/resource_providers/${CN}/traits`, { resource_provider_generation: generation, traits: ['HW_CPU_X86_AVX2'] })).status, 200);
  r = await call(app, 'GET', '/allocation_candidates?resources=VCPU:1');
  t.same(r.body.provider_summaries[CN].traits, ['HW_CPU_X86_AVX2'], 'trait change visible');
});

t.test('microversions: 406 above 1.39 (without a code, as Placement), codes only from 1.23, absent header is 1.0', async (t) => {
  const app = await build(t);
  let r = await call(app, 'GET', '/resource_providers', undefined, '1.40');
  t.equal(r.status, 406);
  t.same({ ...r.body.errors[0], request_id: 'x' }, {
    status: 406, title: 'Not Acceptable', max_version: '1.39', min_version: '1.0', request_id: 'x',
    detail: 'The resource could not be generated that was acceptable to your browser (content of type application/json. \n\n Invalid microversion: Unacceptable version header: 1.40',
  });
  const res = await app.inject({ method: 'GET', url: '/allocation_candidates?resources=VCPU:1' });
  t.equal(res.statusCode, 404, 'no header = 1.0, where allocation_candidates does not exist');
  t.equal(res.headers['openstack-api-version'], 'placement 1.0');
  t.notOk('code' in JSON.parse(res.body).errors[0]);
  r = await call(app, 'GET', '/allocation_candidates?resources=VCPU:1', undefined, 'latest');
  t.equal(r.status, 200);
});

t.test('allocations survive a restart (tmp dir store)', async (t) => {
  const dir = t.testdir();
  let store = openSqliteStore(dir);
  let app = await build({ teardown() {} }, {}, store);
  await createProviders(app, [{ uuid: CN, inventories: { VCPU: 4 }, traits: ['CUSTOM_GOLD'], aggregates: [u('agg1')] },
    { uuid: CN2, parent: CN, inventories: { DISK_GB: 10 } }]);
  t.equal((await call(app, 'PUT', `/allocations/${C1}`, alloc(CN, { VCPU: 3 }))).status, 204);
  t.equal((await call(app, 'PUT', `/aggregates/${u('agg1')}/metadata`, { metadata: { 'trait:CUSTOM_GOLD': 'required' } })).status, 200);
  await app.close();
  await store.close();

  store = openSqliteStore(dir);
  app = await build(t, {}, store);
  const r = await call(app, 'GET', `/allocations/${C1}`);
  t.same(r.body.allocations, { [CN]: { generation: 4, resources: { VCPU: 3 } } });
  t.equal(r.body.consumer_generation, 1);
  t.same((await call(app, 'GET', `/resource_providers/${CN}/usages`)).body.usages, { VCPU: 3 });
  t.same((await call(app, 'GET', `/resource_providers/${CN2}`)).body.root_provider_uuid, CN);
  t.equal((await call(app, 'GET', '/traits/CUSTOM_GOLD')).status, 204);
  t.same((await call(app, 'GET', `/aggregates/${u('agg1')}/metadata`)).body, { metadata: { 'trait:CUSTOM_GOLD': 'required' } });
  t.equal((await call(app, 'GET', '/allocation_candidates?resources=VCPU:2')).body.allocation_requests.length, 0, 'usage restored');
});

t.test('metrics: decisions, candidates returned, capacity and usage per resource class', async (t) => {
  const app = await build(t);
  await createProviders(app, [{ uuid: CN, inventories: { VCPU: { total: 4, allocation_ratio: 4 } } }, { uuid: CN2, inventories: { VCPU: 2 } }]);
  await call(app, 'PUT', `/allocations/${C1}`, alloc(CN, { VCPU: 3 }));
  await call(app, 'GET', '/allocation_candidates?resources=VCPU:1');
  const text = (await app.inject({ method: 'GET', url: '/metrics' })).body;
  t.match(text, /berth_placement_capacity_units\{resource_class="VCPU"\} 18\n/);
  t.match(text, /berth_placement_used_units\{resource_class="VCPU"\} 3\n/);
  t.match(text, /berth_placement_candidates_returned_total 2/);
  t.match(text, /berth_decisions_total\{domain="placement",outcome="candidates"\} 1/);
  t.match(text, /berth_decision_duration_seconds_count\{domain="placement"\} 1/);
});

t.test('wrong methods answer 405 and unknown sub-paths 404, in Placement\'s shape', async (t) => {
  const app = await build(t);
  let r = await call(app, 'PATCH', '/resource_providers');
  t.equal(r.status, 405);
  t.equal(r.headers.allow, 'GET, POST');
  t.equal(r.body.errors[0].title, 'Method Not Allowed');
  r = await call(app, 'POST', '/allocation_candidates');
  t.equal(r.status, 405);
  r = await call(app, 'GET', `/resource_providers/${CN}/bogus`);
  t.equal(r.status, 404);
  t.equal(r.body.errors[0].detail, 'The resource could not be found.\n\n   ');
});

t.test('GET / is Placement\'s version document', async (t) => {
  const app = await build(t);
  const r = await call(app, 'GET', '/');
  t.same(r.body, { versions: [{ id: 'v1.0', min_version: '1.0', max_version: '1.39', status: 'CURRENT', links: [{ href: '', rel: 'self' }] }] });
});

t.test('the cached "fits nowhere" bound follows inventory and allocation changes', async (t) => {
  const app = await build(t);
  await createProviders(app, [{ uuid: CN, inventories: { VCPU: 8 } }]);
  const count = async (q: string) => (await call(app, 'GET', `/allocation_candidates?${q}`)).body.allocation_requests.length;
  t.equal(await count('resources=VCPU:100'), 0);
  const gen = (await call(app, 'GET', `/resource_providers/${CN}`)).body.generation;
  await call(app, 'PUT', `/resource_providers/${CN}/inventories`, { resource_provider_generation: gen, inventories: { VCPU: { total: 200 } } });
  t.equal(await count('resources=VCPU:100'), 1, 'larger inventory seen at once');
  await call(app, 'PUT', `/allocations/${C1}`, alloc(CN, { VCPU: 150 }));
  t.equal(await count('resources=VCPU:100'), 0, 'allocation seen at once');
  await call(app, 'DELETE', `/allocations/${C1}`);
  t.equal(await count('resources=VCPU:100'), 1);
});
