// A search's arrays are reused from one search to the next: each comes back zeroed and of the length asked, no
// two rows of one search share bytes, and a later search takes the same memory again instead of allocating.
import t from 'tap';
import { ScratchRows } from '../../src/placement/scratch-rows.ts';

type Row = Uint8Array | Int32Array | Float64Array;
const holds = (row: Row, value: number) => Array.from(row).every((x) => x === value);
/** Row k of a search is of kind k mod 3: bytes, 32-bit integers, doubles. */
const take = (rows: ScratchRows, k: number, n: number): Row => (k % 3 === 0 ? rows.bytes(n) : k % 3 === 1 ? rows.int32s(n) : rows.float64s(n));

t.test('arrays of one search: zeroed, of the length asked, none sharing memory', async (t) => {
  const rows = new ScratchRows();
  rows.begin();
  const lengths = [5, 0, 1, 100_000, 5, 7, 100_000];
  // Bytes, 32-bit integers and doubles, interleaved.
  const taken = lengths.map((n, k) => take(rows, k, n));
  taken.forEach((row, k) => {
    t.equal(row.length, lengths[k], `row ${k}: ${lengths[k]} entries`);
    t.ok(holds(row, 0), `row ${k}: zeroed`);
  });
  taken.forEach((row, k) => row.fill(k + 1));
  taken.forEach((row, k) => t.ok(holds(row, k + 1), `row ${k} keeps its own bytes after the others were written`));
});

t.test('the next search gets the same memory back, zeroed, and grows a row only when asked for more', async (t) => {
  const rows = new ScratchRows();
  const cases: Array<{ lengths: number[]; reused: boolean[] }> = [
    { lengths: [8, 16], reused: [false, false] },
    { lengths: [8, 16], reused: [true, true] },
    { lengths: [4, 32, 2], reused: [true, false, false] },
    { lengths: [8, 32, 2], reused: [true, true, true] },
  ];
  let before: Row[] = [];
  for (const [s, { lengths, reused }] of cases.entries()) {
    rows.begin();
    const taken = lengths.map((n, k) => take(rows, k, n));
    taken.forEach((row, k) => {
      t.equal(row.length, lengths[k], `search ${s}, row ${k}: ${lengths[k]} entries`);
      t.ok(holds(row, 0), `search ${s}, row ${k}: zeroed although the search before wrote it`);
      t.equal(before[k] !== undefined && row.buffer === before[k]!.buffer, reused[k], `search ${s}, row ${k}: ${reused[k] ? 'reused' : 'new'}`);
      row.fill(-1);
    });
    before = taken;
  }
});
