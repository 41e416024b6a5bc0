// Generated volume ids are UUIDv7: the layout RFC 9562 gives, the time they carry, their order, no repeats.
import t from 'tap';
import { uuidV7 } from '../src/uuid-v7.ts';

const V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const timeOf = (id: string) => Number.parseInt(id.slice(0, 8) + id.slice(9, 13), 16);

t.test('layout: version 7, the RFC variant, the time in the first 48 bits', async (t) => {
  const cases: Array<[ms: number, time: number]> = [
    [0, 0], [1, 1], [1_733_270_400_123, 1_733_270_400_123], [1.9, 1], [-5, 0], [2 ** 48 - 1, 2 ** 48 - 1], [2 ** 50, 2 ** 48 - 1],
  ];
  for (const [ms, time] of cases) {
    const id = uuidV7(ms);
    t.match(id, V7, `${ms}: ${id}`);
    t.equal(timeOf(id), time, `${ms} carries ${time}`);
  }
});

t.test('ids of later milliseconds sort after earlier ones, as strings', async (t) => {
  const ids = [1_000, 1_001, 65_536, 1_733_270_400_000, 1_733_270_400_001].map(uuidV7);
  t.same([...ids].sort(), ids);
});

t.test('ids of the same millisecond differ', async (t) => {
  const ids = new Set(Array.from({ length: 10_000 }, () => uuidV7(1_733_270_400_000)));
  t.equal(ids.size, 10_000);
});
