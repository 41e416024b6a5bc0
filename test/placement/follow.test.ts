// The Placement service follows the store: a record committed by another writer (here straight through the
// store, as another instance's commit arrives) changes what the service answers once the feed delivers it, in
// Placement's order; a store that cannot be reached answers 503 with Retry-After and changes nothing.
import t from 'tap';
import { PLACEMENT_KINDS, PlacementService } from '../../src/placement/service.ts';
import { openSqliteStore, SqliteStore } from '../../src/store/sqlite.ts';
import { StoreUnavailableError } from '../../src/store/store.ts';
import { build } from '../helper.ts';
import { call, createProviders, u } from './fixtures.ts';

const OPTIONS = { values: { enable_isolated_aggregate_filtering: false, randomize_allocation_candidates: false } };
const INV = { total: 4, reserved: 0, min_unit: 1, max_unit: 4, step_size: 1, allocation_ratio: 1 };

t.test('records another writer commits reach the answers through the feed', async (t) => {
  const store = openSqliteStore(':memory:');
  t.teardown(() => store.close());
  const service = await PlacementService.open(store, OPTIONS);
  t.teardown(() => service.close());
  t.ok(PLACEMENT_KINDS.includes('placement.trait'));

  await service.createTrait('CUSTOM_MINE');
  const rp = u('fed-host');
  // Another instance: a trait created after ours, a provider with inventory, a claim on it.
  await store.commit([
    { kind: 'placement.trait', key: 'CUSTOM_THEIRS', value: { name: 'CUSTOM_THEIRS', seq: 10 } },
    { kind: 'placement.rp', key: rp, value: { uuid: rp, name: 'fed', parent_provider_uuid: null, generation: 1, inventories: { VCPU: INV }, traits: ['CUSTOM_THEIRS'], aggregates: [], seq: 11 } },
    { kind: 'placement.consumer', key: u('vm'), value: { uuid: u('vm'), project_id: 'p', user_id: 'u', consumer_type: null, generation: 1, allocations: { [rp]: { VCPU: 3 } } } },
    { kind: 'placement.seq', key: 'next', value: { next: 12 } },
  ]);
  await store.catchUp();
  const custom = (names: string[]) => names.filter((n) => n.startsWith('CUSTOM_'));
  t.same(custom(service.listTraits([])), ['CUSTOM_MINE', 'CUSTOM_THEIRS']);
  t.same(service.providerUsages(service.provider(rp)), { VCPU: 3 });
  t.equal(service.provider(rp).generation, 1, "the API generation is the record's, not the store's");

  // A trait older than the newest one (created elsewhere before it) takes its place in the order.
  await store.commit([{ kind: 'placement.trait', key: 'CUSTOM_OLDER', value: { name: 'CUSTOM_OLDER', seq: 9 } }]);
  await store.catchUp();
  t.same(custom(service.listTraits([])), ['CUSTOM_MINE', 'CUSTOM_OLDER', 'CUSTOM_THEIRS']);

  // The next creation here continues after everything seen, and the claim is checked against the fed usage.
  await service.createResourceClass('CUSTOM_NEXT', true);
  t.equal((await store.get<{ seq: number }>('placement.rc', 'CUSTOM_NEXT'))!.value.seq, 12);
  await t.rejects(service.setAllocations(new Map([[u('vm2'), {
    allocations: { [rp]: { resources: { VCPU: 2 } } }, consumer_generation: null, project_id: 'p', user_id: 'u',
  }]]), 39, true), { status: 409, message: /would exceed the capacity/ });

  // A deletion elsewhere: gone here too.
  await store.commit([{ kind: 'placement.consumer', key: u('vm'), value: null }]);
  await store.catchUp();
  t.same(service.providerUsages(service.provider(rp)), { VCPU: 0 });
});

t.test('a second service on the same store loads what the first wrote, in the same order', async (t) => {
  const store = openSqliteStore(':memory:');
  t.teardown(() => store.close());
  const first = await PlacementService.open(store, OPTIONS);
  t.teardown(() => first.close());
  await first.createResourceClass('CUSTOM_B', true);
  await first.createResourceClass('CUSTOM_A', true);
  await first.renameResourceClass('CUSTOM_B', 'CUSTOM_C');
  const parent = await first.createProvider({ name: 'parent', uuid: u('parent') });
  await first.createProvider({ name: 'child', uuid: u('child'), parent_provider_uuid: parent.uuid });
  const second = await PlacementService.open(store, OPTIONS);
  t.teardown(() => second.close());
  const customClasses = (s: PlacementService) => [...s.model.resourceClasses].filter((rc) => rc.startsWith('CUSTOM_'));
  t.same(customClasses(first), ['CUSTOM_C', 'CUSTOM_A'], 'the renamed class keeps its place');
  t.same(customClasses(second), ['CUSTOM_C', 'CUSTOM_A']);
  t.equal(second.provider(u('child')).parent?.uuid, u('parent'));
});

t.test('the store unreachable: 503 with Retry-After in Placement\'s shape, nothing changed', async (t) => {
  const sync = new SqliteStore(':memory:');
  const engine = sync.async();
  const commit = engine.commit.bind(engine);
  let down = false;
  engine.commit = (writes, expect) => (down ? Promise.reject(new StoreUnavailableError('connection refused', { retryAfterSeconds: 2 })) : commit(writes, expect));
  const app = await build(t, {}, engine);
  const rp = u('outage-host');
  await createProviders(app, [{ uuid: rp, inventories: { VCPU: 4 } }]);
  down = true;
  const r = await call(app, 'PUT', `/allocations/${u('vm')}`, {
    allocations: { [rp]: { resources: { VCPU: 1 } } }, consumer_generation: null, project_id: 'p', user_id: 'u', consumer_type: 'INSTANCE',
  });
  t.equal(r.status, 503);
  t.equal(r.headers['retry-after'], '2');
  t.match(r.body.errors[0], { status: 503, title: 'Service Unavailable', detail: /store is unreachable/ });
  t.equal((await call(app, 'PUT', '/traits/CUSTOM_DOWN')).status, 503);
  down = false;
  const usages = await call(app, 'GET', `/resource_providers/${rp}/usages`);
  t.same(usages.body, { resource_provider_generation: 1, usages: { VCPU: 0 } }, 'no claim, no generation change');
  t.equal((await call(app, 'GET', '/traits/CUSTOM_DOWN')).status, 404);
});
