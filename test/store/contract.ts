// The store contract: one suite that every AsyncStore must pass (test/store/sqlite.test.ts runs it on the
// embedded store, test/store/postgres.test.ts on PostgreSQL).
import type { Test } from 'tap';
import { StoreConflictError, type AsyncStore, type Change, type ChangeListener } from '../../src/store/store.ts';

/** Gives a test a fresh, empty place to store into; `open()` opens it (again, after a close: same data). */
export type StorePlace = (t: Test) => Promise<{ open(): Promise<AsyncStore> }>;

/** Collects what a subscription delivers; `until(seq)` resolves once the change with that seq arrived. */
export function collector(options: { onChanges?: (batch: readonly Change[]) => Promise<void> | void; reload?: () => Promise<number> } = {}) {
  const changes: Change[] = [];
  const batches: number[][] = [];
  let reloads = 0;
  let waiters: Array<{ seq: number; resolve: () => void }> = [];
  let last = 0;
  const listener: ChangeListener = {
    async changes(batch) {
      await options.onChanges?.(batch);
      changes.push(...batch);
      batches.push(batch.map((c) => c.seq));
      last = batch[batch.length - 1]!.seq;
      const ready = waiters.filter((w) => w.seq <= last);
      waiters = waiters.filter((w) => w.seq > last);
      for (const w of ready) w.resolve();
    },
    async reload() {
      reloads++;
      const seq = options.reload ? await options.reload() : 0;
      last = Math.max(last, seq);
      const ready = waiters.filter((w) => w.seq <= last);
      waiters = waiters.filter((w) => w.seq > last);
      for (const w of ready) w.resolve();
      return seq;
    },
  };
  return {
    listener,
    changes,
    batches,
    get reloads() { return reloads; },
    until(seq: number): Promise<void> {
      if (seq <= last) return Promise.resolve();
      return new Promise((resolve) => waiters.push({ seq, resolve }));
    },
  };
}

export function storeContract(t: Test, place: StorePlace): void {
  t.test('write, close, reopen, read: bytewise key order, exact JSON, generations kept', async (t) => {
    const here = await place(t);
    let store = await here.open();
    const value = { z: 1, a: [1, 'x', null, { nested: true }], 'ünï': '✓', big: 2 ** 52, frac: 0.1 + 0.2 };
    const gens = await store.commit([
      { kind: 'a', key: 'b', value: 2 },
      { kind: 'a', key: 'B', value: 1 },
      { kind: 'a', key: 'é', value: value },
      { kind: 'a', key: 'a b', value: 'text' },
      { kind: 'other', key: 'b', value: true },
    ]);
    t.equal(gens.length, 5);
    t.ok(gens.every((g, i) => g > 0 && (i === 0 || g > gens[i - 1]!)), `positive, increasing within the commit: ${gens}`);
    await store.close();
    await t.rejects(store.load('a'), 'a closed store refuses');
    await t.resolves(store.close(), 'closing twice is harmless');

    store = await here.open();
    t.teardown(() => store.close());
    const loaded = await store.load('a');
    t.same(loaded.map((r) => r.key), ['B', 'a b', 'b', 'é'], 'keys in bytewise order');
    t.same(loaded.map((r) => r.generation), [gens[1], gens[3], gens[0], gens[2]], 'generations kept');
    const e = await store.get<typeof value>('a', 'é');
    t.equal(JSON.stringify(e?.value), JSON.stringify(value), 'value and key order come back exactly');
    t.same(await store.get('other', 'b'), { key: 'b', value: true, generation: gens[4] });
    t.equal(await store.get('a', 'missing'), undefined);
    t.same(await store.load('none'), []);
  });

  t.test('the sequence survives a reopen, also when the newest write was a delete', async (t) => {
    const here = await place(t);
    let store = await here.open();
    const [a] = await store.commit([{ kind: 'k', key: 'a', value: 1 }]);
    await store.commit([{ kind: 'k', key: 'b', value: 2 }]);
    await store.commit([{ kind: 'k', key: 'b', value: null }]);
    const seq = await store.sequence();
    await store.close();
    store = await here.open();
    t.teardown(() => store.close());
    t.equal(await store.sequence(), seq);
    const [b] = await store.commit([{ kind: 'k', key: 'b', value: 3 }]);
    t.equal(b, seq + 1, 'the re-created record is above the deletion');
    await store.close();
    store = await here.open();
    t.equal(await store.sequence(), b, 'and after a commit without a delete');
    t.same(await store.get('k', 'a'), { key: 'a', value: 1, generation: a });
  });

  t.test('generations: every write raises its record, never reused after a delete', async (t) => {
    const store = await (await place(t)).open();
    t.teardown(() => store.close());
    const [g1] = await store.commit([{ kind: 'k', key: 'x', value: 1 }]);
    const [g2] = await store.commit([{ kind: 'k', key: 'x', value: 2 }]);
    t.ok(g2! > g1!, 'an overwrite raises the generation');
    const twice = await store.commit([{ kind: 'k', key: 'x', value: 3 }, { kind: 'k', key: 'x', value: 4 }]);
    t.ok(twice[0]! > g2! && twice[1]! > twice[0]!, 'the same key twice in one commit: two generations');
    t.same(await store.get('k', 'x'), { key: 'x', value: 4, generation: twice[1] }, 'the last write wins');
    t.same(await store.commit([{ kind: 'k', key: 'x', value: null }]), [0], 'null deletes; generation 0');
    t.equal(await store.get('k', 'x'), undefined);
    const [again] = await store.commit([{ kind: 'k', key: 'x', value: 5 }]);
    t.ok(again! > twice[1]!, 'a re-created record gets a generation above every earlier one');
    t.same(await store.commit([{ kind: 'k', key: 'x', value: undefined }]), [0], 'undefined deletes too');
    t.same(await store.commit([{ kind: 'k', key: 'never', value: null }]), [0], 'deleting nothing is fine');
    t.same(await store.commit([]), [], 'an empty commit');
  });

  t.test('expectations guard a commit: a mismatch writes nothing', async (t) => {
    const store = await (await place(t)).open();
    t.teardown(() => store.close());
    const [pool] = await store.commit([{ kind: 'pool', key: 'p', value: { free: 10 } }]);
    const before = await store.sequence();
    await t.rejects(store.commit([
      { kind: 'claim', key: 'c1', value: { size: 10 } },
      { kind: 'pool', key: 'p', value: { free: 0 } },
    ], [{ kind: 'claim', key: 'c1', generation: 0 }, { kind: 'pool', key: 'p', generation: pool! + 1000 }]), {
      name: 'StoreConflictError', kind: 'pool', key: 'p', expected: pool! + 1000, actual: pool,
    });
    t.same(await store.load('claim'), [], 'nothing written');
    t.same((await store.get('pool', 'p'))?.value, { free: 10 });
    t.equal(await store.sequence(), before, 'a refused commit does not move the sequence');

    const err = await store.commit([{ kind: 'claim', key: 'c1', value: 1 }], [{ kind: 'pool', key: 'q', generation: 1 }])
      .catch((e: unknown) => e);
    t.ok(err instanceof StoreConflictError, 'a StoreConflictError');
    t.match(err, { kind: 'pool', key: 'q', expected: 1, actual: 0 }, 'a missing record has generation 0');

    const [c1] = await store.commit([{ kind: 'claim', key: 'c1', value: 1 }], [{ kind: 'claim', key: 'c1', generation: 0 }]);
    await t.rejects(store.commit([{ kind: 'claim', key: 'c1', value: 2 }], [{ kind: 'claim', key: 'c1', generation: 0 }]),
      { name: 'StoreConflictError', actual: c1 }, '0 means "must not exist"');
    await t.rejects(store.commit([], [{ kind: 'pool', key: 'p', generation: 1 + pool! }]), StoreConflictError,
      'expectations alone are checked');
    t.same(await store.commit([], [{ kind: 'pool', key: 'p', generation: pool! }]), []);

    // One write expecting its own record (a claim on one instance): the record as read, or nothing at all.
    const unchanged = await store.sequence();
    await t.rejects(store.commit([{ kind: 'pool', key: 'p', value: { free: 5 } }], [{ kind: 'pool', key: 'p', generation: pool! + 1 }]),
      { name: 'StoreConflictError', kind: 'pool', key: 'p', expected: pool! + 1, actual: pool }, 'an update of a changed record');
    await t.rejects(store.commit([{ kind: 'pool', key: 'gone', value: { free: 5 } }], [{ kind: 'pool', key: 'gone', generation: 3 }]),
      { name: 'StoreConflictError', key: 'gone', expected: 3, actual: 0 }, 'an update of a missing record');
    t.same((await store.get('pool', 'p'))?.value, { free: 10 }, 'neither wrote');
    t.equal(await store.get('pool', 'gone'), undefined);
    t.equal(await store.sequence(), unchanged, 'nor moved the sequence');

    const [p2] = await store.commit([{ kind: 'pool', key: 'p', value: { free: 0 } }], [{ kind: 'pool', key: 'p', generation: pool! }]);
    t.same(await store.get('pool', 'p'), { key: 'p', value: { free: 0 }, generation: p2 });
    await store.commit([{ kind: 'claim', key: 'c1', value: null }], [{ kind: 'claim', key: 'c1', generation: c1! }]);
    await t.rejects(store.commit([{ kind: 'x', key: 'y', value: 1 }], [{ kind: 'claim', key: 'c1', generation: c1! }]),
      { name: 'StoreConflictError', actual: 0 }, 'a deleted record no longer matches its old generation');
  });

  t.test('concurrent commits expecting the same generation: exactly one wins', async (t) => {
    const store = await (await place(t)).open();
    t.teardown(() => store.close());
    const [g] = await store.commit([{ kind: 'pool', key: 'p', value: { free: 1 } }]);
    const attempts = Array.from({ length: 8 }, (_, i) => store.commit(
      [{ kind: 'claim', key: `c${i}`, value: { i } }, { kind: 'pool', key: 'p', value: { free: 0, by: i } }],
      [{ kind: 'claim', key: `c${i}`, generation: 0 }, { kind: 'pool', key: 'p', generation: g! }],
    ));
    const results = await Promise.allSettled(attempts);
    const won = results.filter((r) => r.status === 'fulfilled');
    t.equal(won.length, 1, 'one claim');
    t.ok(results.every((r) => r.status === 'fulfilled' || r.reason instanceof StoreConflictError), 'the rest conflict');
    const claims = await store.load('claim');
    t.equal(claims.length, 1);
    t.same((await store.get<{ by: number }>('pool', 'p'))?.value.by, (claims[0]!.value as { i: number }).i,
      'the pool write and the claim that won belong together');
  });

  t.test('snapshot and sequence', async (t) => {
    const store = await (await place(t)).open();
    t.teardown(() => store.close());
    const s0 = await store.sequence();
    const gens = await store.commit([{ kind: 'a', key: '2', value: 2 }, { kind: 'a', key: '1', value: 1 }, { kind: 'b', key: 'x', value: 'x' }]);
    t.equal(await store.sequence(), s0 + 3, 'the sequence moves by one per write');
    t.equal(await store.sequence(), gens[2], 'and the last write has its number');
    const snap = await store.snapshot(['a', 'b', 'c']);
    t.equal(snap.seq, gens[2]);
    t.same([...snap.records.keys()], ['a', 'b', 'c']);
    t.same(snap.records.get('a'), await store.load('a'));
    t.same(snap.records.get('b'), [{ key: 'x', value: 'x', generation: gens[2] }]);
    t.same(snap.records.get('c'), []);
  });

  t.test('subscribe: every change after the position, in order, with its origin', async (t) => {
    const store = await (await place(t)).open();
    t.teardown(() => store.close());
    const [early] = await store.commit([{ kind: 'k', key: 'before', value: 0 }]);
    const start = await store.sequence();
    const live = collector();
    const sub = store.subscribe(start, live.listener);
    t.equal(sub.position, start);
    const g1 = await store.commit([{ kind: 'k', key: 'a', value: { n: 1 } }, { kind: 'k', key: 'b', value: 2 }]);
    const g2 = await store.commit([{ kind: 'k', key: 'a', value: null }]);
    await live.until(start + 3);
    t.same(live.changes, [
      { seq: g1[0], kind: 'k', key: 'a', value: { n: 1 }, generation: g1[0], origin: store.instanceId },
      { seq: g1[1], kind: 'k', key: 'b', value: 2, generation: g1[1], origin: store.instanceId },
      { seq: start + 3, kind: 'k', key: 'a', value: null, generation: 0, origin: store.instanceId },
    ], 'values, generations (0 for a delete) and the origin');
    t.same(g2, [0]);
    await new Promise(setImmediate);
    t.equal(sub.position, start + 3, 'the position follows what was delivered');

    const replay = collector();
    const sub2 = store.subscribe(early! - 1, replay.listener);
    await replay.until(start + 3);
    t.same(replay.changes.map((c) => c.key), ['before', 'a', 'b', 'a'], 'a subscriber behind (within retention) gets the past first');
    sub2.close();

    sub.close();
    await store.commit([{ kind: 'k', key: 'after-close', value: 1 }]);
    const probe = collector();
    store.subscribe(start + 3, probe.listener);
    await probe.until(start + 4);
    t.same(live.changes.length, 3, 'a closed subscription gets nothing more');
  });

  t.test('subscribe: listener calls never overlap, and a failing listener gets the changes again', async (t) => {
    const store = await (await place(t)).open();
    t.teardown(() => store.close());
    let inside = 0;
    let overlapped = false;
    let failOnce = true;
    let failed: () => void = () => undefined;
    const threw = new Promise<void>((r) => { failed = r; });
    let release: () => void = () => undefined;
    let gate: Promise<void> | undefined = new Promise<void>((r) => { release = r; });
    const seen = collector({
      async onChanges(batch) {
        if (inside++ > 0) overlapped = true;
        try {
          if (gate) await gate;
          if (failOnce && batch.some((c) => c.key === 'boom')) {
            failOnce = false;
            failed();
            throw new Error('listener failure');
          }
        } finally {
          inside--;
        }
      },
    });
    store.subscribe(await store.sequence(), seen.listener);
    await store.commit([{ kind: 'k', key: 'one', value: 1 }]);
    await store.commit([{ kind: 'k', key: 'two', value: 2 }]);
    await store.commit([{ kind: 'k', key: 'boom', value: 3 }]);
    gate = undefined;
    release();
    await threw;
    const last = await store.commit([{ kind: 'k', key: 'four', value: 4 }]);
    await seen.until(last[0]!);
    t.notOk(overlapped, 'one call at a time');
    t.same(seen.changes.map((c) => c.key), ['one', 'two', 'boom', 'four'], 'in order; the failed batch came again');
    const seqs = seen.changes.map((c) => c.seq);
    t.ok(seqs.every((s, i) => i === 0 || s === seqs[i - 1]! + 1), 'consecutive, no gaps');
  });

  t.test('status: connected and following when open', async (t) => {
    const store = await (await place(t)).open();
    t.teardown(() => store.close());
    await store.commit([{ kind: 'k', key: 'x', value: 1 }]);
    t.match(store.status(), { connected: true, following: true, seq: await store.sequence() });
    t.notOk(store.status().error);
  });
}
