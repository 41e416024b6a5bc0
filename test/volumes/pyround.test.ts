import { readFileSync } from 'node:fs';
import t from 'tap';
import { pyFixed, pyRound } from '../../src/volumes/pyround.ts';

// Generated with CPython: [x, round(x, 2), '%.2f' % x] — incl. decimal near-ties and exact binary ties.
const rows = JSON.parse(readFileSync(new URL('./fixtures/pyround.json', import.meta.url), 'utf8')) as Array<[number, number, string]>;

t.test('round(x, 2) is round-half-even on the exact binary value, like Python', async (t) => {
  t.equal(pyRound(2.675), 2.67, '2.675 is 2.67499999… in binary');
  t.equal(pyRound(2.505), 2.5, '2.505 → 2.5');
  t.equal(pyRound(0.125), 0.12, 'an exact binary tie goes to even');
  t.equal(pyRound(0.375), 0.38, 'an exact binary tie goes to even (up)');
  t.equal(pyRound(4.5 - 1.995), 2.5, 'the seed-case arithmetic 4.5 − 1.995 = 2.50499… → 2.5');
  t.not(Math.round(2.675 * 100) / 100, pyRound(2.675), 'Math.round(x*100)/100 is not equivalent');
  t.equal(pyRound(Infinity), Infinity);
  t.equal(pyRound(7), 7, 'integers unchanged');
  let mismatches = 0;
  for (const [x, rounded, fixed] of rows) {
    if (!Object.is(pyRound(x), rounded) && !(pyRound(x) === 0 && rounded === 0)) {
      mismatches++;
      t.fail(`round(${x}, 2): got ${pyRound(x)}, Python ${rounded}`);
    }
    if (pyFixed(x) !== fixed) {
      mismatches++;
      t.fail(`'%.2f' % ${x}: got ${pyFixed(x)}, Python ${fixed}`);
    }
  }
  t.equal(mismatches, 0, `${rows.length} values agree with CPython`);
});
