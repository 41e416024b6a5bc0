// Placement's allocation bodies by microversion: consumer_type is required from 1.38 and refused before it.
import t from 'tap';
import { build } from '../helper.ts';
import { call, createProviders } from './fixtures.ts';

const RP = '44444444-0000-4000-8000-000000000001';
const C1 = '55555555-0000-4000-8000-000000000001';
const C2 = '55555555-0000-4000-8000-000000000002';
const body = (extra: Record<string, unknown> = {}) => ({
  allocations: { [RP]: { resources: { VCPU: 1 } } }, consumer_generation: null, project_id: 'p', user_id: 'u', ...extra,
});

t.test('consumer_type by microversion, for PUT and POST /allocations', async (t) => {
  const app = await build(t);
  await createProviders(app, [{ uuid: RP, inventories: { VCPU: 8 } }]);
  const missing = await call(app, 'PUT', `/allocations/${C1}`, body(), '1.39');
  t.equal(missing.status, 400);
  t.equal(missing.body.errors[0].detail.includes("'consumer_type' is a required property"), true, missing.body.errors[0].detail);
  const post = await call(app, 'POST', '/allocations', { [C1]: body() }, '1.38');
  t.equal(post.status, 400, 'POST at 1.38 needs it too');
  const early = await call(app, 'PUT', `/allocations/${C1}`, body({ consumer_type: 'INSTANCE' }), '1.28');
  t.equal(early.status, 400, 'unknown before 1.38');
  t.match(early.body.errors[0].detail, /'consumer_type' was unexpected/);
  t.equal((await call(app, 'GET', `/resource_providers/${RP}/usages`)).body.usages.VCPU, 0, 'nothing was written');

  t.equal((await call(app, 'PUT', `/allocations/${C1}`, body(), '1.28')).status, 204, 'Nova\'s 1.28 form');
  t.equal((await call(app, 'PUT', `/allocations/${C2}`, body({ consumer_type: 'MIGRATION' }), '1.39')).status, 204);
  const got = await call(app, 'GET', `/allocations/${C2}`, undefined, '1.39');
  t.equal(got.body.consumer_type, 'MIGRATION');
  t.equal((await call(app, 'GET', `/allocations/${C1}`, undefined, '1.39')).body.consumer_type, 'unknown');
});
