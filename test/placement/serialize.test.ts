// The buffers answers are copied into: a lease's buffers are its answer's alone until it gives them back, then the
// next answers reuse them, within the pool's bounds. (That an answer's bytes stay its own over a real socket while
// later answers reuse the pool is in streaming.test.ts.)
import t from 'tap';
import { AnswerBuffers } from '../../src/placement/serialize.ts';

const KB = 1024;

t.test("a lease's buffers are its own until given back, then the next answers reuse them", async (t) => {
  const pool = new AnswerBuffers();
  const first = pool.lease();
  const a = first.take(100 * KB);
  const b = first.take(100 * KB);
  t.equal(a.length, 100 * KB, 'of the size asked');
  t.not(a.buffer, b.buffer, 'two buffers of one answer: two memories');
  t.same(pool.keptSizes(), [], 'nothing kept while lent');
  first.giveBack();
  t.same(pool.keptSizes(), [125 * KB, 125 * KB], 'kept, with the quarter more they were made with');
  const second = pool.lease();
  const c = second.take(120 * KB);
  t.ok(c.buffer === a.buffer || c.buffer === b.buffer, 'the next answer that fits takes the same memory');
  t.equal(c.length, 120 * KB);
  t.same(pool.keptSizes(), [125 * KB], 'no longer kept while lent again');
  const d = pool.lease().take(50 * KB);
  t.not(d.buffer, c.buffer, 'nor lent to another answer meanwhile (it takes the other one)');
  t.same(pool.keptSizes(), []);
  first.giveBack();
  t.same(pool.keptSizes(), [], 'a lease given back twice gives nothing the second time');
  const small = pool.lease();
  t.equal(small.take(8 * KB).length, 8 * KB, "a small answer: Node's own pool");
  small.giveBack();
  t.same(pool.keptSizes(), [], 'and nothing of it is kept');
});

t.test('within keepBytes: a lease holds no more, the pool keeps no more, a larger buffer makes way', async (t) => {
  const pool = new AnswerBuffers(300 * KB);
  const lease = pool.lease();
  const taken = [0, 1, 2, 3].map(() => lease.take(80 * KB));
  t.equal(new Set(taken.map((b) => b.buffer)).size, 4, 'four buffers');
  lease.giveBack();
  t.same(pool.keptSizes(), [100 * KB, 100 * KB, 100 * KB], 'the lease held three (300 KB): the fourth was left to the GC');
  const large = pool.lease();
  large.take(200 * KB);
  large.giveBack();
  t.same(pool.keptSizes(), [250 * KB], 'none fitted 200 KB; coming back, the new 250 KB one displaced the smaller ones');
  const again = pool.lease();
  again.take(80 * KB);
  t.same(pool.keptSizes(), [], 'the 250 KB one serves an 80 KB answer');
  const other = pool.lease();
  other.take(80 * KB);
  again.giveBack();
  other.giveBack();
  t.same(pool.keptSizes(), [250 * KB], 'a smaller buffer does not displace a larger one');
});
