import t from 'tap';
import { build } from '../helper.ts';

t.test('the replica routes are documented, with request components and problem+json errors', async (t) => {
  const app = await build(t);
  const doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json();
  for (const path of ['/nodes', '/nodes/{name}', '/replicas/settings', '/replicas/schedule', '/replicas', '/replicas/{name}']) {
    t.ok(doc.paths[path], `${path} documented`);
    for (const op of Object.values(doc.paths[path]) as Array<{ tags: string[]; summary: string }>) {
      t.same(op.tags, ['replicas']);
      t.ok(op.summary);
    }
  }
  t.equal(doc.paths['/replicas/schedule'].post.requestBody.content['application/json'].schema.$ref, '#/components/schemas/ReplicasScheduleRequestInput');
  t.equal(doc.paths['/nodes/{name}'].put.requestBody.content['application/json'].schema.$ref, '#/components/schemas/ReplicasNodeReportInput');
  t.ok(doc.paths['/replicas/schedule'].post.responses['409'].content['application/problem+json']);
  t.same(doc.components.schemas.ReplicasDiskReportInput.required, ['path', 'storageMaximum', 'storageAvailable']);
  t.equal((await app.inject({ method: 'GET', url: '/docs/json' })).statusCode, 200);
});
