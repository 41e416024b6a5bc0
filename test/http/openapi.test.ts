import t from 'tap';
import { z } from 'zod';
import { buildApp } from '../../src/app.ts';
import { parseConfig } from '../../src/config.ts';
import { zodApp } from '../../src/http/context.ts';
import { openSqliteStore } from '../../src/store/sqlite.ts';

t.test('named (registered) params and querystring schemas become inline parameters', async (t) => {
  const store = openSqliteStore(':memory:');
  const app = await buildApp({ config: parseConfig({ data_dir: ':memory:' }), store, processMetrics: false, eventLoopDelay: () => 0 });
  t.teardown(async () => { await app.close(); await store.close(); });
  const Params = z.object({ host: z.string().meta({ description: 'backend host' }) }).meta({ id: 'TestOpenApiParams' });
  const Query = z.object({ detail: z.enum(['true', 'false']).optional() }).meta({ id: 'TestOpenApiQuery' });
  const Body = z.object({ size: z.number() }).meta({ id: 'TestOpenApiBody' });
  zodApp(app).put('/things/:host', { schema: { tags: ['operations'], params: Params, querystring: Query, body: Body } }, async () => ({}));
  await app.ready();
  const doc = app.swagger() as unknown as { paths: Record<string, Record<string, { parameters: Array<{ name: string; in: string; description?: string; required: boolean }>; requestBody: { content: Record<string, { schema: { $ref: string } }> } }>> };
  const op = doc.paths['/things/{host}']!.put!;
  const byName = Object.fromEntries(op.parameters.map((p) => [p.name, p]));
  t.equal(byName.host?.in, 'path');
  t.equal(byName.host?.description, 'backend host');
  t.equal(byName.host?.required, true);
  t.equal(byName.detail?.in, 'query');
  t.equal(byName.detail?.required, false);
  t.equal(op.requestBody.content['application/json']!.schema.$ref, '#/components/schemas/TestOpenApiBodyInput', 'bodies keep their component');
});
