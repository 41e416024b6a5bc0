// StoreFollower: the order in which a commit's acknowledgement and the change feed arrive must not matter, and
// nothing older may overwrite or resurrect what memory holds. A scripted store lets each test choose that order.
import t from 'tap';
import { StoreFollower, type FollowedView } from '../../src/store/follow.ts';
import { openSqliteStore } from '../../src/store/sqlite.ts';
import type {
  AsyncStore, Change, ChangeListener, StoredRecord, StoreSnapshot, StoreStatus, StoreWrite, Subscription,
} from '../../src/store/store.ts';

/** Memory as a map key → value, and every apply call in order. */
class MapView implements FollowedView {
  readonly values = new Map<string, unknown>();
  readonly applied: Array<[string, unknown, number]> = [];
  resets = 0;
  reset(records: ReadonlyMap<string, readonly StoredRecord[]>): void {
    this.resets++;
    this.values.clear();
    for (const r of records.get('k') ?? []) this.values.set(r.key, r.value);
  }
  apply(_kind: string, key: string, value: unknown, generation: number): void {
    this.applied.push([key, value, generation]);
    if (value === null) this.values.delete(key);
    else this.values.set(key, value);
  }
}

/**
 * A store whose commits return the generations the test scripts (`nextSeqs`) and whose feed delivers only what
 * the test pushes (`feed`): the two paths into memory, in whichever order a test needs.
 */
class ScriptedStore implements AsyncStore {
  readonly location = 'scripted';
  readonly instanceId = 'me';
  readonly shared = false;
  nextSeqs: number[] = [];
  snapshotRecords: StoredRecord[] = [];
  snapshotSeq = 0;
  listener: ChangeListener | undefined;
  async load<V>(): Promise<Array<StoredRecord<V>>> { return []; }
  async get(): Promise<undefined> { return undefined; }
  async snapshot(): Promise<StoreSnapshot> {
    return { seq: this.snapshotSeq, records: new Map([['k', this.snapshotRecords]]) };
  }
  async commit(writes: readonly StoreWrite[]): Promise<number[]> {
    return writes.map((w) => {
      const seq = this.nextSeqs.shift()!;
      return w.value === null ? 0 : seq;
    });
  }
  async sequence(): Promise<number> { return 0; }
  subscribe(_from: number, listener: ChangeListener): Subscription {
    this.listener = listener;
    return { position: 0, close: () => undefined };
  }
  async catchUp(): Promise<void> {}
  status(): StoreStatus { return { backend: 'sqlite', connected: true, following: true, seq: 0, position: 0 }; }
  async close(): Promise<void> {}
  /** Delivers changes as the feed would. */
  async feed(...changes: Array<Omit<Change, 'kind'>>): Promise<void> {
    await this.listener!.changes(changes.map((c) => ({ kind: 'k', ...c })));
  }
}

const write = (seq: number, key: string, value: unknown, origin = 'other') =>
  ({ seq, key, value, generation: value === null ? 0 : seq, origin });

async function follower(store = new ScriptedStore()): Promise<{ store: ScriptedStore; view: MapView; f: StoreFollower }> {
  const view = new MapView();
  const f = new StoreFollower(store, ['k'], view);
  await f.start();
  return { store, view, f };
}

t.test('start: memory is the snapshot, and generations come from it', async (t) => {
  const store = new ScriptedStore();
  store.snapshotRecords = [{ key: 'a', value: 1, generation: 7 }];
  store.snapshotSeq = 9;
  const { view, f } = await follower(store);
  t.same([...view.values], [['a', 1]]);
  t.equal(f.generation('k', 'a'), 7);
  t.equal(f.generation('k', 'none'), 0);
});

t.test('the own commit applies once: the feed echo of the same generation is a no-op', async (t) => {
  const { store, view, f } = await follower();
  store.nextSeqs = [5];
  await f.commit([{ kind: 'k', key: 'a', value: 'mine' }]);
  await store.feed(write(5, 'a', 'mine', 'me'));
  t.same(view.applied, [['a', 'mine', 5]]);
  t.equal(f.generation('k', 'a'), 5);
});

t.test('the feed first, then the acknowledgement: applied once', async (t) => {
  const { store, view, f } = await follower();
  await store.feed(write(5, 'a', 'mine', 'me'));
  store.nextSeqs = [5];
  await f.commit([{ kind: 'k', key: 'a', value: 'mine' }]);
  t.same(view.applied, [['a', 'mine', 5]]);
});

t.test('an acknowledgement older than what the feed brought does not overwrite it', async (t) => {
  const { store, view, f } = await follower();
  await store.feed(write(5, 'a', 'mine', 'me'), write(6, 'a', 'theirs'));
  store.nextSeqs = [5];
  await f.commit([{ kind: 'k', key: 'a', value: 'mine' }]);
  t.equal(view.values.get('a'), 'theirs');
  t.equal(f.generation('k', 'a'), 6);
});

t.test('an older write delivered after a local deletion does not resurrect the record', async (t) => {
  const store = new ScriptedStore();
  store.snapshotRecords = [{ key: 'a', value: 'old', generation: 3 }];
  const { view, f } = await follower(store);
  store.nextSeqs = [10];
  await f.commit([{ kind: 'k', key: 'a', value: null }]);
  t.notOk(view.values.has('a'), 'deleted at once');
  // Another instance wrote it before this deletion (seq 9 < 10); the feed tells only now.
  await store.feed(write(9, 'a', 'theirs'));
  t.notOk(view.values.has('a'), 'not resurrected by an older write');
  await store.feed(write(10, 'a', null, 'me'));
  await store.feed(write(11, 'a', 'again'));
  t.equal(view.values.get('a'), 'again', 'a write after the deletion counts');
});

t.test('a deletion from the feed wins over an older acknowledgement', async (t) => {
  const { store, view, f } = await follower();
  await store.feed(write(5, 'a', 'mine', 'me'), write(6, 'a', null));
  store.nextSeqs = [5];
  await f.commit([{ kind: 'k', key: 'a', value: 'mine' }]);
  t.notOk(view.values.has('a'));
  t.equal(f.generation('k', 'a'), 0);
});

t.test('a local write after a local deletion of the same key applies (writes of one dialect are serialised)', async (t) => {
  const store = new ScriptedStore();
  store.snapshotRecords = [{ key: 'a', value: 'old', generation: 3 }];
  const { view, f } = await follower(store);
  store.nextSeqs = [10, 11];
  await f.commit([{ kind: 'k', key: 'a', value: null }]);
  await f.commit([{ kind: 'k', key: 'a', value: 'new' }]);
  t.equal(view.values.get('a'), 'new');
  await store.feed(write(10, 'a', null, 'me'), write(11, 'a', 'new', 'me'));
  t.equal(view.values.get('a'), 'new', 'the echoes change nothing');
  t.equal(view.applied.length, 2);
});

t.test('the feed deletes what another instance deleted; a repeated deletion is a no-op', async (t) => {
  const store = new ScriptedStore();
  store.snapshotRecords = [{ key: 'a', value: 'old', generation: 3 }];
  const { view } = await follower(store);
  await store.feed(write(4, 'a', null), write(5, 'a', null), write(6, 'b', null));
  t.same(view.applied, [['a', null, 0]], 'one apply: the record that existed');
});

t.test('kinds the view does not follow are ignored', async (t) => {
  const { store, view } = await follower();
  await store.listener!.changes([{ seq: 1, kind: 'other', key: 'a', value: 1, generation: 1, origin: 'x' }]);
  t.same(view.applied, []);
});

t.test('a reload replaces memory and forgets the old generations', async (t) => {
  const { store, view, f } = await follower();
  await store.feed(write(5, 'a', 'x'));
  store.snapshotRecords = [{ key: 'b', value: 'y', generation: 50 }];
  store.snapshotSeq = 60;
  t.equal(await store.listener!.reload(), 60);
  t.same([...view.values], [['b', 'y']]);
  t.equal(f.generation('k', 'a'), 0);
  t.equal(f.generation('k', 'b'), 50);
  t.equal(view.resets, 2);
});

t.test('exclusive: writes of one view run one after another, a failure does not block the next', async (t) => {
  const { f } = await follower();
  const order: string[] = [];
  let release!: () => void;
  const first = f.exclusive(async () => {
    order.push('first starts');
    await new Promise<void>((r) => (release = r));
    order.push('first ends');
  });
  const failing = f.exclusive(async () => {
    order.push('second');
    throw new Error('boom');
  });
  const third = f.exclusive(() => order.push('third'));
  await Promise.resolve();
  release();
  await first;
  await t.rejects(failing, /boom/);
  await third;
  t.same(order, ['first starts', 'first ends', 'second', 'third']);
});

t.test('on the embedded store: the own commits and their feed echo leave one apply each', async (t) => {
  const store = openSqliteStore(':memory:');
  t.teardown(() => store.close());
  const view = new MapView();
  const f = new StoreFollower(store, ['k'], view);
  await f.start();
  const [g] = await f.commit([{ kind: 'k', key: 'a', value: 1 }]);
  await f.commit([{ kind: 'k', key: 'b', value: 2 }]);
  await f.commit([{ kind: 'k', key: 'a', value: null }]);
  await f.catchUp();
  t.same(view.applied.map(([k, v]) => [k, v]), [['a', 1], ['b', 2], ['a', null]]);
  t.ok(g! > 0);
  f.close();
});

t.test('on the embedded store: a write ends its turn once staged, so the next decides on it before either is durable', async (t) => {
  const store = openSqliteStore(':memory:');
  t.teardown(() => store.close());
  const view = new MapView();
  const f = new StoreFollower(store, ['k'], view);
  await f.start();
  const seen: Array<{ held: unknown; durableSeq: number }> = [];
  const write = (key: string, value: number) => f.write(() => {
    seen.push({ held: view.values.get('a'), durableSeq: store.sync.sequence() });
    return {
      writes: [{ kind: 'k', key, value }],
      expect: [{ kind: 'k', key, generation: f.generation('k', key) }],
      result: (generations) => generations[0],
    };
  }, () => new Error('exhausted'));
  const answers = await Promise.all([write('a', 1), write('a', 2)]);
  t.same(seen, [{ held: undefined, durableSeq: 0 }, { held: 1, durableSeq: 0 }],
    'the second decided on the first (its expectation the staged generation), nothing durable yet');
  t.same(answers, [1, 2], 'both answered once durable, in one transaction');
  t.equal(store.sync.sequence(), 2);
  f.close();
});
