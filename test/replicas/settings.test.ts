// Longhorn's settings as runtime settings: GET/PUT /settings/replicas serve what GET/PUT /replicas/settings serve,
// a change steers the next decision, carries a generation and a history entry, and survives a restart.
import t from 'tap';
import { buildApp } from '../../src/app.ts';
import { parseConfig } from '../../src/config.ts';
import { SqliteStore } from '../../src/store/sqlite.ts';
import { build } from '../helper.ts';
import { putNode, scheduleVolume, snapshot } from './http.ts';

t.test('/settings/replicas and /replicas/settings are one set of values', async (t) => {
  const app = await build(t, {}, undefined, () => Date.parse('2026-12-01T09:30:00.000Z'));
  const longhorn = (await app.inject({ method: 'GET', url: '/replicas/settings' })).json();
  const generic = await app.inject({ method: 'GET', url: '/settings/replicas' });
  t.equal(generic.statusCode, 200);
  t.same(generic.json(), { generation: 0, settings: longhorn }, 'the same values, nothing changed yet');
  t.equal(generic.headers.etag, '"0"');

  // A change through Longhorn's route shows up in the generic one, with its history entry.
  await app.inject({ method: 'PUT', url: '/replicas/settings', payload: { 'storage-over-provisioning-percentage': 200 } });
  const afterLonghorn = (await app.inject({ method: 'GET', url: '/settings/replicas' })).json();
  t.equal(afterLonghorn.settings['storage-over-provisioning-percentage'], 200);
  t.ok(afterLonghorn.generation > 0, 'a stored change has a generation');
  // And the other way round.
  const put = await app.inject({ method: 'PUT', url: '/settings/replicas', payload: { 'replica-soft-anti-affinity': true } });
  t.equal(put.statusCode, 200);
  t.equal(put.json().settings['replica-soft-anti-affinity'], true);
  t.equal((await app.inject({ method: 'GET', url: '/replicas/settings' })).json()['replica-soft-anti-affinity'], true);
  const history = (await app.inject({ method: 'GET', url: '/settings/replicas/history' })).json().history;
  t.same(history, [
    { at: '2026-12-01T09:30:00.000Z', by: null, changes: { 'storage-over-provisioning-percentage': { from: 100, to: 200 } } },
    { at: '2026-12-01T09:30:00.000Z', by: null, changes: { 'replica-soft-anti-affinity': { from: false, to: true } } },
  ]);
});

t.test('a change over HTTP steers the next decision', async (t) => {
  const app = await build(t);
  await putNode(app, 'a', { disks: { d1: { path: '/d1', storageMaximum: 100 * 2 ** 30, storageAvailable: 100 * 2 ** 30 }, d2: { path: '/d2', storageMaximum: 100 * 2 ** 30, storageAvailable: 100 * 2 ** 30 } } });
  const hard = await scheduleVolume(app, { name: 'v', numberOfReplicas: 2 }, '?dry_run=true');
  t.equal(hard.json().replicas.length, 1, 'node anti-affinity is hard by default: one replica on the only node');
  await app.inject({ method: 'PUT', url: '/settings/replicas', payload: { 'replica-soft-anti-affinity': true } });
  const soft = await scheduleVolume(app, { name: 'v', numberOfReplicas: 2 }, '?dry_run=true');
  t.same(soft.json().replicas.map((r: { disk: string }) => r.disk), ['d1', 'd2'], 'soft: the second replica on the same node');
  const cordoned = await putNode(app, 'a', { cordoned: true });
  t.equal(cordoned.json().schedulable, false);
  await app.inject({ method: 'PUT', url: '/settings/replicas', payload: { 'disable-scheduling-on-cordoned-node': false } });
  t.equal((await app.inject({ method: 'GET', url: '/nodes/a' })).json().schedulable, true, 'GET /nodes reads the new value');
});

t.test('bad input and If-Match: 400 naming the setting, 412 on a stale generation, nothing changed', async (t) => {
  const app = await build(t);
  const before = await snapshot(app);
  for (const [body, name] of [
    [{ 'storage-minimal-available-percentage': 101 }, 'storage-minimal-available-percentage'],
    [{ 'default-replica-count': 0 }, 'default-replica-count'],
    [{ 'replica-auto-balance': 'always' }, 'replica-auto-balance'],
    [{ 'replica-soft-anti-affinity': 'true' }, 'replica-soft-anti-affinity'],
    [{ 'no-such-setting': 1 }, 'no-such-setting'],
  ] as const) {
    const res = await app.inject({ method: 'PUT', url: '/settings/replicas', payload: body });
    t.equal(res.statusCode, 400, JSON.stringify(body));
    t.equal(res.headers['content-type'], 'application/problem+json; charset=utf-8');
    t.match(res.json().detail, name, `names ${name}`);
  }
  const ok = await app.inject({ method: 'PUT', url: '/settings/replicas', headers: { 'if-match': '"0"' }, payload: { 'default-replica-count': 2 } });
  t.equal(ok.statusCode, 200);
  const stale = await app.inject({ method: 'PUT', url: '/settings/replicas', headers: { 'if-match': '"0"' }, payload: { 'default-replica-count': 4 } });
  t.equal(stale.statusCode, 412);
  t.equal((await app.inject({ method: 'GET', url: '/replicas/settings' })).json()['default-replica-count'], 2, 'the stale change was not applied');
  const after = await snapshot(app);
  t.same({ ...after, settings: { ...after.settings, 'default-replica-count': 3 } }, before, 'only the accepted change changed anything');
});

t.test('a change survives a restart; a data directory from before runtime settings keeps its values', async (t) => {
  const dir = t.testdir();
  const open = async () => {
    const store = new SqliteStore(dir).async();
    const app = await buildApp({ config: parseConfig({ data_dir: dir }), store, processMetrics: false, eventLoopDelay: () => 0 });
    await app.ready();
    return { app, close: async () => { await app.close(); await store.close(); } };
  };
  // The record the dialect kept its settings in before (replicas.settings/global) is their start.
  const legacy = new SqliteStore(dir);
  legacy.commit([{ kind: 'replicas.settings', key: 'global', value: { 'storage-minimal-available-percentage': 10 } }]);
  legacy.close();
  const first = await open();
  t.equal((await first.app.inject({ method: 'GET', url: '/settings/replicas' })).json().settings['storage-minimal-available-percentage'], 10);
  await first.app.inject({ method: 'PUT', url: '/settings/replicas', payload: { 'storage-over-provisioning-percentage': 150 } });
  await first.close();
  const second = await open();
  t.teardown(second.close);
  const got = (await second.app.inject({ method: 'GET', url: '/settings/replicas' })).json();
  t.equal(got.settings['storage-over-provisioning-percentage'], 150);
  t.equal(got.settings['storage-minimal-available-percentage'], 10);
  t.equal((await second.app.inject({ method: 'GET', url: '/settings/replicas/history' })).json().history.length, 1);
});
