// Several instances on one store: each service follows the others' writes through the change feed, and claims
// racing for the same disk or the same volume are arbitrated by the database (exactly one commits, the other
// decides again). The cross-instance cases need PostgreSQL (two origins on one database); the feed's effect on one
// service's answers is also shown on the embedded store.
import t, { type Test } from 'tap';
import type { NodeReport, VolumeSpec } from '../../src/replicas/model.ts';
import { ReplicaService, type ScheduleOptions } from '../../src/replicas/service.ts';
import { openPostgresStore, type PostgresStore } from '../../src/store/postgres.ts';
import { openSqliteStore } from '../../src/store/sqlite.ts';
import { StoreConflictError, type AsyncStore } from '../../src/store/store.ts';
import { createTestDatabase, requirePostgres } from '../store/postgres-helper.ts';
import { GiB, settings, volume } from './fixtures.ts';

const NOW = Date.parse('2026-12-01T09:30:00.000Z');
const CLAIM: ScheduleOptions = { dryRun: false, explain: false, now: NOW, staleAfterSeconds: 0 };

/** A node with one disk of `size` bytes (the scheduling space condition then takes `size` bytes of replicas). */
function report(zone: string, size = 100 * GiB, tags: string[] = []): NodeReport {
  return {
    zone, region: '', tags, cordoned: false, ready: true, allowScheduling: true, evictionRequested: false,
    disks: { d1: { path: '/d1', type: 'filesystem', tags: [], allowScheduling: true, evictionRequested: false, storageMaximum: size, storageAvailable: size, storageReserved: 0, storageScheduled: 0 } },
  };
}

async function service(t: Test, store: AsyncStore): Promise<ReplicaService> {
  const s = await ReplicaService.open(store, { values: Object.freeze(settings()) });
  t.teardown(() => s.close());
  return s;
}

/** Counts the conflicts the store refused (the claims that had to decide again). */
function countConflicts(store: AsyncStore): () => number {
  let conflicts = 0;
  const commit = store.commit.bind(store);
  (store as { commit: AsyncStore['commit'] }).commit = async (writes, expect) => {
    try {
      return await commit(writes, expect);
    } catch (err) {
      if (err instanceof StoreConflictError) conflicts++;
      throw err;
    }
  };
  return () => conflicts;
}

const scheduled = (s: ReplicaService, node: string) => s.node(node)!.disks[0]!.storageScheduled;

t.test('a change committed elsewhere reaches the service through the feed and changes its answers', async (t) => {
  const store = openSqliteStore(':memory:');
  t.teardown(() => store.close());
  const s = await service(t, store);
  // Written past the service, as another instance's commit would arrive: only the feed can tell it.
  await store.commit([{ kind: 'replicas.node', key: 'a', value: { report: report('z1', 20 * GiB), reportedAt: NOW } }]);
  await store.catchUp();
  t.equal(s.node('a')?.zone, 'z1');
  const first = await s.schedule(volume({ name: 'v', size: 10 * GiB }), [], CLAIM);
  t.equal(first.outcome, 'placed');
  const r = first.replicas[0]!;
  await store.commit([
    { kind: 'replicas.replica', key: r.name, value: null },
    { kind: 'replicas.node', key: 'a', value: { report: report('z2', 20 * GiB), reportedAt: NOW } },
  ]);
  await store.catchUp();
  t.same(s.replicas(), [], 'the replica deleted elsewhere is gone');
  t.equal(s.node('a')?.zone, 'z2', 'the new report is what the service shows');
  t.equal(scheduled(s, 'a'), 0, 'and its disk\'s bytes are released');
});

t.test('the per-disk usage records are written only where other instances write too', async (t) => {
  const embedded = openSqliteStore(':memory:');
  t.teardown(() => embedded.close());
  const s = await service(t, embedded);
  await s.putNode('a', report('z1'), NOW);
  const placed = await s.schedule(volume({ name: 'v', size: 10 * GiB }), [], CLAIM);
  t.equal(placed.outcome, 'placed');
  t.same(await embedded.load('replicas.disk-usage'), [], 'one writer: nothing to collide with, nothing written');
  await s.deleteReplica(placed.replicas[0]!.name);
  t.same(await embedded.load('replicas.disk-usage'), []);
  // The same claim on a store other instances share (its contract: shared) writes the disk's record.
  const shared = Object.assign(openSqliteStore(':memory:'), { shared: true });
  t.teardown(() => shared.close());
  const p = await service(t, shared);
  await p.putNode('a', report('z1'), NOW);
  await p.schedule(volume({ name: 'v', size: 10 * GiB }), [], CLAIM);
  t.same((await shared.load('replicas.disk-usage')).map((r) => [r.key, r.value]), [['a/d1', { replicas: 1, bytes: 10 * GiB }]]);
});

t.test('claims commit with expectations only where other instances write too', async (t) => {
  /** The expectations of every commit the service makes on the store. */
  const recorded = (store: AsyncStore) => {
    const seen: Array<Array<{ kind: string; key: string; generation: number }>> = [];
    const commit = store.commit.bind(store);
    (store as { commit: AsyncStore['commit'] }).commit = async (writes, expect = []) => {
      seen.push(expect.map((e) => ({ ...e })));
      return commit(writes, expect);
    };
    return seen;
  };
  const embedded = openSqliteStore(':memory:');
  t.teardown(() => embedded.close());
  const s = await service(t, embedded);
  const one = recorded(embedded);
  await s.putNode('a', report('z1'), NOW);
  const placed = await s.schedule(volume({ name: 'v', size: 10 * GiB }), [], CLAIM);
  await s.deleteReplica(placed.replicas[0]!.name);
  t.same(one, [[], [], []], 'one writer: memory is the store when it decides, nothing could conflict');

  const shared = Object.assign(openSqliteStore(':memory:'), { shared: true });
  t.teardown(() => shared.close());
  const p = await service(t, shared);
  await p.putNode('a', report('z1'), NOW);
  const many = recorded(shared);
  const claimed = await p.schedule(volume({ name: 'v', size: 10 * GiB }), [], CLAIM);
  const name = claimed.replicas[0]!.name;
  t.same(many[0]!.map((e) => [e.kind, e.key]).sort(), [
    ['replicas.disk-usage', 'a/d1'], ['replicas.node', 'a'], ['replicas.replica', name], ['replicas.volume', 'v'],
  ], 'the new name, the disk, the node report and the volume, at the generations the decision read');
  t.equal(many[0]!.find((e) => e.kind === 'replicas.replica')!.generation, 0, 'the name must be new');
});

t.test('the name numbers continue across a restart as without one, also once a volume\'s replicas are all gone', async (t) => {
  const run = async (restart: boolean) => {
    const dir = t.testdir();
    let store = openSqliteStore(dir);
    let s = await ReplicaService.open(store, { values: Object.freeze(settings()) });
    const reopen = async () => {
      if (!restart) return;
      s.close();
      await store.close();
      store = openSqliteStore(dir);
      s = await ReplicaService.open(store, { values: Object.freeze(settings()) });
    };
    await s.putNode('a', report('z1'), NOW);
    const names: string[] = [];
    const claim = async (name: string) => {
      const r = (await s.schedule(volume({ name, size: GiB }), [], CLAIM)).replicas[0]!;
      names.push(r.name);
      return r;
    };
    await claim('v');
    const w = await claim('w');
    await reopen();
    await s.deleteReplica(w.name);
    await reopen();
    await claim('w');
    await claim('x');
    s.close();
    await store.close();
    return names;
  };
  const names = await run(true);
  t.same(names, await run(false));
  t.equal(new Set(names).size, names.length, 'never a name twice');
});

if (await requirePostgres(t)) {
  async function twoInstances(t: Test): Promise<{ stores: [PostgresStore, PostgresStore]; a: ReplicaService; b: ReplicaService }> {
    const { url } = await createTestDatabase(t);
    const open = async () => {
      const store = await openPostgresStore({ url, poolSize: 3 });
      t.teardown(() => store.close());
      return store;
    };
    const stores: [PostgresStore, PostgresStore] = [await open(), await open()];
    return { stores, a: await service(t, stores[0]), b: await service(t, stores[1]) };
  }

  const catchUp = (stores: readonly AsyncStore[]) => Promise.all(stores.map((s) => s.catchUp()));

  t.test('each instance sees the other\'s reports, claims and releases', async (t) => {
    const { stores, a, b } = await twoInstances(t);
    await a.putNode('n1', report('z1'), NOW);
    await catchUp(stores);
    t.equal(b.node('n1')?.zone, 'z1', 'a report on A is seen by B');
    const claimed = await b.schedule(volume({ name: 'v', size: 10 * GiB }), [], CLAIM);
    await catchUp(stores);
    t.same(a.replicas('v'), claimed.replicas, 'a claim on B is seen by A');
    t.equal(scheduled(a, 'n1'), 10 * GiB, 'with its bytes on the disk');
    await t.rejects(a.deleteNode('n1'), { code: 'NODE_HAS_REPLICAS' }, 'A refuses to forget a node holding B\'s replica');
    await a.deleteReplica(claimed.replicas[0]!.name);
    await catchUp(stores);
    t.same(b.replicas(), [], 'a release on A is seen by B');
    t.equal(scheduled(b, 'n1'), 0);
    const next = await b.schedule(volume({ name: 'v', size: 10 * GiB }), [], CLAIM);
    t.not(next.replicas[0]!.name, claimed.replicas[0]!.name, 'names stay new across instances');
  });

  t.test('racing for the last bytes of one disk: exactly one claim commits, the other decides again and is refused', async (t) => {
    const { stores, a, b } = await twoInstances(t);
    const conflicts = [countConflicts(stores[0]), countConflicts(stores[1])];
    await a.putNode('n1', report('z1', 15 * GiB), NOW);
    await catchUp(stores);
    // Both decide on the same memory (one 10 GiB replica fits, not two) before either commit is acknowledged.
    const outcomes = await Promise.all([
      a.schedule(volume({ name: 'va', size: 10 * GiB }), [], CLAIM),
      b.schedule(volume({ name: 'vb', size: 10 * GiB }), [], CLAIM),
    ]);
    t.same(outcomes.map((o) => o.outcome).sort(), ['no_valid_target', 'placed']);
    t.equal(conflicts[0]!() + conflicts[1]!(), 1, 'the loser\'s claim was refused by the database once');
    await catchUp(stores);
    for (const s of [a, b]) {
      t.equal(s.replicas().length, 1);
      t.equal(scheduled(s, 'n1'), 10 * GiB, 'never over the disk');
    }
    t.equal((await stores[1].load('replicas.replica')).length, 1, 'one replica stored');
  });

  t.test('racing for the missing replica of one volume: placed once', async (t) => {
    const { stores, a, b } = await twoInstances(t);
    await a.putNode('n1', report('z1'), NOW);
    await b.putNode('n2', report('z2'), NOW);
    await catchUp(stores);
    const v: VolumeSpec = volume({ name: 'v', size: 10 * GiB, numberOfReplicas: 1 });
    const outcomes = await Promise.all([a.schedule(v, [], CLAIM), b.schedule(v, [], CLAIM)]);
    t.same(outcomes.map((o) => o.outcome).sort(), ['nothing_missing', 'placed'], 'the second decides again and finds it placed');
    await catchUp(stores);
    t.equal(a.replicas('v').length, 1);
    t.same(b.replicas('v'), a.replicas('v'));
  });

  t.test('claims on different disks and volumes do not conflict (the name sequence is no hot spot)', async (t) => {
    const { stores, a, b } = await twoInstances(t);
    const conflicts = [countConflicts(stores[0]), countConflicts(stores[1])];
    await a.putNode('n1', report('z1', 100 * GiB, ['x']), NOW);
    await a.putNode('n2', report('z2', 100 * GiB, ['y']), NOW);
    await catchUp(stores);
    for (let round = 0; round < 3; round++) {
      const outcomes = await Promise.all([
        a.schedule(volume({ name: `x${round}`, nodeSelector: ['x'] }), [], CLAIM),
        b.schedule(volume({ name: `y${round}`, nodeSelector: ['y'] }), [], CLAIM),
      ]);
      t.same(outcomes.map((o) => o.outcome), ['placed', 'placed']);
    }
    t.equal(conflicts[0]!() + conflicts[1]!(), 0, 'no claim was refused');
    await catchUp(stores);
    const names = a.replicas().map((r) => r.name);
    t.equal(new Set(names).size, 6);
    t.same(b.replicas(), a.replicas());
  });

  t.test('a report removing a disk races a claim on it: never a replica on a disk no report has', async (t) => {
    const { stores, a, b } = await twoInstances(t);
    const both = report('z1');
    both.disks.d2 = { ...both.disks.d1!, path: '/d2', storageMaximum: 1000 * GiB, storageAvailable: 1000 * GiB };
    await a.putNode('n1', both, NOW);
    await catchUp(stores);
    const [dropped, claimed] = await Promise.allSettled([
      a.putNode('n1', report('z1'), NOW),
      b.schedule(volume({ name: 'v', size: 10 * GiB }), [], CLAIM),
    ]);
    await catchUp(stores);
    const onD2 = b.replicas().filter((r) => r.disk === 'd2');
    const d2 = a.node('n1')!.disks.find((d) => d.name === 'd2');
    if (d2) t.same([...d2.replicas].sort(), onD2.map((r) => r.name).sort(), 'the disk is still reported and holds the replica');
    else t.same(onD2, [], 'the disk is gone and holds nothing');
    t.equal(claimed.status, 'fulfilled');
    if (dropped.status === 'rejected') t.match(dropped.reason, { code: 'DISK_HAS_REPLICAS' });
  });
}
