import t from 'tap';
import { buildApp } from '../../src/app.ts';
import { parseConfig } from '../../src/config.ts';
import { SqliteStore } from '../../src/store/sqlite.ts';
import { StoreConflictError, StoreUnavailableError, type StoreExpectation, type StoreWrite } from '../../src/store/store.ts';
import { GiB, putNode, scheduleVolume } from './http.ts';

async function open(dir: string) {
  const store = new SqliteStore(dir);
  const app = await buildApp({ config: parseConfig({ data_dir: dir }), store: store.async(), processMetrics: false, eventLoopDelay: () => 0 });
  await app.ready();
  return { app, store, close: async () => { await app.close(); store.close(); } };
}

type Commit = (writes: readonly StoreWrite[], expect?: readonly StoreExpectation[]) => Promise<number[]>;

/** Replaces the commit of the store's asynchronous view (the one the dialect writes through); returns the real one. */
function replaceCommit(store: SqliteStore, commit: (real: Commit) => Commit): Commit {
  const view = store.async() as unknown as { commit: Commit };
  const real = view.commit.bind(view);
  view.commit = commit(real);
  return real;
}

t.test('nodes, settings and claims survive a restart', async (t) => {
  const dir = t.testdir();
  const first = await open(dir);
  await putNode(first.app, 'a', { zone: 'z1', disks: { d1: { path: '/d1', storageMaximum: 100 * GiB, storageAvailable: 100 * GiB, storageScheduled: 2 * GiB } } });
  await putNode(first.app, 'b', { zone: 'z2' });
  await first.app.inject({ method: 'PUT', url: '/replicas/settings', payload: { 'storage-over-provisioning-percentage': 150 } });
  const placed = (await scheduleVolume(first.app, { name: 'v', numberOfReplicas: 2 })).json().replicas;
  t.equal(placed.length, 2);
  await first.close();

  const second = await open(dir);
  t.teardown(second.close);
  const a = (await second.app.inject({ method: 'GET', url: '/nodes/a' })).json();
  t.equal(a.zone, 'z1');
  t.equal(a.disks.d1.storageScheduled, 12 * GiB, 'reported 2 GiB + the 10 GiB replica, back after the restart');
  t.equal(a.disks.d1.storageScheduledByBerth, 10 * GiB);
  t.equal((await second.app.inject({ method: 'GET', url: '/replicas/settings' })).json()['storage-over-provisioning-percentage'], 150);
  const byName = (a: { name: string }, b: { name: string }) => a.name.localeCompare(b.name);
  t.same((await second.app.inject({ method: 'GET', url: '/replicas?volume=v' })).json().replicas, placed.slice().sort(byName));
  const more = await scheduleVolume(second.app, { name: 'v', numberOfReplicas: 3 });
  t.equal(more.statusCode, 409, 'only two nodes; the restored replicas occupy them');
  const fresh = (await scheduleVolume(second.app, { name: 'w', numberOfReplicas: 1 })).json().replicas;
  t.notOk(placed.some((p: { name: string }) => p.name === fresh[0].name), 'names keep being new after a restart');
  await second.app.inject({ method: 'DELETE', url: `/replicas/${placed[0].name}` });
});

t.test('a failed store commit leaves memory unchanged', async (t) => {
  const dir = t.testdir();
  const s = await open(dir);
  t.teardown(s.close);
  await putNode(s.app, 'a');
  const real = replaceCommit(s.store, () => async () => { throw new Error('disk full'); });
  const res = await scheduleVolume(s.app, { name: 'v', numberOfReplicas: 1 });
  t.equal(res.statusCode, 500);
  replaceCommit(s.store, () => real);
  t.same((await s.app.inject({ method: 'GET', url: '/replicas' })).json().replicas, []);
  t.equal((await s.app.inject({ method: 'GET', url: '/nodes/a' })).json().disks.d1.storageScheduled, 0);
});

t.test('an unreachable store fails the write and leaves memory unchanged', async (t) => {
  const dir = t.testdir();
  const s = await open(dir);
  t.teardown(s.close);
  await putNode(s.app, 'a');
  const placed = (await scheduleVolume(s.app, { name: 'v', numberOfReplicas: 1 })).json().replicas;
  const before = (await s.app.inject({ method: 'GET', url: '/nodes/a' })).json();
  const real = replaceCommit(s.store, () => async () => { throw new StoreUnavailableError('database unreachable'); });
  const writes = [
    await scheduleVolume(s.app, { name: 'w', numberOfReplicas: 1 }),
    await s.app.inject({ method: 'DELETE', url: `/replicas/${placed[0].name}` }),
    await putNode(s.app, 'a', { zone: 'z9' }),
  ];
  // The HTTP layer answers an unreachable store (503 + Retry-After once src/http/problem.ts maps it); never a success.
  t.ok(writes.every((r) => r.statusCode >= 500), `no write succeeded: ${writes.map((r) => r.statusCode).join(', ')}`);
  replaceCommit(s.store, () => real);
  t.same((await s.app.inject({ method: 'GET', url: '/replicas' })).json().replicas, placed);
  const after = (await s.app.inject({ method: 'GET', url: '/nodes/a' })).json();
  delete before.reportAgeSeconds;
  delete after.reportAgeSeconds;
  t.same(after, before, 'the node, its disk figures and its replicas as before');
});

t.test('a store conflict decides again, then gives up with 409', async (t) => {
  const dir = t.testdir();
  const s = await open(dir);
  t.teardown(s.close);
  await putNode(s.app, 'a');
  let conflicts = 1;
  const real = replaceCommit(s.store, (commit) => async (writes, expect) => {
    if (conflicts-- > 0) throw new StoreConflictError({ kind: 'replicas.replica', key: 'x', generation: 0 }, 1);
    return commit(writes, expect);
  });
  const ok = await scheduleVolume(s.app, { name: 'v', numberOfReplicas: 1 });
  t.equal(ok.statusCode, 200, 'the second attempt succeeds');
  t.equal((await s.app.inject({ method: 'GET', url: '/replicas' })).json().replicas.length, 1);
  conflicts = 10;
  const refused = await scheduleVolume(s.app, { name: 'w', numberOfReplicas: 1 });
  t.equal(refused.statusCode, 409);
  t.match(refused.json().type, /\/conflict$/);
  replaceCommit(s.store, () => real);
  t.equal((await s.app.inject({ method: 'GET', url: '/replicas' })).json().replicas.length, 1, 'nothing more claimed');
});
