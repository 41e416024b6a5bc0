// The decision ring: bounded, newest first, entries kept as recorded (and small).
import t from 'tap';
import { boundTrace, DecisionLog, TRACE_BUDGET_BYTES, type DecisionInput } from '../../src/http/decision-log.ts';

const input = (n: number, over: Partial<DecisionInput> = {}): DecisionInput => ({
  dialect: 'volumes', outcome: 'placed', status: 200, dry_run: false, request: { size: n }, targets: [`pool-${n}`],
  duration_ms: n / 10, ...over,
});

t.test('bounded: the oldest entries go, ids keep counting, newest first', async (t) => {
  let clock = Date.UTC(2026, 11, 1, 10, 0, 0);
  const log = new DecisionLog(3, () => clock);
  for (let n = 1; n <= 5; n++) {
    log.record(input(n));
    clock += 1000;
  }
  t.equal(log.size, 3);
  t.same(log.list().map((e) => e.id), [5, 4, 3], 'newest first, the two oldest pushed out');
  t.same(log.list().map((e) => e.request.size), [5, 4, 3]);
  t.equal(log.get(2), undefined, 'a pushed-out decision is gone');
  t.equal(log.get(4)?.at, '2026-12-01T10:00:03.000Z', 'recorded at the injected clock');
  t.same(log.list({ limit: 2 }).map((e) => e.id), [5, 4]);
  t.same(log.list({ after: 3 }).map((e) => e.id), [5, 4], 'after: only newer ones');
  t.same(log.list({ after: 5 }), []);
  for (let n = 6; n <= 10; n++) log.record(input(n));
  t.same(log.list().map((e) => e.id), [10, 9, 8], 'wraps around the ring more than once');
});

t.test('the default keeps 200', async (t) => {
  const log = new DecisionLog();
  for (let n = 1; n <= 250; n++) log.record(input(n));
  t.equal(log.capacity, 200);
  t.equal(log.size, 200);
  const ids = log.list().map((e) => e.id);
  t.equal(ids[0], 250);
  t.equal(ids.at(-1), 51);
});

t.test('filters by dialect', async (t) => {
  const log = new DecisionLog(10);
  log.record(input(1));
  log.record(input(2, { dialect: 'placement', outcome: 'candidates' }));
  log.record(input(3, { dialect: 'replicas' }));
  log.record(input(4, { dialect: 'placement', outcome: 'no_candidates' }));
  t.same(log.list({ dialect: 'placement' }).map((e) => e.outcome), ['no_candidates', 'candidates']);
  t.same(log.list({ dialect: 'placement', limit: 1 }).map((e) => e.id), [4]);
});

t.test('content: what was recorded, as a copy', async (t) => {
  const log = new DecisionLog(5, () => 0);
  const explain = { filters: [{ name: 'CapacityFilter', in: 2, out: 1, rejected: [{ pool: 'a#p', reason: 'too small' }] }], weighed: [] };
  const request = { size: 10, volume_type: { extra_specs: { 'provisioning:type': 'thick' } } };
  const entry = log.record({ ...input(1), request, detail: 'why', counts: { returned: 1 }, request_id: 'req-1', explain });
  explain.filters[0]!.in = 99;
  request.size = 99;
  const kept = log.get(entry.id)!;
  t.same(kept, {
    id: 1, at: '1970-01-01T00:00:00.000Z', dialect: 'volumes', outcome: 'placed', status: 200, dry_run: false,
    request: { size: 10, volume_type: { extra_specs: { 'provisioning:type': 'thick' } } }, targets: ['pool-1'],
    duration_ms: 0.1, detail: 'why', counts: { returned: 1 }, request_id: 'req-1',
    explain: { filters: [{ name: 'CapacityFilter', in: 2, out: 1, rejected: [{ pool: 'a#p', reason: 'too small' }] }], weighed: [] },
  }, 'every field, unaffected by later changes to the caller\'s objects');
  t.notOk('explain_omitted' in kept, 'a small trace is whole');
  t.notOk('explain' in log.record(input(2)), 'an untraced decision has no explain');
});

t.test('large traces and requests are cut to a budget; counts stay exact', async (t) => {
  const rejected = Array.from({ length: 10_000 }, (_, i) => ({ pool: `host-${i}@b#pool-${i}`, reason: `Insufficient free space for volume creation (requested / avail): 500/${i % 400} GiB.` }));
  const weighed = Array.from({ length: 300 }, (_, i) => ({ pool: `ok-${i}`, weight: 1 - i / 300, weighers: { CapacityWeigher: { raw: 1000 - i, normalized: 1 - i / 300 } } }));
  const trace = { filters: [{ name: 'CapacityFilter', in: 10_300, out: 300, rejected }], weighed };
  t.ok(JSON.stringify(trace).length > 10 * TRACE_BUDGET_BYTES, 'the trace is far over the budget');
  const log = new DecisionLog(2);
  const entry = log.record({ ...input(1), explain: trace, request: { blob: 'x'.repeat(10_000) }, detail: 'y'.repeat(10_000) });
  t.ok(JSON.stringify(entry.explain).length <= TRACE_BUDGET_BYTES, 'the stored trace fits the budget');
  const kept = entry.explain as typeof trace;
  t.equal(kept.filters[0]!.in, 10_300, 'in/out counts are exact');
  t.equal(kept.filters[0]!.out, 300);
  t.same(kept.filters[0]!.rejected[0], rejected[0], 'the first rejections are kept as they were');
  t.equal(kept.weighed[0]!.pool, 'ok-0', 'the best ranked first');
  t.equal(entry.explain_omitted, 10_000 - kept.filters[0]!.rejected.length + 300 - kept.weighed.length, 'omitted counts every cut item');
  t.ok(JSON.stringify(entry.request).length < 2100, 'the request digest is bounded');
  t.ok(entry.detail!.length <= 2049, 'the detail is bounded');
  t.same(trace.filters[0]!.rejected.length, 10_000, 'the caller\'s trace is untouched');

  const hopeless = { items: Array.from({ length: 5 }, () => ({ text: 'z'.repeat(TRACE_BUDGET_BYTES) })) };
  const dropped = boundTrace(hopeless);
  t.match(dropped, { explain: { dropped: /larger than 65536 bytes/ }, omitted: 0 }, 'a trace that cannot fit is dropped, and says so');
});

t.test('the request digest is stored as its JSON reads back, whatever its shape', async (t) => {
  class Named { constructor(readonly name: string) {} }
  let deep: Record<string, unknown> = { leaf: 1 };
  for (let i = 0; i < 8; i++) deep = { next: deep };
  const near = 'q'.repeat(2048 - '{"s":""}'.length);
  const cases: Array<[string, Record<string, unknown>]> = [
    ['flat', { size: 10, id: 'v-1', multiattach: true, zone: null }],
    ['nested objects and arrays', { size: 1, volume_type: { extra_specs: { tier: 'gold' } }, nodeSelector: ['a', 'b'] }],
    ['undefined fields dropped', { volume: undefined, size: 2 }],
    ['non-finite numbers become null', { size: Number.NaN, weight: Infinity }],
    ['a Date becomes its ISO string', { at: new Date(0) }],
    ['a class instance becomes a plain object', { who: new Named('x') }],
    ['deeper than the copy goes', deep],
    ['arrays with holes and undefined', { list: [1, undefined, 3] }],
    ['escapes', { s: 'line\nbreak "quoted" \u0001' }],
    ['negative zero is written 0', { size: -0 }],
    ['exactly the budget', { s: near }],
    ['one over the budget', { s: `${near}q` }],
    ['escapes that pass the budget once written', { s: '\u0001'.repeat(400) }],
  ];
  const log = new DecisionLog();
  for (const [name, request] of cases) {
    const json = JSON.stringify(request);
    const expected = json.length <= 2048 ? JSON.parse(json) : { truncated: `${json.slice(0, 2048)}…` };
    const stored = log.record({ ...input(1), request }).request;
    t.same(stored, expected, name);
    t.equal(JSON.stringify(stored), JSON.stringify(expected), `${name}: the same JSON, key order included`);
  }
  const request = { size: 3, volume_type: { extra_specs: { tier: 'gold' } }, list: [1, 2] };
  const stored = log.record({ ...input(1), request }).request as typeof request;
  request.volume_type.extra_specs.tier = 'lead';
  request.list.push(3);
  t.same(stored, { size: 3, volume_type: { extra_specs: { tier: 'gold' } }, list: [1, 2] }, 'a copy, not the caller\'s objects');
});

t.test('capacity must be a positive integer', async (t) => {
  t.throws(() => new DecisionLog(0), RangeError);
  t.throws(() => new DecisionLog(1.5), RangeError);
});
