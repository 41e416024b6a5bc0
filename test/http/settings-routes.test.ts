// The settings routes follow the store: a settings record another instance commits reaches GET /settings/{dialect}
// (and the dialect's next decision) through the change feed, without a restart.
import t from 'tap';
import { KIND_SETTINGS } from '../../src/settings.ts';
import { openSqliteStore } from '../../src/store/sqlite.ts';
import { build } from '../helper.ts';

t.test('another writer\'s settings change reaches this instance through the change feed', async (t) => {
  const store = openSqliteStore(':memory:');
  const app = await build(t, {}, store);
  const before = (await app.inject('/settings/volumes')).json() as { generation: number; settings: Record<string, unknown> };
  t.equal(before.settings.max_over_subscription_ratio, 20);
  // As another Berth on the same database would write it.
  const values = { ...before.settings, max_over_subscription_ratio: 2.5 };
  const history = [{ at: '2026-12-01T00:00:00.000Z', by: 'elsewhere', changes: { max_over_subscription_ratio: { from: 20, to: 2.5 } } }];
  const [generation] = await store.commit([{ kind: KIND_SETTINGS, key: 'volumes', value: { values, history } }]);
  await store.catchUp();
  const after = await app.inject('/settings/volumes');
  t.equal(after.headers.etag, `"${generation}"`);
  t.same((after.json() as { settings: Record<string, unknown> }).settings.max_over_subscription_ratio, 2.5);
  const trail = (await app.inject('/settings/volumes/history')).json() as { history: Array<{ by: string }> };
  t.same(trail.history.map((h) => h.by), ['elsewhere']);
  // A record not newer than what the instance holds (the feed may repeat) changes nothing.
  const put = await app.inject({ method: 'PUT', url: '/settings/volumes', payload: { max_over_subscription_ratio: 4 } });
  t.equal(put.statusCode, 200);
  await store.catchUp();
  t.same(((await app.inject('/settings/volumes')).json() as { settings: Record<string, unknown> }).settings.max_over_subscription_ratio, 4);
});
