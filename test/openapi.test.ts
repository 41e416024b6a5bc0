import { readFileSync } from 'node:fs';
import t from 'tap';
import { currentOpenApi, OPENAPI_FILE } from '../scripts/openapi.ts';

t.test('openapi/openapi.json is what the app serves (run `npm run openapi` after changing routes)', async (t) => {
  const committed = readFileSync(OPENAPI_FILE, 'utf8');
  const served = await currentOpenApi();
  t.equal(committed, served, 'openapi/openapi.json is stale: run npm run openapi');
  const doc = JSON.parse(served);
  t.equal(doc.openapi, '3.1.0');
  for (const [path, methods] of Object.entries(doc.paths as Record<string, Record<string, { tags?: string[] }>>)) {
    for (const [method, op] of Object.entries(methods)) t.ok(op.tags?.length, `${method.toUpperCase()} ${path} has a tag for Swagger UI`);
  }
});
