// The buffers answers are copied into: a lease's buffers are its answer's alone until it gives them back, then the
// next answers reuse them, within the pool's bounds. (That an answer's bytes stay its own over a real socket while
// later answers reuse the pool is in streaming.test.ts.) And the summaries of a model without trees, which take a
// shorter path than the general one to the same bytes, and the one-provider requests, written from one template.
import t from 'tap';
import { PlacementModel } from '../../src/placement/model.ts';
import { parseAllocationCandidatesQuery } from '../../src/placement/query.ts';
import { findCandidates } from '../../src/placement/scheduler.ts';
import { AnswerBuffers, candidatesBody, candidatesChunks } from '../../src/placement/serialize.ts';

const KB = 1024;
const uuid = (i: number) => `00000000-0000-4000-8000-${i.toString(16).padStart(12, '0')}`;

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

// A deployment without trees takes a shorter path to the summaries (each candidate's provider is its own tree): the
// same bytes as the general path, which a tree anywhere in the model makes the serialiser take.
t.test('without trees, the summaries are the general path\'s, in the same order, at every microversion band', async (t) => {
  const m = new PlacementModel();
  m.traits.add('CUSTOM_T3');
  const inventories = (i: number) => ({
    VCPU: { total: 8 + i, reserved: 0, min_unit: 1, max_unit: 64, step_size: 1, allocation_ratio: 2 },
    MEMORY_MB: { total: 4096, reserved: 512, min_unit: 1, max_unit: 4096, step_size: 1, allocation_ratio: 1 },
  });
  for (let i = 1; i <= 6; i++) {
    m.applyProvider({
      uuid: uuid(i), name: `cn${i}`, parent_provider_uuid: null, generation: 1, inventories: inventories(i),
      traits: i % 2 ? ['CUSTOM_T3'] : [], aggregates: [],
    });
  }
  for (const mv of [10, 17, 26, 29, 39]) {
    const q = parseAllocationCandidatesQuery([['resources', 'VCPU:24']], mv);
    const { candidates } = findCandidates(m, q, { randomize: false, nestedAware: mv >= 29 });
    t.equal(candidates.length, 3, 'the providers with room');
    t.ok(candidates.every((c) => c.single), 'one provider each');
    const requested = new Set(['VCPU']);
    const flat = candidatesBody(m, candidates, mv, requested).toString();
    // A tree elsewhere: the general path, with the same candidates.
    m.applyProvider({ uuid: uuid(100), name: 'root', parent_provider_uuid: null, generation: 1, inventories: {}, traits: [], aggregates: [] });
    m.applyProvider({ uuid: uuid(101), name: 'child', parent_provider_uuid: uuid(100), generation: 1, inventories: {}, traits: [], aggregates: [] });
    t.ok(m.nestedCount > 0);
    t.equal(flat, candidatesBody(m, candidates, mv, requested).toString(), `1.${mv}: the same bytes`);
    m.removeProvider(uuid(101));
    m.removeProvider(uuid(100));
    const summaries = Object.keys((JSON.parse(flat) as { provider_summaries: object }).provider_summaries);
    t.same(summaries, candidates.map((c) => c.single!.uuid), `1.${mv}: one summary per candidate, in the candidates' order`);
  }
});

// One group, one provider a request: the requests are copies of one template with each provider's uuid written in,
// in blocks of about the chunk size; in chunks of any size they are the bytes of the whole answer, and what the
// candidates' own maps say.
t.test('one-provider requests: the maps\' requests, in any chunk size, at every microversion band', async (t) => {
  const m = new PlacementModel();
  for (let i = 1; i <= 40; i++) {
    m.applyProvider({
      uuid: uuid(i), name: `cn${i}`, parent_provider_uuid: null, generation: 1, traits: [], aggregates: [],
      inventories: { VCPU: { total: 8 + i, reserved: 0, min_unit: 1, max_unit: 64, step_size: 1, allocation_ratio: 1 } },
    });
  }
  for (const [mv, query] of [[12, 'resources=VCPU:2'], [33, 'resources=VCPU:3'], [34, 'resources=VCPU:2'], [39, 'resources_G1=VCPU:1']] as const) {
    const [key, value] = query.split('=') as [string, string];
    const q = parseAllocationCandidatesQuery([[key, value]], mv);
    const { candidates } = findCandidates(m, q, { randomize: false, nestedAware: mv >= 29 });
    t.equal(candidates.length, 40);
    t.ok(candidates.every((c) => c.single), 'one provider each');
    const requested = new Set(['VCPU']);
    const whole = candidatesBody(m, candidates, mv, requested);
    const expected = candidates.map((c) => ({
      allocations: Object.fromEntries([...c.allocations].map(([p, res]) => [p.uuid, { resources: Object.fromEntries(res) }])),
      ...(mv >= 34 ? { mappings: Object.fromEntries([...c.mappings].map(([s, ps]) => [s, ps.map((p) => p.uuid)])) } : {}),
    }));
    t.same((JSON.parse(whole.toString()) as { allocation_requests: unknown }).allocation_requests, expected, `1.${mv} ${query}`);
    for (const chunkBytes of [1, 100, 1000]) {
      const pool = new AnswerBuffers(1024 * KB, 64);
      const lease = pool.lease();
      const chunks = [...candidatesChunks(m, candidates, mv, requested, '', chunkBytes, lease)];
      t.ok(chunks.length > 1, `in ${chunks.length} chunks of about ${chunkBytes} bytes`);
      t.equal(Buffer.concat(chunks).toString(), whole.toString(), `1.${mv}, chunks of about ${chunkBytes} bytes: the same bytes`);
      lease.giveBack();
    }
    // A uuid not in Placement's form anywhere in the model: each request is written from its maps, to the same bytes.
    m.applyProvider({ uuid: 'not-a-canonical-uuid', name: 'odd', parent_provider_uuid: null, generation: 1, inventories: {}, traits: [], aggregates: [] });
    t.equal(m.uuidWords(), undefined);
    t.equal(candidatesBody(m, candidates, mv, requested).toString(), whole.toString(), `1.${mv}: the maps' path, the same bytes`);
    m.removeProvider('not-a-canonical-uuid');
    t.ok(m.uuidWords());
  }
});
