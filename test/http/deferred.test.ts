// Deferred bookkeeping: later, in order, all of it; sooner when read or when too much waits.
import { Writable } from 'node:stream';
import t from 'tap';
import { buildApp } from '../../src/app.ts';
import { parseConfig } from '../../src/config.ts';
import { Deferred } from '../../src/http/deferred.ts';
import { openSqliteStore } from '../../src/store/sqlite.ts';

t.test('tasks run later, in the order deferred, once', async (t) => {
  const ran: number[] = [];
  const deferred = new Deferred((err) => t.fail(String(err)), 1);
  let last!: () => void;
  const done = new Promise<void>((resolve) => (last = resolve));
  deferred.defer(() => ran.push(1));
  deferred.defer(() => ran.push(2));
  deferred.defer(() => {
    ran.push(3);
    last();
  });
  t.same(ran, [], 'nothing runs as it is deferred');
  t.equal(deferred.pending, 3);
  await done;
  t.same(ran, [1, 2, 3]);
  t.equal(deferred.pending, 0);
  deferred.flush();
  t.same(ran, [1, 2, 3], 'a flush with nothing waiting runs nothing again');
});

t.test('flush runs what waits now; past maxQueued the deferring call runs them', async (t) => {
  const ran: string[] = [];
  // A delay no test waits for: only flush and the bound can run these.
  const deferred = new Deferred((err) => t.fail(String(err)), 60_000, 3);
  t.teardown(() => deferred.flush());
  deferred.defer(() => ran.push('a'));
  deferred.flush();
  t.same(ran, ['a']);
  deferred.defer(() => ran.push('b'));
  deferred.defer(() => ran.push('c'));
  t.same(ran, ['a']);
  deferred.defer(() => ran.push('d'));
  t.same(ran, ['a', 'b', 'c', 'd'], 'the third waiting task ran all three');
  t.equal(deferred.pending, 0);
});

t.test('a failing task is told and stops no other', async (t) => {
  const errors: unknown[] = [];
  const ran: string[] = [];
  const deferred = new Deferred((err) => errors.push(err), 60_000);
  deferred.defer(() => ran.push('before'));
  deferred.defer(() => {
    throw new Error('boom');
  });
  deferred.defer(() => ran.push('after'));
  deferred.flush();
  t.same(ran, ['before', 'after']);
  t.equal(errors.length, 1);
  t.match(errors[0], { message: 'boom' });
});

t.test('the app writes down a GET decision it deferred when it closes', async (t) => {
  const lines: Array<{ msg: string; reqId: string }> = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n')) if (line.trim() !== '') lines.push(JSON.parse(line) as { msg: string; reqId: string });
      done();
    },
  });
  const store = openSqliteStore(':memory:');
  t.teardown(() => store.close());
  const app = await buildApp({ config: parseConfig({ data_dir: ':memory:' }), store, processMetrics: false, logger: { level: 'info', stream } });
  const res = await app.inject({
    url: '/allocation_candidates?resources=VCPU:1', headers: { 'openstack-api-version': 'placement 1.39', 'x-request-id': 'closing' },
  });
  t.equal(res.statusCode, 200);
  await app.close();
  t.same(lines.filter((l) => l.reqId === 'closing').map((l) => l.msg), ['decision']);
  t.equal(app.berth.deferred.pending, 0);
});
