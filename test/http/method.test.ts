// A wrong method on a Berth path answers 405 with Allow (problem+json naming the methods), not 404; a path no route
// knows stays 404. Placement's paths keep Placement's own 405 shape.
import t from 'tap';
import { build } from '../helper.ts';

const CASES: Array<[method: 'GET' | 'POST' | 'PUT' | 'DELETE' | 'PATCH' | 'OPTIONS', url: string, allow: string]> = [
  ['GET', '/volumes/schedule', 'POST'],
  ['GET', '/replicas/schedule', 'POST'],
  ['DELETE', '/replicas/settings', 'GET, HEAD, PUT'],
  ['POST', '/pools', 'GET, HEAD'],
  ['PATCH', '/backends/node1@lvm', 'PUT, DELETE'],
  ['POST', '/volumes/vol-1', 'GET, HEAD, DELETE'],
  ['PUT', '/nodes', 'GET, HEAD'],
  ['DELETE', '/healthz', 'GET, HEAD'],
  ['OPTIONS', '/volumes', 'GET, HEAD'],
];

t.test('wrong method on a known path: 405, Allow, problem+json that says what to use', async (t) => {
  const app = await build(t);
  for (const [method, url, allow] of CASES) {
    const res = await app.inject({ method, url });
    t.equal(res.statusCode, 405, `${method} ${url}`);
    t.equal(res.headers.allow, allow, `${method} ${url}: Allow`);
    t.match(res.headers['content-type'], /^application\/problem\+json/);
    t.same(res.json(), {
      type: '/problems/method-not-allowed', title: 'Method Not Allowed', status: 405,
      detail: `${method} is not allowed on ${url}; use ${allow}.`, allow: allow.split(', '),
    });
  }
});

t.test('unknown paths stay 404, and parametric routes still answer for their own values', async (t) => {
  const app = await build(t);
  t.equal((await app.inject({ url: '/nowhere' })).statusCode, 404);
  t.equal((await app.inject({ url: '/volumes/schedule/x' })).statusCode, 404);
  const volume = await app.inject({ url: '/volumes/vol-unknown' });
  t.equal(volume.statusCode, 404, 'GET /volumes/{id} is still the volume lookup');
  t.match(volume.json().detail, /vol-unknown/);
  t.equal((await app.inject({ method: 'DELETE', url: '/replicas/pvc-1-r-00000000' })).statusCode, 404);
});

t.test('Placement paths keep Placement\'s 405 shape', async (t) => {
  const app = await build(t);
  const res = await app.inject({ method: 'PATCH', url: '/resource_providers', headers: { 'openstack-api-version': 'placement 1.39' } });
  t.equal(res.statusCode, 405);
  t.match(res.json(), { errors: [{ status: 405, title: 'Method Not Allowed' }] });
});
