// Optimistic claims: when the store says a pool changed under the decision (another Berth sharing the store), the
// service catches up with the feed and decides again, a few times at most, then answers 409. A failing commit
// changes nothing, also when it fails after the claim was staged (the turn's transaction could not be written).
import { statSync } from 'node:fs';
import t from 'tap';
import { WRITE_ATTEMPTS } from '../../src/store/follow.ts';
import { openSqliteStore } from '../../src/store/sqlite.ts';
import { StoreConflictError, type AsyncStore, type StoreExpectation, type StoreWrite } from '../../src/store/store.ts';
import { limitFileSize } from '../store/file-size-limit.ts';
import { build } from '../helper.ts';

/**
 * A store whose claim commits (those expecting a volume that must not exist yet) fail `failures` times with a
 * conflict, or with `error`.
 */
function flakyStore(failures: number, error?: Error): AsyncStore & { attempts: number } {
  const engine = openSqliteStore(':memory:');
  const commit = engine.commit.bind(engine);
  let left = failures;
  const store = Object.assign(engine, { attempts: 0 });
  store.commit = async (writes: readonly StoreWrite[], expect: readonly StoreExpectation[] = []) => {
    if (expect.some((e) => e.kind === 'volumes.volume' && e.generation === 0)) {
      store.attempts++;
      if (error) throw error;
      if (left > 0) {
        left--;
        throw new StoreConflictError(expect[expect.length - 1]!, 99);
      }
    }
    return commit(writes, expect);
  };
  return store;
}

const REPORT = { pools: [{ pool_name: 'a', total_capacity_gb: 100, free_capacity_gb: 50 }] };

t.test('a conflict is retried after catching up', async (t) => {
  const store = flakyStore(2);
  const app = await build(t, {}, store);
  await app.inject({ method: 'PUT', url: '/backends/h@x', payload: REPORT });
  const r = await app.inject({ method: 'POST', url: '/volumes/schedule', payload: { id: 'v', size: 5 } });
  t.equal(r.statusCode, 200);
  t.equal(store.attempts, 3, 'two conflicts, then the claim');
  t.equal((await app.inject({ method: 'GET', url: '/volumes' })).json().volumes.length, 1);
});

t.test('conflicts that persist end in 409, nothing claimed', async (t) => {
  const store = flakyStore(100);
  const app = await build(t, {}, store);
  await app.inject({ method: 'PUT', url: '/backends/h@x', payload: REPORT });
  const r = await app.inject({ method: 'POST', url: '/volumes/schedule', payload: { id: 'v', size: 5 } });
  t.equal(r.statusCode, 409);
  t.match(r.json(), { type: '/problems/conflict' });
  t.equal(store.attempts, WRITE_ATTEMPTS, 'bounded retries');
  t.match((await app.inject({ method: 'GET', url: '/metrics' })).body, /berth_decisions_total\{domain="volumes",outcome="conflict"\} 1/);
  t.same((await app.inject({ method: 'GET', url: '/volumes' })).json().volumes, []);
});

t.test('a store failure is a 500 and leaves memory unchanged', async (t) => {
  const app = await build(t, {}, flakyStore(0, new Error('disk full')));
  await app.inject({ method: 'PUT', url: '/backends/h@x', payload: REPORT });
  const before = (await app.inject({ method: 'GET', url: '/pools?detail=true' })).body;
  const r = await app.inject({ method: 'POST', url: '/volumes/schedule', payload: { id: 'v', size: 5 } });
  t.equal(r.statusCode, 500);
  t.equal((await app.inject({ method: 'GET', url: '/pools?detail=true' })).body, before);
  t.same((await app.inject({ method: 'GET', url: '/volumes' })).json().volumes, []);
});

t.test('claims whose turn fails to commit are 500s and leave memory as the store has it', async (t) => {
  const store = openSqliteStore(t.testdir());
  const app = await build(t, {}, store);
  t.teardown(() => limitFileSize('unlimited'));
  await app.inject({ method: 'PUT', url: '/backends/h@x', payload: REPORT });
  await app.inject({ method: 'POST', url: '/volumes/schedule', payload: { id: 'kept', size: 5 } });
  const before = (await app.inject({ method: 'GET', url: '/pools?detail=true' })).body;
  // A full disk: the transaction of the claims' turn cannot be written.
  limitFileSize(statSync(`${store.location}-wal`).size);
  const failed = await Promise.all(['v', 'w'].map((id) => app.inject({ method: 'POST', url: '/volumes/schedule', payload: { id, size: 5 } })));
  limitFileSize('unlimited');
  t.same(failed.map((r) => r.statusCode), [500, 500]);
  t.equal((await app.inject({ method: 'GET', url: '/pools?detail=true' })).body, before, 'the pool as before');
  t.same((await app.inject({ method: 'GET', url: '/volumes' })).json().volumes.map((v: { id: string }) => v.id), ['kept']);
  const again = await app.inject({ method: 'POST', url: '/volumes/schedule', payload: { id: 'v', size: 5 } });
  t.equal(again.statusCode, 200, 'the same claim is placed once the disk has room');
  t.match((await app.inject({ method: 'GET', url: '/pools?detail=true' })).json(), { pools: [{ capabilities: { allocated_capacity_gb: 10 } }] });
});
