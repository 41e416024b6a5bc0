import t from 'tap';
import { buildApp } from '../../src/app.ts';
import { parseConfig } from '../../src/config.ts';
import { SqliteStore } from '../../src/store/sqlite.ts';
import { StoreConflictError } from '../../src/store/store.ts';
import { GiB, putNode, scheduleVolume } from './http.ts';

async function open(dir: string) {
  const store = new SqliteStore(dir);
  const app = await buildApp({ config: parseConfig({ data_dir: dir }), store, processMetrics: false, eventLoopDelay: () => 0 });
  await app.ready();
  return { app, store, close: async () => { await app.close(); store.close(); } };
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
  const store = s.store as unknown as { commit: (...args: unknown[]) => unknown };
  const real = store.commit.bind(store);
  store.commit = () => { throw new Error('disk full'); };
  const res = await scheduleVolume(s.app, { name: 'v', numberOfReplicas: 1 });
  t.equal(res.statusCode, 500);
  store.commit = real;
  t.same((await s.app.inject({ method: 'GET', url: '/replicas' })).json().replicas, []);
  t.equal((await s.app.inject({ method: 'GET', url: '/nodes/a' })).json().disks.d1.storageScheduled, 0);
});

t.test('a store conflict on a replica name decides again with new names, then gives up with 409', async (t) => {
  const dir = t.testdir();
  const s = await open(dir);
  t.teardown(s.close);
  await putNode(s.app, 'a');
  const store = s.store as unknown as { commit: (...args: unknown[]) => unknown };
  const real = store.commit.bind(store);
  let conflicts = 1;
  store.commit = (...args: unknown[]) => {
    if (conflicts-- > 0) throw new StoreConflictError({ kind: 'replicas.replica', key: 'x', generation: 0 }, 1);
    return real(...args);
  };
  const ok = await scheduleVolume(s.app, { name: 'v', numberOfReplicas: 1 });
  t.equal(ok.statusCode, 200, 'the second attempt succeeds');
  t.equal((await s.app.inject({ method: 'GET', url: '/replicas' })).json().replicas.length, 1);
  conflicts = 10;
  const refused = await scheduleVolume(s.app, { name: 'w', numberOfReplicas: 1 });
  t.equal(refused.statusCode, 409);
  t.match(refused.json().type, /\/conflict$/);
  store.commit = real;
  t.equal((await s.app.inject({ method: 'GET', url: '/replicas' })).json().replicas.length, 1, 'nothing more claimed');
});
