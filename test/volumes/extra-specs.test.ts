// CapabilitiesFilter's extra-spec operators with Python's semantics (extra_specs_ops.match).
import t from 'tap';
import { boolFromString, compileExtraSpecs, matchExtraSpec, pyFloat, satisfiesExtraSpecs } from '../../src/volumes/extra-specs.ts';

t.test('every operator Cinder has', async (t) => {
  const table: Array<[unknown, string | null, boolean, string]> = [
    [null, null, true, 'None requirement matches None'],
    ['x', null, false, 'None requirement, value set'],
    ['lvm1', 'lvm1', true, 'no operator: string equality'],
    [true, 'True', false, 'no operator: a bool is not the string "True"'],
    [5, '5', false, 'no operator: a number is not a string'],
    [null, '<is> True', false, 'an operator on None never matches'],
    [true, '<is> True', true, '<is> bool'],
    ['yes', '<is> True', true, '<is> true string'],
    [false, '<is> False', true, '<is> False matches False'],
    ['xyz', '<is> False', true, '<is> False matches anything not true (bool_from_string default)'],
    ['False', '<is> True', false, '<is> the string False'],
    [1, '<is> true', true, '<is> the number 1'],
    [10, '= 5', true, '= is "at least"'],
    [5, '= 5', true, '= equal'],
    [4, '= 5', false, '= below'],
    ['10', '= 5', true, '= float() of a string'],
    ['abc', '= 5', false, '= ValueError → no match'],
    [5, '== 5.0', true, '== float'],
    [5, '!= 5', false, '!='],
    [6, '>= 5', true, '>='],
    [6, '<= 5', false, '<='],
    ['1_000', '>= 999', true, 'Python float() accepts underscores'],
    [' 7 ', '== 7', true, 'float() strips whitespace'],
    ['abc', 's== abc', true, 's=='],
    ['abc', 's!= abc', false, 's!='],
    ['abc', 's< abd', true, 's<'],
    ['abc', 's<= abc', true, 's<='],
    ['abd', 's> abc', true, 's>'],
    ['abc', 's>= abd', false, 's>='],
    [5, 's< 6', false, 's< on a number: Cinder raises TypeError; no match'],
    ['iSCSI', '<in> SCSI', true, '<in> substring'],
    ['iSCSI', '<in> FC', false, '<in> missing'],
    [{ a: 1 }, '<in> a', true, '<in> on a dict: key'],
    ['b', '<or> a <or> b <or> c', true, '<or>'],
    ['d', '<or> a <or> b <or> c', false, '<or> none'],
    ['a', '<or>', false, 'bare <or>: Cinder raises IndexError; no match'],
    ['', '', true, 'empty requirement: equality with ""'],
    ['x', '<is>', false, 'operator without operand'],
  ];
  for (const [value, req, want, label] of table) t.equal(matchExtraSpec(value, req), want, label);
});

t.test('bool_from_string and float() as Python', async (t) => {
  for (const s of ['1', 't', 'TRUE', 'on', 'y', 'Yes', ' true ']) t.equal(boolFromString(s), true, s);
  for (const s of ['0', 'f', 'no', 'xyz', '', '1.0']) t.equal(boolFromString(s), false, s);
  t.equal(pyFloat('inf'), Infinity);
  t.equal(pyFloat('-Infinity'), -Infinity);
  t.ok(Number.isNaN(pyFloat('nan')));
  t.equal(pyFloat('1e3'), 1000);
  t.equal(pyFloat('.5'), 0.5);
  t.equal(pyFloat('5.'), 5);
  t.equal(pyFloat('1__0'), undefined);
  t.equal(pyFloat(''), undefined);
  t.equal(pyFloat(true), 1);
  t.equal(pyFloat({}), undefined);
});

t.test('scopes, nesting and list capabilities', async (t) => {
  const caps = {
    thin_provisioning_support: true,
    volume_backend_name: 'lvm1',
    storage_protocol: ['iSCSI', 'iscsi'],
    nested: { level: { deep: 'x' } },
  };
  const ok = (specs: Record<string, string>) => satisfiesExtraSpecs(caps, compileExtraSpecs(specs));
  t.equal(ok({ 'provisioning:type': 'thick', 'vendor:foo': 'bar', 'qos:iops': '5' }), null, 'other scopes are ignored');
  t.equal(ok({ 'capabilities:thin_provisioning_support': '<is> True' }), null, 'capabilities: prefix stripped');
  t.equal(ok({ storage_protocol: 'iscsi' }), null, 'a list capability matches if any element does');
  t.equal(ok({ 'capabilities:nested:level:deep': 'x' }), null, 'nested capability');
  t.match(ok({ missing_cap: 'x' }), { reason: 'missing', missing: 'missing_cap' });
  t.match(ok({ volume_backend_name: 'lvm2' }), { reason: 'mismatch', value: 'lvm1' });
  t.match(ok({ 'capabilities:nested:nope': 'x' }), { reason: 'missing', missing: 'nope' });
});
