// isoTime writes every instant as Date.prototype.toISOString does, across second boundaries and in either order.
import t from 'tap';
import { isoTime } from '../src/iso-time.ts';
import { xorshift } from './random.ts';

t.test('the same text as toISOString', async (t) => {
  const cases = [
    0, 1, 9, 10, 99, 100, 999, 1000, 1001, -1, -999, -1000, -1001, 1.9, -1.9, 0.5,
    1_733_270_399_999, 1_733_270_400_000, 1_733_270_400_007, 1_733_270_400_042, 1_733_270_400_420,
    253_402_300_799_999, 253_402_300_800_000, -62_167_219_200_001, 8.64e15, -8.64e15,
  ];
  for (const ms of cases) t.equal(isoTime(ms), new Date(ms).toISOString(), String(ms));
});

t.test('times within one second, then back to an earlier one, then random ones', async (t) => {
  const random = xorshift(3);
  const times = [5_000, 5_001, 5_999, 4_999, 5_500, 1_733_270_400_000, 1_733_270_400_999, 1_733_270_399_000];
  for (let i = 0; i < 2_000; i++) times.push(Math.floor(random() * 4e12) - 1e12);
  const wrong = times.filter((ms) => isoTime(ms) !== new Date(ms).toISOString());
  t.same(wrong, [], `${times.length} times`);
});

t.test('an invalid time is a RangeError, as from toISOString', async (t) => {
  for (const [valid, invalid] of [[8.64e15, 8.64e15 + 1], [-8.64e15, -8.64e15 - 1], [0, Number.NaN], [0, Number.POSITIVE_INFINITY]]) {
    isoTime(valid!);
    t.throws(() => isoTime(invalid!), RangeError, `${invalid} (after ${valid}, whose second is kept)`);
  }
});
