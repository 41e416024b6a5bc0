// The service follows the store: what another writer commits (here a second service on the same embedded engine)
// reaches this one through the change feed alone and changes what it answers — a report, a claim, a release, a
// removal; and an unreachable database changes nothing. Instances on PostgreSQL racing for capacity: postgres.test.ts.
import t, { type Test } from 'tap';
import { parseConfig } from '../../src/config.ts';
import { openSqliteStore } from '../../src/store/sqlite.ts';
import { StoreUnavailableError, type AsyncStore } from '../../src/store/store.ts';
import { VolumesService } from '../../src/volumes/service.ts';

const SETTINGS = parseConfig({ data_dir: ':memory:' });
const REPORT = { pools: [{ pool_name: 'a', total_capacity_gb: 100, free_capacity_gb: 50, thick_provisioning_support: true }] };

async function twoServices(t: Test) {
  // Two writers on one engine stand for two instances on one database: the store says it is shared, as PostgreSQL's
  // does (a claim then writes its pool's record too, which makes competing claims collide).
  const store = Object.assign(openSqliteStore(':memory:'), { shared: true });
  const here = await VolumesService.open(SETTINGS, store, Date.now);
  const other = await VolumesService.open(SETTINGS, store, Date.now);
  t.teardown(async () => {
    here.close();
    other.close();
    await store.close();
  });
  return { store, here, other };
}

t.test('another writer\'s report, claim, release and removal change what this service answers', async (t) => {
  const { store, here, other } = await twoServices(t);
  const reported = await other.applyReport('h@x', REPORT);
  await store.catchUp();
  t.same(here.listPools({ filters: {} }).map((p) => p.name), ['h@x#a'], 'the report is here');
  t.equal(here.pool('h@x#a')!.generation, reported.pools[0]!.generation, 'with the generation the reporter answered');

  const placed = await other.schedule({ id: 'v', size: 5 }, { dryRun: false, explain: false });
  t.equal(placed.outcome, 'placed');
  await store.catchUp();
  t.same(here.getVolume('v'), other.getVolume('v'), 'the volume is here');
  t.same(here.poolDetail(here.pool('h@x#a')!), other.poolDetail(other.pool('h@x#a')!), 'and the same pool figures');
  t.match(here.poolDetail(here.pool('h@x#a')!), { allocated_capacity_gb: 5, current: { free_capacity_gb: 45 } });
  await t.rejects(here.schedule({ id: 'v', size: 1 }, { dryRun: false, explain: false }), { code: 'VOLUME_EXISTS' });
  t.same(here.listPools({ size: 46, filters: {} }), [], 'a decision here sees the claim made there');

  await other.deleteVolume('v');
  await store.catchUp();
  t.same(here.listVolumes(), []);
  t.equal(here.pool('h@x#a')!.allocated, 0, 'released here too');

  await other.deleteBackend('h@x');
  await store.catchUp();
  t.same(here.candidates, [], 'the backend is gone here');
  t.same(here.listBackends(), []);
});

t.test('a claim decided on memory the other writer changed conflicts, catches up and decides again', async (t) => {
  const { store, here, other } = await twoServices(t);
  await here.applyReport('h@x', { pools: [{ pool_name: 'a', total_capacity_gb: 100, free_capacity_gb: 10, thick_provisioning_support: true }] });
  await store.catchUp();
  const thick = { volume_type: { extra_specs: { 'provisioning:type': 'thick' } } };
  const [a, b] = await Promise.all([
    here.schedule({ id: 'a', size: 6, ...thick }, { dryRun: false, explain: false }),
    other.schedule({ id: 'b', size: 6, ...thick }, { dryRun: false, explain: false }),
  ]);
  t.same([a.outcome, b.outcome].sort(), ['no_valid_backend', 'placed'], 'one takes the room, the other is refused');
  await store.catchUp();
  t.equal(here.pool('h@x#a')!.allocated, 6);
  t.equal(other.pool('h@x#a')!.allocated, 6);
});

t.test('a report here keeps the figures of claims made there, and both keep one candidate order', async (t) => {
  const { store, here, other } = await twoServices(t);
  await here.applyReport('h@x', REPORT);
  await store.catchUp();
  await other.schedule({ id: 'v', size: 5 }, { dryRun: false, explain: false });
  // Without waiting for the feed: if the claim has not arrived here, the report's expectation on the pool record
  // conflicts, and the report catches up and is made again.
  const again = await here.applyReport('h@x', { pools: [{ ...REPORT.pools[0]!, free_capacity_gb: 45 }] });
  t.equal(again.pools.length, 1);
  await store.catchUp();
  for (const service of [here, other]) {
    t.match(service.poolDetail(service.pool('h@x#a')!), { allocated_capacity_gb: 5, current: { free_capacity_gb: 45 } });
  }
  // Two first reports at once (each instance gives its backend the next order): one order everywhere.
  await Promise.all([here.applyReport('h@z', REPORT), other.applyReport('h@y', REPORT)]);
  await store.catchUp();
  t.same(here.candidates.map((p) => p.name), other.candidates.map((p) => p.name));
});

t.test('an unreachable database refuses the write and changes nothing in memory', async (t) => {
  const engine = openSqliteStore(':memory:');
  let down = false;
  // The embedded engine with a switch: while down, every commit is refused as PostgreSQL's store refuses it.
  const store: AsyncStore = {
    location: engine.location,
    instanceId: engine.instanceId,
    shared: false,
    load: (kind) => engine.load(kind),
    get: (kind, key) => engine.get(kind, key),
    snapshot: (kinds) => engine.snapshot(kinds),
    sequence: () => engine.sequence(),
    subscribe: (fromSeq, listener) => engine.subscribe(fromSeq, listener),
    catchUp: () => engine.catchUp(),
    status: () => engine.status(),
    close: () => engine.close(),
    commit: async (writes, expect) => {
      if (down) throw new StoreUnavailableError('the database is unreachable', { retryAfterSeconds: 2 });
      return engine.commit(writes, expect);
    },
  };
  const service = await VolumesService.open(SETTINGS, store, Date.now);
  t.teardown(async () => {
    service.close();
    await engine.close();
  });
  await service.applyReport('h@x', REPORT);
  await service.schedule({ id: 'v', size: 5 }, { dryRun: false, explain: false });
  const before = JSON.stringify([service.poolDetail(service.pool('h@x#a')!), service.listVolumes(), service.listBackends()]);
  down = true;
  await t.rejects(service.schedule({ id: 'w', size: 5 }, { dryRun: false, explain: false }), StoreUnavailableError);
  await t.rejects(service.deleteVolume('v'), StoreUnavailableError);
  await t.rejects(service.applyReport('h@x', { pools: [{ ...REPORT.pools[0]!, free_capacity_gb: 1 }] }), StoreUnavailableError);
  await t.rejects(service.deleteBackend('h@x'), StoreUnavailableError);
  t.equal(JSON.stringify([service.poolDetail(service.pool('h@x#a')!), service.listVolumes(), service.listBackends()]), before);
  down = false;
  t.equal((await service.schedule({ id: 'w', size: 5 }, { dryRun: false, explain: false })).outcome, 'placed', 'and writes again once it is back');
});
