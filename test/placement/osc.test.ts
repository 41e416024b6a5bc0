// The OpenStack CLI's calls (osc-placement 4.0), replayed at HTTP level as it sends them: `trait list
// --associated` (associated=True), `resource provider list --required A,B` (required=in:A,B at 1.39) and
// `--resource` with step sizes, `resource provider show --allocations`, `allocation set` (read the consumer
// generation, PUT, read back) at 1.38, `inventory set` with the provider generation, `allocation candidate list`.
import t from 'tap';
import { build } from '../helper.ts';
import { call, u } from './fixtures.ts';

const RP = u('osc-rp');
const RP2 = u('osc-rp2');
const CONSUMER = u('osc-consumer');

t.test('osc-placement against Berth', async (t) => {
  const app = await build(t);
  // resource provider create (POST, then GET the Location).
  let r = await call(app, 'POST', '/resource_providers', { name: 'cn1', uuid: RP });
  t.equal((await app.inject({ method: 'GET', url: new URL(r.headers.location as string).pathname, headers: { 'openstack-api-version': 'placement 1.39' } })).statusCode, 200);
  await call(app, 'POST', '/resource_providers', { name: 'cn2', uuid: RP2 });
  // resource provider inventory set RP --resource VCPU=16 --resource DISK_GB:step_size=10 --resource DISK_GB=1000
  const inv = (await call(app, 'GET', `/resource_providers/${RP}/inventories`)).body;
  r = await call(app, 'PUT', `/resource_providers/${RP}/inventories`, {
    resource_provider_generation: inv.resource_provider_generation,
    inventories: { VCPU: { total: 16 }, DISK_GB: { step_size: 10, total: 1000 } },
  });
  t.equal(r.status, 200);
  await call(app, 'PUT', `/resource_providers/${RP2}/inventories`, { resource_provider_generation: 0, inventories: { VCPU: { total: 4 }, DISK_GB: { total: 100 } } });
  // trait create, resource provider trait set.
  await call(app, 'PUT', '/traits/CUSTOM_GOLD');
  await call(app, 'PUT', '/traits/CUSTOM_SILVER');
  const gen = (await call(app, 'GET', `/resource_providers/${RP}/traits`)).body.resource_provider_generation;
  await call(app, 'PUT', `/resource_providers/${RP}/traits`, { traits: ['CUSTOM_GOLD'], resource_provider_generation: gen });
  // trait list --associated
  r = await call(app, 'GET', '/traits?associated=True');
  t.same(r.body.traits, ['CUSTOM_GOLD']);
  // resource provider list --required CUSTOM_GOLD,CUSTOM_SILVER (any of) and --forbidden
  r = await call(app, 'GET', '/resource_providers?required=in:CUSTOM_GOLD,CUSTOM_SILVER');
  t.same(r.body.resource_providers.map((p: { name: string }) => p.name), ['cn1']);
  r = await call(app, 'GET', '/resource_providers?required=in:CUSTOM_GOLD,CUSTOM_SILVER&required=!CUSTOM_GOLD');
  t.same(r.body.resource_providers, []);
  r = await call(app, 'GET', '/resource_providers?required=in:CUSTOM_GOLD,CUSTOM_SILVER', undefined, '1.38');
  t.equal(r.status, 400, 'the CLI checks 1.39 itself; Placement refuses in: before it too');
  // resource provider list --resource DISK_GB=15: cn1's step_size is 10, cn2 has no step
  r = await call(app, 'GET', '/resource_providers?resources=DISK_GB:15');
  t.same(r.body.resource_providers.map((p: { name: string }) => p.name), ['cn2']);
  r = await call(app, 'GET', '/resource_providers?resources=DISK_GB:20,VCPU:5');
  t.same(r.body.resource_providers.map((p: { name: string }) => p.name), ['cn1']);
  // resource provider allocation set CONSUMER --allocation rp=RP,VCPU=2,DISK_GB=20 --project-id --user-id --consumer-type
  let current = (await call(app, 'GET', `/allocations/${CONSUMER}`)).body;
  t.notOk('consumer_generation' in current, 'a new consumer has none; the CLI sends null');
  r = await call(app, 'PUT', `/allocations/${CONSUMER}`, {
    allocations: { [RP]: { resources: { VCPU: 2, DISK_GB: 20 } } },
    consumer_generation: current.consumer_generation ?? null, project_id: 'p1', user_id: 'u1', consumer_type: 'INSTANCE',
  });
  t.equal(r.status, 204);
  current = (await call(app, 'GET', `/allocations/${CONSUMER}`)).body;
  t.same(current, {
    allocations: { [RP]: { resources: { VCPU: 2, DISK_GB: 20 }, generation: 3 } },
    project_id: 'p1', user_id: 'u1', consumer_generation: 1, consumer_type: 'INSTANCE',
  });
  // resource provider show RP --allocations
  r = await call(app, 'GET', `/resource_providers/${RP}`);
  t.equal(r.body.generation, 3);
  r = await call(app, 'GET', `/resource_providers/${RP}/allocations`);
  t.same(r.body, { allocations: { [CONSUMER]: { resources: { VCPU: 2, DISK_GB: 20 }, consumer_generation: 1 } }, resource_provider_generation: 3 });
  // resource usage show p1; resource provider usage show RP
  t.same((await call(app, 'GET', '/usages?project_id=p1')).body.usages, { INSTANCE: { consumer_count: 1, VCPU: 2, DISK_GB: 20 } });
  t.same((await call(app, 'GET', `/resource_providers/${RP}/usages`)).body.usages, { VCPU: 2, DISK_GB: 20 });
  // allocation candidate list --resource VCPU=1 --required CUSTOM_GOLD
  r = await call(app, 'GET', '/allocation_candidates?resources=VCPU:1&required=CUSTOM_GOLD');
  t.equal(r.body.allocation_requests.length, 1);
  t.same(r.body.provider_summaries[RP].traits, ['CUSTOM_GOLD']);
  // An allocation with an empty resources object is refused, and changes nothing.
  r = await call(app, 'PUT', `/allocations/${CONSUMER}`, {
    allocations: { [RP]: { resources: {} } }, consumer_generation: 1, project_id: 'p1', user_id: 'u1', consumer_type: 'INSTANCE',
  });
  t.equal(r.status, 400);
  t.match(r.body.errors[0].detail, "JSON does not validate: {} does not have enough properties");
  t.equal((await call(app, 'GET', `/resource_providers/${RP}`)).body.generation, 3, 'the provider generation did not move');
  // resource provider allocation unset CONSUMER --provider RP: read, drop the provider, PUT the rest (here: none).
  r = await call(app, 'PUT', `/allocations/${CONSUMER}`, { allocations: {}, consumer_generation: 1, project_id: 'p1', user_id: 'u1', consumer_type: 'INSTANCE' });
  t.equal(r.status, 204);
  // resource provider inventory delete RP --resource-class DISK_GB; resource provider delete RP
  t.equal((await call(app, 'DELETE', `/resource_providers/${RP}/inventories/DISK_GB`)).status, 204);
  t.equal((await call(app, 'DELETE', `/resource_providers/${RP}`)).status, 204);
  r = await call(app, 'DELETE', `/resource_providers/${RP}`);
  t.match(r.body.errors[0].detail, `No resource provider with uuid ${RP} found for delete`);
});
