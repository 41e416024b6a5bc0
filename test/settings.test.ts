// The runtime settings of a dialect (src/settings.ts): validation as the start-up options, generations and If-Match,
// history, the store as the source of truth across a restart, listeners, and another writer's change.
import t from 'tap';
import { z } from 'zod';
import { DomainError } from '../src/domain-errors.ts';
import { DialectSettings, HISTORY_LIMIT, KIND_SETTINGS } from '../src/settings.ts';
import { openSqliteStore } from '../src/store/sqlite.ts';

const Patch = z.object({
  ratio: z.coerce.number().min(1, 'must be a number >= 1'),
  calculation: z.enum(['cinder', 'standard']),
}).partial().strict();
type Values = { ratio: number; calculation: 'cinder' | 'standard' };
const INITIAL: Values = { ratio: 20, calculation: 'cinder' };

function make(store = openSqliteStore(':memory:'), now = () => Date.parse('2026-12-01T09:30:00.000Z')) {
  return new DialectSettings<Values>({ dialect: 'volumes', patch: Patch, initial: INITIAL, store, now });
}

t.test('the start-up values until the first change; a change is validated, stored, versioned and announced', async (t) => {
  const settings = make();
  await settings.load();
  t.same(settings.values, INITIAL);
  t.equal(settings.generation, 0, 'nothing stored yet');
  const seen: Values[] = [];
  settings.onChange((v) => seen.push({ ...v }));
  const after = await settings.update({ ratio: '2.5' }, { by: 'ops' });
  t.same(after.values, { ratio: 2.5, calculation: 'cinder' }, 'coerced as the start-up option is');
  t.ok(after.generation > 0);
  t.same(seen, [{ ratio: 2.5, calculation: 'cinder' }], 'listeners see the new values');
  t.same(settings.history, [{ at: '2026-12-01T09:30:00.000Z', by: 'ops', changes: { ratio: { from: 20, to: 2.5 } } }]);
  const again = await settings.update({ ratio: 2.5 }, { by: 'ops' });
  t.equal(again.generation, after.generation, 'an unchanged value is no change');
  t.equal(settings.history.length, 1);
  t.throws(() => Object.assign(settings.values as Values, { ratio: 1 }), 'the values are frozen');
});

t.test('bad input is refused with the setting named and what is allowed, and changes nothing', async (t) => {
  const settings = make();
  await settings.load();
  for (const [body, pattern] of [
    [{ ratio: 0.5 }, /^ratio: must be a number >= 1$/],
    [{ calculation: 'fast' }, /^calculation: .*\(allowed: cinder, standard\)$/],
    [{ nope: 1 }, /^nope: unknown volumes setting$/],
    [[1, 2], /expected object/],
  ] as const) {
    const err = await settings.update(body, { by: null }).catch((e: unknown) => e);
    t.ok(err instanceof DomainError && err.code === 'BAD_REQUEST', JSON.stringify(body));
    t.match((err as Error).message, pattern);
  }
  t.same(settings.values, INITIAL);
  t.equal(settings.generation, 0);
});

t.test('If-Match: the generation read, else 412 and nothing changed', async (t) => {
  const settings = make();
  await settings.load();
  const first = await settings.update({ ratio: 3 }, { ifMatch: 0, by: null });
  const stale = await settings.update({ ratio: 4 }, { ifMatch: 0, by: null }).catch((e: unknown) => e);
  t.ok(stale instanceof DomainError && stale.code === 'PRECONDITION_FAILED');
  t.match((stale as DomainError).extensions, { generation: first.generation });
  t.equal(settings.values.ratio, 3);
  t.equal((await settings.update({ ratio: 4 }, { ifMatch: first.generation, by: null })).values.ratio, 4);
});

t.test('the stored settings win over the start-up values after a restart, history included', async (t) => {
  const store = openSqliteStore(':memory:');
  const before = make(store);
  await before.load();
  await before.update({ calculation: 'standard' }, { by: 'a' });
  await before.update({ ratio: 1.5 }, { by: 'b' });
  const after = make(store);
  await after.load();
  t.same(after.values, { ratio: 1.5, calculation: 'standard' });
  t.equal(after.generation, before.generation);
  t.same(after.history.map((h) => h.by), ['a', 'b']);
});

t.test('a change another writer stored first is taken, then this one is applied on top (without If-Match)', async (t) => {
  const store = openSqliteStore(':memory:');
  const mine = make(store);
  const theirs = make(store);
  await mine.load();
  await theirs.load();
  await theirs.update({ calculation: 'standard' }, { by: 'them' });
  const result = await mine.update({ ratio: 2 }, { by: 'me' });
  t.same(result.values, { ratio: 2, calculation: 'standard' }, 'both changes hold');
  t.same(mine.history.map((h) => h.by), ['them', 'me']);
  const conditional = await theirs.update({ ratio: 9 }, { ifMatch: theirs.generation, by: 'them' }).catch((e: unknown) => e);
  t.ok(conditional instanceof DomainError, 'under If-Match a stale reader is refused once it learns the new generation');
});

t.test('apply takes a newer stored record only (the change feed may repeat or reorder)', async (t) => {
  const settings = make();
  settings.apply({ key: 'volumes', generation: 5, value: { values: { ratio: 3, calculation: 'cinder' }, history: [] } });
  settings.apply({ key: 'volumes', generation: 4, value: { values: { ratio: 9, calculation: 'cinder' }, history: [] } });
  t.equal(settings.values.ratio, 3);
  t.equal(settings.generation, 5);
  t.equal(KIND_SETTINGS, 'settings');
});

t.test('the history keeps the latest changes only', async (t) => {
  const settings = make();
  await settings.load();
  for (let i = 0; i < HISTORY_LIMIT + 5; i++) await settings.update({ ratio: 2 + i }, { by: null });
  t.equal(settings.history.length, HISTORY_LIMIT);
  t.same(settings.history.at(-1)!.changes, { ratio: { from: 2 + HISTORY_LIMIT + 3, to: 2 + HISTORY_LIMIT + 4 } });
});
