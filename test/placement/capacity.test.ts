// The pure parts: Placement's capacity arithmetic (reference §3), query parsing details (§1) and the Python
// formatting behind the jsonschema messages.
import t from 'tap';
import { capacity, fitFailure, fitsMerged } from '../../src/placement/capacity.ts';
import { parseAllocationCandidatesQuery, parseResources } from '../../src/placement/query.ts';
import { isUuidLike } from '../../src/placement/validate.ts';
import { pformat, pyRepr } from '../../src/placement/pyformat.ts';

const inv = (o: Partial<{ total: number; reserved: number; min_unit: number; max_unit: number; step_size: number; allocation_ratio: number }>) => ({
  total: 10, reserved: 0, min_unit: 1, max_unit: 10, step_size: 1, allocation_ratio: 1, ...o,
});

t.test('capacity = int((total - reserved) * allocation_ratio)', async (t) => {
  const cases: Array<[ReturnType<typeof inv>, number]> = [
    [inv({}), 10],
    [inv({ allocation_ratio: 0.9 }), 9], // double precision (sqlite); MySQL's FLOAT would give 8
    [inv({ total: 4, allocation_ratio: 16 }), 64],
    [inv({ total: 5825, reserved: 512, allocation_ratio: 1.5 }), 7969], // 7969.5 truncated
    [inv({ total: 8, reserved: 8 }), 0], // reserved may equal total (1.26+)
  ];
  for (const [i, expected] of cases) t.equal(capacity(i), expected, JSON.stringify(i));
});

t.test('fit checks in SQL order; the merged re-check uses the truncated capacity and max_unit only', async (t) => {
  const i = inv({ total: 5825, reserved: 512, allocation_ratio: 1.5, max_unit: 8000, step_size: 1 });
  t.equal(fitFailure(i, 7968, 1), null, '7968 + 1 <= 7969.5');
  t.equal(fitFailure(i, 7969, 1), 'capacity');
  t.equal(fitFailure(inv({ min_unit: 2 }), 0, 1), 'min_unit');
  t.equal(fitFailure(inv({ max_unit: 2 }), 0, 3), 'max_unit');
  t.equal(fitFailure(inv({ step_size: 2 }), 0, 3), 'step_size');
  t.equal(fitFailure(inv({}), 10, 1), 'capacity', 'capacity is checked first');
  t.equal(fitsMerged(i, 7969, 1), false, 'used + sum > int(capacity)');
  t.equal(fitsMerged(inv({ max_unit: 4 }), 0, 5), false, 'sum > max_unit');
  t.equal(fitsMerged(inv({ step_size: 2 }), 0, 3), true, 'step_size not re-checked');
});

t.test('query details: last resources wins, !! is !, repeated required before 1.39 keeps the last', async (t) => {
  t.same([...parseResources('VCPU:1,VCPU:3')], [['VCPU', 3]]);
  t.same([...parseResources('VCPU: 2')], [['VCPU', 2]], "int() strips spaces");
  t.throws(() => parseResources(' VCPU'), /Got: {2}VCPU\./);
  let q = parseAllocationCandidatesQuery([['resources', 'VCPU:1'], ['required', '!!CUSTOM_A']], 39);
  t.same([...q.groups[0]!.forbidden], ['CUSTOM_A']);
  q = parseAllocationCandidatesQuery([['resources', 'VCPU:1'], ['required', 'A'], ['required', 'B']], 38);
  t.same(q.groups[0]!.required, [['B']]);
  q = parseAllocationCandidatesQuery([['resources', 'VCPU:1'], ['required', 'A'], ['required', 'in:B,C']], 39);
  t.same(q.groups[0]!.required, [['A'], ['B', 'C']]);
  q = parseAllocationCandidatesQuery([['resources', 'VCPU:1'], ['member_of', 'in:a1111111-1111-1111-1111-111111111111,b2222222-2222-2222-2222-222222222222'], ['member_of', '!c3333333-3333-3333-3333-333333333333'], ['member_of', '!in:d4444444-4444-4444-4444-444444444444']], 39);
  t.same(q.groups[0]!.memberOf, [['a1111111-1111-1111-1111-111111111111', 'b2222222-2222-2222-2222-222222222222']]);
  t.same([...q.groups[0]!.forbiddenAggs].sort(), ['c3333333-3333-3333-3333-333333333333', 'd4444444-4444-4444-4444-444444444444']);
  q = parseAllocationCandidatesQuery([['resources', 'VCPU:1'], ['limit', '0'], ['limit', '1'], ['group_policy', 'isolate'], ['group_policy', 'none']], 39);
  t.equal(q.limit, null, 'the first limit is used (0 = no limit) while the last is validated');
  t.equal(q.groupPolicy, 'isolate', 'group_policy: first');
  t.ok(isUuidLike('{A1111111111111111111111111111111}'));
  t.ok(isUuidLike('urn:uuid:a1111111-1111-1111-1111-111111111111'));
  t.notOk(isUuidLike('a111111-1111-1111-1111-111111111111'));
});

t.test('Python repr and pformat(width=72)', async (t) => {
  t.equal(pyRepr({ b: 'x', a: [1, true, null] }), "{'a': [1, True, None], 'b': 'x'}");
  t.equal(pyRepr("it's"), '"it\'s"');
  t.equal(pformat({ limit: '0' }), "{'limit': '0'}");
  t.equal(
    pformat({ type: ['integer', 'string'], pattern: '^[1-9][0-9]*$', minimum: 1, minLength: 1 }),
    "{'minLength': 1,\n 'minimum': 1,\n 'pattern': '^[1-9][0-9]*$',\n 'type': ['integer', 'string']}",
  );
});
