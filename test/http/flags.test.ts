// The one boolean query flag type: true/false, or any case for Placement's parameters.
import t from 'tap';
import { z } from 'zod';
import { queryFlag } from '../../src/http/flags.ts';

t.test('queryFlag: the words true and false; ignoreCase for Placement-style parameters', async (t) => {
  const strict = z.object({ f: queryFlag('a flag') });
  const loose = z.object({ f: queryFlag('a flag', { ignoreCase: true }) });
  const table: Array<[value: string | undefined, strict: boolean | 'refused' | undefined, loose: boolean | 'refused' | undefined]> = [
    ['true', true, true],
    ['false', false, false],
    [undefined, undefined, undefined],
    ['True', 'refused', true],
    ['FALSE', 'refused', false],
    ['1', 'refused', 'refused'],
    ['yes', 'refused', 'refused'],
    ['', 'refused', 'refused'],
  ];
  for (const [value, s, l] of table) {
    for (const [schema, want, label] of [[strict, s, 'strict'], [loose, l, 'ignoreCase']] as const) {
      const r = schema.safeParse(value === undefined ? {} : { f: value });
      if (want === 'refused') t.notOk(r.success, `${label} ${value}: refused`);
      else t.same(r.success ? r.data.f : 'refused', want, `${label} ${value}`);
    }
  }
});
