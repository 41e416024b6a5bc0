// Placement's write semantics: which writes move a provider's generation, replace_all's capacity check (each
// allocation against min_unit/max_unit/step_size, the running sum per provider and class against the capacity),
// its consumer bookkeeping, inventory rules by microversion, POST /reshaper, usages by consumer type, and the
// orders Placement lists things in.
import t from 'tap';
import { build } from '../helper.ts';
import { call, createProviders, u } from './fixtures.ts';

const RP = u('w-rp');
const RP2 = u('w-rp2');
const C1 = u('w-c1');
const C2 = u('w-c2');
const gen = async (app: Awaited<ReturnType<typeof build>>, rp = RP) => (await call(app, 'GET', `/resource_providers/${rp}`)).body.generation as number;
const claim = (allocations: Record<string, Record<string, number>>, consumerGeneration: number | null, type = 'INSTANCE') => ({
  allocations: Object.fromEntries(Object.entries(allocations).map(([rp, resources]) => [rp, { resources }])),
  consumer_generation: consumerGeneration, project_id: 'proj', user_id: 'user', consumer_type: type,
});
const detail = (r: { body: { errors: Array<{ detail: string }> } }) => r.body.errors[0]!.detail;

t.test('generations: what moves them and what does not', async (t) => {
  const app = await build(t);
  await createProviders(app, [{ uuid: RP }, { uuid: RP2, inventories: { VCPU: 8 } }]);
  await call(app, 'PUT', `/resource_providers/${RP}`, { name: 'renamed' });
  t.equal(await gen(app), 0, 'rename: no bump');
  let r = await call(app, 'POST', `/resource_providers/${RP}/inventories`, { resource_class: 'VCPU', total: 8 });
  t.equal(r.status, 201, 'POST inventories takes no generation');
  t.equal(r.body.resource_provider_generation, 1);
  r = await call(app, 'POST', `/resource_providers/${RP}/inventories`, { resource_class: 'VCPU', total: 8 });
  t.equal(r.status, 409);
  await call(app, 'PUT', `/resource_providers/${RP}/traits`, { resource_provider_generation: 1, traits: ['HW_CPU_X86_AVX2'] });
  r = await call(app, 'PUT', `/resource_providers/${RP}/traits`, { resource_provider_generation: 2, traits: ['HW_CPU_X86_AVX2'] });
  t.equal(r.body.resource_provider_generation, 2, 'the same traits again: no bump');
  await call(app, 'DELETE', `/resource_providers/${RP2}/traits`);
  t.equal(await gen(app, RP2), 1, 'removing no traits: no bump');
  t.equal((await call(app, 'PUT', `/allocations/${C1}`, claim({ [RP]: { VCPU: 1 } }, null))).status, 204);
  t.equal(await gen(app), 3);
  t.equal((await call(app, 'PUT', `/allocations/${C1}`, claim({ [RP2]: { VCPU: 1 } }, 1))).status, 204);
  t.equal(await gen(app), 3, 'moving a consumer away does not bump the provider it leaves');
  t.equal(await gen(app, RP2), 2);
  t.equal((await call(app, 'DELETE', `/allocations/${C1}`)).status, 204);
  t.equal(await gen(app, RP2), 2, 'DELETE /allocations bumps nothing');
  t.equal((await call(app, 'PUT', `/allocations/${C2}`, claim({ [RP2]: { VCPU: 1 } }, null))).status, 204);
  t.equal((await call(app, 'PUT', `/allocations/${C2}`, { ...claim({}, 1) })).status, 204);
  t.equal(await gen(app, RP2), 4, 'emptying allocations by PUT bumps the providers they were on');
});

t.test('capacity: max_unit per allocation, capacity against the sum; several consumers on one provider', async (t) => {
  const app = await build(t);
  await createProviders(app, [{ uuid: RP, inventories: { VCPU: { total: 8, max_unit: 4 }, DISK_GB: { total: 100, step_size: 10, min_unit: 10 } } }]);
  // Nova's resize to the same host: old flavor on the migration, new flavor on the instance, 4 + 4 on max_unit 4.
  let r = await call(app, 'POST', '/allocations', { [C1]: claim({ [RP]: { VCPU: 4 } }, null), [C2]: claim({ [RP]: { VCPU: 4 } }, null, 'MIGRATION') });
  t.equal(r.status, 204);
  r = await call(app, 'POST', '/allocations', { [u('third')]: claim({ [RP]: { VCPU: 1 } }, null) });
  t.equal(r.status, 409);
  t.match(detail(r), `Unable to allocate inventory: Unable to create allocation for 'VCPU' on resource provider '${RP}'. The requested amount would exceed the capacity.`);
  r = await call(app, 'PUT', `/allocations/${u('third')}`, claim({ [RP]: { VCPU: 5 } }, null));
  t.match(detail(r), 'The requested amount would violate inventory constraints.', 'one allocation above max_unit');
  r = await call(app, 'PUT', `/allocations/${u('third')}`, claim({ [RP]: { DISK_GB: 15 } }, null));
  t.match(detail(r), 'violate inventory constraints', 'step_size');
  r = await call(app, 'PUT', `/allocations/${u('third')}`, claim({ [RP]: { MEMORY_MB: 1 } }, null));
  t.match(detail(r), `Unable to allocate inventory: Inventory for 'MEMORY_MB' on resource provider '${RP}' invalid.`);
  r = await call(app, 'PUT', `/allocations/${u('third')}`, claim({ [RP]: { CUSTOM_NOPE: 1 } }, null));
  t.equal(r.status, 400);
  t.match(detail(r), `Unable to allocate inventory for consumer ${u('third')}: No such resource class CUSTOM_NOPE.`);
  r = await call(app, 'PUT', `/allocations/${u('third')}`, claim({ [u('ghost')]: { VCPU: 1 } }, null));
  t.match(detail(r), `Allocation for resource provider '${u('ghost')}' that does not exist.`);
  t.same((await call(app, 'GET', `/allocations/${u('third')}`)).body, { allocations: {} }, 'a refused write leaves no consumer');
  // Replacing both consumers' allocations at once releases theirs first.
  r = await call(app, 'POST', '/allocations', { [C1]: claim({ [RP]: { VCPU: 2 } }, 1), [C2]: claim({}, 1, 'MIGRATION') });
  t.equal(r.status, 204);
  r = await call(app, 'GET', `/resource_providers/${RP}/usages`);
  t.same(r.body.usages, { VCPU: 2, DISK_GB: 0 });
  t.same((await call(app, 'GET', `/allocations/${C2}`)).body, { allocations: {} }, 'a consumer left without allocations is gone');
});

t.test('consumer generations: expected is the stored one; a consumer emptied before it existed stays at 0', async (t) => {
  const app = await build(t);
  await createProviders(app, [{ uuid: RP, inventories: { VCPU: 8 } }]);
  await call(app, 'PUT', `/allocations/${C1}`, claim({ [RP]: { VCPU: 1 } }, null));
  let r = await call(app, 'PUT', `/allocations/${C1}`, claim({ [RP]: { VCPU: 1 } }, 5));
  t.match(detail(r), 'consumer generation conflict - expected 1 but got 5');
  t.equal(r.body.errors[0].code, 'placement.concurrent_update');
  r = await call(app, 'PUT', `/allocations/${C2}`, claim({ [RP]: { VCPU: 1 } }, 0));
  t.match(detail(r), 'consumer generation conflict - expected null but got 0');
  t.equal((await call(app, 'PUT', `/allocations/${C2}`, claim({}, null))).status, 204);
  r = await call(app, 'PUT', `/allocations/${C2}`, claim({ [RP]: { VCPU: 1 } }, null));
  t.match(detail(r), 'consumer generation conflict - expected 0 but got None', 'the empty PUT created the consumer');
  t.equal((await call(app, 'PUT', `/allocations/${C2}`, claim({ [RP]: { VCPU: 1 } }, 0))).status, 204);
});

t.test('inventories: reserved equal to total from 1.26; in-use classes in id order; Placement’s messages', async (t) => {
  const app = await build(t);
  await createProviders(app, [{ uuid: RP }]);
  let r = await call(app, 'PUT', `/resource_providers/${RP}/inventories`, { resource_provider_generation: 0, inventories: { VCPU: { total: 4, reserved: 4 } } }, '1.25');
  t.match(detail(r), `Unable to update inventory for resource provider ${RP}: Invalid inventory for 'VCPU' on resource provider '${RP}'. The reserved value is greater than or equal to total.`);
  r = await call(app, 'PUT', `/resource_providers/${RP}/inventories`, { resource_provider_generation: 0, inventories: { VCPU: { total: 4, reserved: 4 } } }, '1.26');
  t.equal(r.status, 200);
  r = await call(app, 'PUT', `/resource_providers/${RP}/inventories`, {
    resource_provider_generation: 1, inventories: { DISK_GB: { total: 10 }, VCPU: { total: 4 }, MEMORY_MB: { total: 10, min_unit: 8, max_unit: 2 } },
  });
  t.equal(r.status, 200, 'min_unit above max_unit is not refused (Placement does not check it)');
  await call(app, 'PUT', `/allocations/${C1}`, claim({ [RP]: { DISK_GB: 1, VCPU: 1 } }, null));
  r = await call(app, 'PUT', `/resource_providers/${RP}/inventories`, { resource_provider_generation: 3, inventories: {} });
  t.match(detail(r), `update conflict: Inventory for 'VCPU, DISK_GB' on resource provider '${RP}' in use.`);
  t.equal(r.body.errors[0].code, 'placement.inventory.inuse');
  r = await call(app, 'DELETE', `/resource_providers/${RP}/inventories`);
  t.match(detail(r), `Inventory for 'VCPU, DISK_GB' on resource provider '${RP}' in use.`);
  r = await call(app, 'PUT', `/resource_providers/${RP}/inventories/PCPU`, { resource_provider_generation: 3, total: 2 });
  t.match(detail(r), `No inventory record with resource class for resource provider ${RP}: No inventory of class PCPU found.`);
  r = await call(app, 'PUT', `/resource_providers/${RP}/inventories/CUSTOM_NOPE`, { resource_provider_generation: 3, total: 2 });
  t.equal(r.status, 404);
  r = await call(app, 'DELETE', `/resource_providers/${RP}/inventories/PCPU`);
  t.match(detail(r), 'No inventory of class PCPU found for delete: No inventory of class PCPU found for delete');
  r = await call(app, 'GET', `/resource_providers/${u('none')}/inventories`);
  t.match(detail(r), `No resource provider with uuid ${u('none')} found : No resource provider with uuid ${u('none')} found`);
});

t.test('POST /reshaper moves inventory and allocations to a child in one step', async (t) => {
  const app = await build(t);
  await createProviders(app, [{ uuid: RP, inventories: { VCPU: 8, VGPU: 4 } }, { uuid: RP2, parent: RP }]);
  await call(app, 'PUT', `/allocations/${C1}`, claim({ [RP]: { VCPU: 2, VGPU: 1 } }, null));
  const body = (rpGen: number, childGen: number, consumerGen: number) => ({
    inventories: {
      [RP]: { resource_provider_generation: rpGen, inventories: { VCPU: { total: 8 } } },
      [RP2]: { resource_provider_generation: childGen, inventories: { VGPU: { total: 4 } } },
    },
    allocations: { [C1]: claim({ [RP]: { VCPU: 2 }, [RP2]: { VGPU: 1 } }, consumerGen) },
  });
  let r = await call(app, 'POST', '/reshaper', body(1, 0, 1), '1.37');
  t.match(detail(r), "'consumer_type' was unexpected", 'consumer types are 1.38');
  r = await call(app, 'POST', '/reshaper', body(1, 0, 1));
  t.match(detail(r), `resource provider generation conflict for provider ${RP}: actual: 2, given: 1`);
  r = await call(app, 'POST', '/reshaper', body(2, 0, 1));
  t.equal(r.status, 204, JSON.stringify(r.body ?? ''));
  r = await call(app, 'GET', `/resource_providers/${RP}/inventories`);
  t.same(Object.keys(r.body.inventories), ['VCPU']);
  t.same((await call(app, 'GET', `/resource_providers/${RP2}/usages`)).body.usages, { VGPU: 1 });
  t.same((await call(app, 'GET', `/allocations/${C1}`)).body.consumer_generation, 2);
  t.equal(await gen(app), 5, 'the provider with new inventories and allocations: three steps');
  t.equal(await gen(app, RP2), 3);
  r = await call(app, 'POST', '/reshaper', {
    inventories: { [RP2]: { resource_provider_generation: (await gen(app, RP2)), inventories: {} } }, allocations: {},
  });
  t.equal(r.status, 409, 'an allocated class cannot go');
  t.match(detail(r), `update conflict: Inventory for 'VGPU' on resource provider '${RP2}' in use.`);
  t.equal(r.body.errors[0].code, 'placement.inventory.inuse');
});

t.test('usages by consumer type (1.38): grouped, all, unknown, one type', async (t) => {
  const app = await build(t);
  await createProviders(app, [{ uuid: RP, inventories: { VCPU: 16, MEMORY_MB: 8192 } }]);
  await call(app, 'PUT', `/allocations/${C1}`, claim({ [RP]: { VCPU: 2, MEMORY_MB: 512 } }, null));
  await call(app, 'PUT', `/allocations/${C2}`, claim({ [RP]: { VCPU: 1 } }, null, 'MIGRATION'));
  await call(app, 'PUT', `/allocations/${u('old')}`, { allocations: { [RP]: { resources: { VCPU: 4 } } }, project_id: 'proj', user_id: 'user', consumer_generation: null }, '1.37');
  const usages = async (qs: string, mv = '1.39') => (await call(app, 'GET', `/usages?project_id=proj${qs}`, undefined, mv)).body.usages;
  t.same(await usages('', '1.37'), { VCPU: 7, MEMORY_MB: 512 });
  t.same(await usages(''), {
    INSTANCE: { consumer_count: 1, VCPU: 2, MEMORY_MB: 512 }, MIGRATION: { consumer_count: 1, VCPU: 1 }, unknown: { consumer_count: 1, VCPU: 4 },
  });
  t.same(await usages('&consumer_type=all'), { all: { consumer_count: 3, VCPU: 7, MEMORY_MB: 512 } });
  t.same(await usages('&consumer_type=unknown'), { unknown: { consumer_count: 1, VCPU: 4 } });
  t.same(await usages('&consumer_type=MIGRATION&user_id=user'), { MIGRATION: { consumer_count: 1, VCPU: 1 } });
  t.same(await usages('&user_id=someone-else'), {});
});

t.test('orders: traits by id (standard first, custom by creation), resource classes by id', async (t) => {
  const app = await build(t);
  await createProviders(app, [{ uuid: RP }]);
  for (const trait of ['CUSTOM_Z', 'CUSTOM_A']) await call(app, 'PUT', `/traits/${trait}`);
  await call(app, 'PUT', `/resource_providers/${RP}/traits`, { resource_provider_generation: 0, traits: ['CUSTOM_A', 'STORAGE_DISK_SSD', 'CUSTOM_Z', 'HW_CPU_X86_AVX2'] });
  t.same((await call(app, 'GET', `/resource_providers/${RP}/traits`)).body.traits, ['HW_CPU_X86_AVX2', 'STORAGE_DISK_SSD', 'CUSTOM_Z', 'CUSTOM_A']);
  t.same((await call(app, 'GET', '/traits?name=startswith:CUSTOM_')).body.traits, ['CUSTOM_Z', 'CUSTOM_A']);
  t.same((await call(app, 'GET', '/traits?associated=True&name=in:CUSTOM_A,HW_CPU_X86_SSE')).body.traits, ['CUSTOM_A'], 'associated in any case');
  t.equal((await call(app, 'GET', '/traits')).body.traits.length, 345 + 2, 'os-traits 2.9.0 and the two custom ones');
  await call(app, 'PUT', '/resource_classes/CUSTOM_Y');
  const classes = (await call(app, 'GET', '/resource_classes')).body.resource_classes.map((c: { name: string }) => c.name);
  t.same(classes.slice(0, 3), ['VCPU', 'MEMORY_MB', 'DISK_GB']);
  t.equal(classes.at(-1), 'CUSTOM_Y');
  t.equal(classes.length, 22);
});
