// The buffers whole answers are copied into: lent to one answer at a time, reused only once given back, kept within
// their bounds. (That an answer's bytes stay its own over a real socket while later answers reuse them is in
// streaming.test.ts.)
import t from 'tap';
import { AnswerBuffers } from '../../src/placement/serialize.ts';

const KB = 1024;

t.test('a buffer is lent to one answer until given back, then reused', async (t) => {
  const buffers = new AnswerBuffers();
  const a = buffers.take(100 * KB);
  const b = buffers.take(100 * KB);
  t.equal(a.length, 100 * KB, 'of the size asked');
  t.not(a.buffer, b.buffer, 'two answers at once: two buffers');
  buffers.giveBack(a);
  t.same(buffers.keptSizes(), [125 * KB], 'kept, with the quarter more it was made with');
  const c = buffers.take(120 * KB);
  t.equal(c.buffer, a.buffer, 'the next answer that fits takes the same memory');
  t.equal(c.length, 120 * KB);
  t.same(buffers.keptSizes(), [], 'no longer kept while lent');
  const d = buffers.take(50 * KB);
  t.not(d.buffer, a.buffer, 'nor lent to another answer meanwhile');
  t.not(d.buffer, b.buffer);
});

t.test('what is not given back as lent is ignored', async (t) => {
  const cases: Array<{ name: string; act: (buffers: AnswerBuffers) => void; kept: number[] }> = [
    { name: 'a buffer it did not lend', act: (buffers) => buffers.giveBack(Buffer.alloc(200 * KB)), kept: [] },
    {
      name: 'a buffer given back twice',
      act: (buffers) => {
        const a = buffers.take(32 * KB);
        buffers.giveBack(a);
        buffers.giveBack(a);
      },
      kept: [40 * KB],
    },
    {
      name: "a small answer (Node's own pool)",
      act: (buffers) => {
        const small = buffers.take(8 * KB);
        t.equal(small.length, 8 * KB);
        buffers.giveBack(small);
      },
      kept: [],
    },
    {
      name: 'a buffer above largest',
      act: (buffers) => buffers.giveBack(buffers.take(3 * 1024 * KB)),
      kept: [],
    },
  ];
  for (const c of cases) {
    const buffers = new AnswerBuffers();
    c.act(buffers);
    t.same(buffers.keptSizes(), c.kept, c.name);
  }
});

t.test('at most keep are kept, the smallest making way for a larger one', async (t) => {
  const buffers = new AnswerBuffers(2);
  const lent = [40, 80, 20, 160].map((kb) => buffers.take(kb * KB));
  const sizes = (kbs: number[]) => kbs.map((kb) => kb * KB * 1.25);
  buffers.giveBack(lent[0]!);
  buffers.giveBack(lent[1]!);
  t.same(buffers.keptSizes(), sizes([40, 80]));
  buffers.giveBack(lent[2]!);
  t.same(buffers.keptSizes(), sizes([40, 80]), 'a smaller one is dropped');
  buffers.giveBack(lent[3]!);
  t.same(buffers.keptSizes(), sizes([80, 160]), 'a larger one replaces the smallest');
  const big = buffers.take(210 * KB);
  t.same(buffers.keptSizes(), sizes([80, 160]), 'none large enough: a new one');
  t.equal(big.buffer.byteLength, Math.ceil(210 * KB * 1.25));
});
