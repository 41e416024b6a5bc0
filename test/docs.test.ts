// Docs that work: every command of README.md and docs/*.md runs in document order against a fresh listening Berth
// and prints what the document says (the rules are in test/docs-harness.ts), and no document points outside the
// repository.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { DOCS, outputDifferences, root, runDocument, tokens } from './docs-harness.ts';

t.test('the output rules', async (t) => {
  t.same(tokens('{"a":1}{"b":[2]}\n204\n'), [{ json: { a: 1 } }, { json: { b: [2] } }, { text: '204' }]);
  t.same(outputDifferences('{"a":"…","b":2}', '{"a":{"x":1},"b":2}'), []);
  t.same(outputDifferences('{"a":1}', '{"a":1,"c":3}'), ['output #1.c: not in the document']);
  t.same(outputDifferences('{"a":1,"…":"…"}', '{"a":1,"c":3}'), []);
  t.same(outputDifferences('["x","…"]', '["x","y","z"]'), []);
  t.same(outputDifferences('["x"]', '["x","y"]').length, 1);
  t.same(outputDifferences('{"n":"pvc-1-r-…"}', '{"n":"pvc-1-r-1a2b3c4d"}'), []);
  t.same(outputDifferences('HTTP/1.1 204 …', 'HTTP/1.1 204 No Content\r\n'), []);
  t.equal(outputDifferences('{"a":1}', '').length, 1, 'nothing printed is a difference');
  t.equal(outputDifferences('', '{"a":1}').length, 1, 'an undocumented output is a difference');
});

t.test('the documents name nothing outside the repository', async (t) => {
  for (const file of DOCS) {
    const text = readFileSync(join(root, file), 'utf8');
    for (const banned of [/\.\.\/shared/, /\bshared\/(reference|seeds|conformance)/, /DESIGN\.md/, /the reference\b/i, /user'?s document/i, /\bthe seed/i, /\bissue\b/i, /^\s*open http/m]) {
      t.notMatch(text, banned, `${file}: ${banned}`);
    }
  }
});

for (const file of DOCS) {
  t.test(`${file}: every command prints what the document shows`, async (t) => runDocument(t, file));
}
