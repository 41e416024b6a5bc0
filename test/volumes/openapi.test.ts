// The volumes routes in the OpenAPI document: tagged, summarised, errors documented, and the committed file current.
import { readFileSync } from 'node:fs';
import t from 'tap';
import { OPENAPI_FILE, currentOpenApi } from '../../scripts/openapi.ts';

const VOLUMES_PATHS = [
  '/backends/{host}', '/backends', '/pools', '/volumes/schedule', '/volumes', '/volumes/{id}',
  '/volume/', '/volume/v3/{project_id}/scheduler-stats/get_pools',
];

t.test('every volumes route is documented and the committed openapi.json is current', async (t) => {
  const current = JSON.parse(await currentOpenApi());
  const committed = JSON.parse(readFileSync(OPENAPI_FILE, 'utf8'));
  for (const path of VOLUMES_PATHS) {
    const item = current.paths[path];
    t.ok(item, `${path} documented`);
    for (const [method, op] of Object.entries(item as Record<string, { tags: string[]; summary: string; responses: Record<string, unknown> }>)) {
      t.same(op.tags, ['volumes'], `${method} ${path} tagged`);
      t.ok(op.summary, `${method} ${path} has a summary`);
      t.ok(Object.keys(op.responses).some((code) => code.startsWith('2') || code === '300'), `${method} ${path} documents success`);
    }
    t.same(committed.paths[path], item, `openapi/openapi.json is current for ${path} (npm run openapi)`);
  }
  const schedule = current.paths['/volumes/schedule'].post;
  t.ok(schedule.responses['409'].content['application/problem+json'], '409 is problem+json');
  t.match(schedule.requestBody.content['application/json'].schema.$ref, /VolumesScheduleRequestInput$/);
  t.same(current.components.schemas.VolumesScheduleRequestInput.required, ['size']);
});
