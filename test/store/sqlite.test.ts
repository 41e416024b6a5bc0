import { spawn } from 'node:child_process';
import { join } from 'node:path';
import t from 'tap';
import { DB_FILE, openStore, SqliteStore } from '../../src/store/sqlite.ts';
import { StoreConflictError } from '../../src/store/store.ts';

t.test('write, close, reopen, read', async (t) => {
  const dir = join(t.testdir(), 'nested', 'data');
  const store = openStore(dir);
  t.equal(store.location, join(dir, DB_FILE), 'data dir created');
  t.same(store.commit([
    { kind: 'a', key: 'k2', value: { n: 2 } },
    { kind: 'a', key: 'k1', value: { n: 1, list: [1, 'x', null] } },
    { kind: 'b', key: 'k1', value: 'text' },
  ]), [1, 1, 1]);
  t.same(store.commit([{ kind: 'a', key: 'k1', value: { n: 11 } }]), [2], 'generation bumps');
  store.close();
  t.throws(() => store.load('a'), 'closed store refuses');

  const again = new SqliteStore(dir);
  t.same(again.load('a'), [
    { key: 'k1', value: { n: 11 }, generation: 2 },
    { key: 'k2', value: { n: 2 }, generation: 1 },
  ], 'sorted by key, with generations');
  t.same(again.get('b', 'k1'), { key: 'k1', value: 'text', generation: 1 });
  t.equal(again.get('b', 'nope'), undefined);
  t.same(again.commit([{ kind: 'a', key: 'k2', value: null }]), [0], 'null deletes');
  t.same(again.load('a').map((r) => r.key), ['k1']);
  again.close();
});

t.test('expectations guard a commit: a mismatch writes nothing', async (t) => {
  const store = openStore(':memory:');
  t.teardown(() => store.close());
  store.commit([{ kind: 'pool', key: 'p', value: { free: 10 } }]);
  t.throws(
    () => store.commit([
      { kind: 'claim', key: 'c1', value: { size: 10 } },
      { kind: 'pool', key: 'p', value: { free: 0 } },
    ], [{ kind: 'pool', key: 'p', generation: 7 }]),
    { name: 'StoreConflictError', expected: 7, actual: 1 },
  );
  t.same(store.load('claim'), [], 'nothing written');
  t.same(store.get('pool', 'p')?.value, { free: 10 });
  t.throws(() => store.commit([{ kind: 'claim', key: 'c1', value: 1 }], [{ kind: 'pool', key: 'q', generation: 1 }]), StoreConflictError, 'missing record has generation 0');
  store.commit([{ kind: 'claim', key: 'c1', value: 1 }], [{ kind: 'claim', key: 'c1', generation: 0 }]);
  t.throws(() => store.commit([{ kind: 'claim', key: 'c1', value: 2 }], [{ kind: 'claim', key: 'c1', generation: 0 }]), StoreConflictError, '0 means must not exist');
  store.commit([{ kind: 'pool', key: 'p', value: { free: 0 } }], [{ kind: 'pool', key: 'p', generation: 1 }]);
  t.same(store.get('pool', 'p'), { key: 'p', value: { free: 0 }, generation: 2 });
});

t.test('refuses a store written by a newer Berth', async (t) => {
  const dir = t.testdir();
  const s = openStore(dir);
  s.close();
  const Database = (await import('better-sqlite3')).default;
  const db = new Database(join(dir, DB_FILE));
  db.pragma('user_version = 999');
  db.close();
  t.throws(() => openStore(dir), /newer than this Berth/);
});

t.test('every acknowledged write survives SIGKILL', async (t) => {
  const dir = t.testdir();
  const child = spawn(process.execPath, ['--import', 'tsx', join(import.meta.dirname, '..', 'fixtures', 'store-writer.ts'), dir], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let lastAck = -1;
  let buffered = '';
  await new Promise<void>((resolve, reject) => {
    child.on('error', reject);
    child.stdout!.on('data', (chunk: Buffer) => {
      buffered += chunk.toString();
      const lines = buffered.split('\n');
      buffered = lines.pop()!;
      for (const line of lines) {
        const m = /^ack (\d+)$/.exec(line);
        if (m) lastAck = Number(m[1]);
      }
      if (lastAck >= 200 && !child.killed) {
        child.kill('SIGKILL');
        resolve();
      }
    });
  });
  await new Promise((resolve) => child.once('exit', resolve));
  t.equal(child.signalCode, 'SIGKILL');
  const store = openStore(dir);
  t.teardown(() => store.close());
  const claims = store.load<{ i: number }>('test.claim');
  t.ok(claims.length >= lastAck + 1, `all ${lastAck + 1} acknowledged claims are there (found ${claims.length})`);
  for (let i = 0; i <= lastAck; i++) {
    if (claims[i]?.value.i !== i) { t.fail(`claim ${i} missing`); break; }
  }
  const pool = store.get<{ allocated: number }>('test.pool', 'p')!;
  t.equal(pool.value.allocated, claims.length * 10, 'pool figure and claims were committed together');
});
