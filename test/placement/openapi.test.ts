// The Placement routes are documented: tag, summary, the microversion header, request schemas, Placement errors.
import t from 'tap';
import { build } from '../helper.ts';

t.test('every Placement route is in the OpenAPI document with its tag, summary and header', async (t) => {
  const app = await build(t);
  const doc = app.swagger() as { paths: Record<string, Record<string, { tags?: string[]; summary?: string; parameters?: Array<{ name: string; in: string }> }>>; components: { schemas: Record<string, unknown> } };
  const placementPaths = Object.keys(doc.paths).filter((p) => /^\/(resource_providers|traits|resource_classes|allocations|usages|aggregates|allocation_candidates)/.test(p));
  t.ok(placementPaths.length >= 16, `${placementPaths.length} paths`);
  for (const path of placementPaths) {
    for (const [method, op] of Object.entries(doc.paths[path]!)) {
      t.same(op.tags, ['placement'], `${method} ${path} tag`);
      t.ok(op.summary, `${method} ${path} summary`);
      t.ok(op.parameters?.some((p) => p.in === 'header' && p.name === 'openstack-api-version'), `${method} ${path} header`);
    }
  }
  for (const id of ['PlacementConsumerAllocationsInput', 'PlacementInventoriesPutInput', 'PlacementAggregateMetadataInput', 'PlacementAllocationCandidates', 'PlacementError']) {
    t.ok(doc.components.schemas[id], id);
  }
  const r = await app.inject({ method: 'GET', url: '/docs/json' });
  t.equal(r.statusCode, 200);
});
