// Fuzzing the volumes routes' bodies, paths and query strings (fast-check, bounded): never a 5xx, errors always
// problem+json, and a refused request leaves the state unchanged.
import type { FastifyInstance } from 'fastify';
import fc from 'fast-check';
import t from 'tap';
import { build } from '../helper.ts';

const VALID_POOL = {
  pool_name: 'a', total_capacity_gb: 100, free_capacity_gb: 50, provisioned_capacity_gb: 20, reserved_percentage: 5,
  max_over_subscription_ratio: 'auto', thin_provisioning_support: true, thick_provisioning_support: false,
};
const POOL_KEYS = Object.keys(VALID_POOL);

async function snapshot(app: FastifyInstance): Promise<string> {
  const pools = await app.inject({ method: 'GET', url: '/pools?detail=true' });
  const volumes = await app.inject({ method: 'GET', url: '/volumes' });
  return pools.body + volumes.body;
}

async function check(t: { fail(message: string): unknown }, app: FastifyInstance, method: string, url: string, payload?: unknown): Promise<boolean> {
  const before = await snapshot(app);
  const res = await app.inject({
    method: method as 'GET',
    url,
    ...(payload === undefined ? {} : { payload: JSON.stringify(payload), headers: { 'content-type': 'application/json' } }),
  });
  if (res.statusCode >= 500) {
    t.fail(`${method} ${url} → ${res.statusCode} ${res.body}`);
    return false;
  }
  if (res.statusCode >= 400) {
    const body = res.json() as Record<string, unknown>;
    // A '..' segment can resolve to another dialect's path (e.g. Placement's GET /), which has its own error shape.
    const resolved = new URL(url, 'http://berth').pathname;
    const ours = ['/backends', '/pools', '/volumes'].some((p) => resolved.startsWith(p));
    const ok = !ours || /application\/problem\+json/.test(String(res.headers['content-type'])) && typeof body.type === 'string' &&
      typeof body.title === 'string' && body.status === res.statusCode && typeof body.detail === 'string';
    if (!ok) {
      t.fail(`${method} ${url} → not a problem: ${res.body}`);
      return false;
    }
    if ((await snapshot(app)) !== before) {
      t.fail(`${method} ${url} was refused (${res.statusCode}) but changed the state`);
      return false;
    }
  }
  return true;
}

const segment = fc.oneof(
  fc.string({ maxLength: 20 }).map(encodeURIComponent),
  fc.constantFrom('node1@lvm', 'h1@x', '%E0%A4%A', '%', 'a#b', '..', 'a%2Fb', ' ', 'x'.repeat(300)),
);
const queryValue = fc.oneof(fc.string({ maxLength: 12 }), fc.constantFrom('true', 'false', '1', '-5', '1e309', 'NaN', '{}', '{"extra_specs":{"a":1}}'));
const query = fc
  .array(fc.tuple(fc.constantFrom('detail', 'name', 'volume_type', 'size', 'dry_run', 'explain', 'availability_zone', 'x', 'pool_name'), queryValue), { maxLength: 4 })
  .map((pairs) => (pairs.length ? '?' + pairs.map(([k, v]) => `${k}=${encodeURIComponent(v)}`).join('&') : ''));

/** A valid pool with one field replaced or removed: exercises the validation of every stats field. */
const mutatedPool = fc.tuple(fc.constantFrom(...POOL_KEYS), fc.option(fc.jsonValue(), { nil: undefined })).map(([key, value]) => {
  const pool: Record<string, unknown> = { ...VALID_POOL };
  if (value === undefined) delete pool[key];
  else pool[key] = value;
  return pool;
});
const reportBody = fc.oneof(
  fc.jsonValue(),
  mutatedPool.map((pool) => ({ volume_backend_name: 'lvm', pools: [pool] })),
  mutatedPool.map((pool) => ({ ...pool, pool_name: undefined })),
  fc.record({ pools: fc.array(fc.jsonValue(), { maxLength: 3 }) }),
);
const scheduleBody = fc.oneof(
  fc.jsonValue(),
  fc.record({
    id: fc.oneof(fc.string({ maxLength: 10 }), fc.constant('v1')),
    size: fc.oneof(fc.double(), fc.integer(), fc.jsonValue()),
    volume_type: fc.oneof(fc.jsonValue(), fc.record({ extra_specs: fc.dictionary(fc.string({ maxLength: 8 }), fc.oneof(fc.string({ maxLength: 12 }), fc.jsonValue())) })),
    availability_zone: fc.oneof(fc.string({ maxLength: 5 }), fc.jsonValue()),
  }, { requiredKeys: [] }),
);

t.test('fuzzed requests: no 5xx, problem+json errors, refused requests change nothing', async (t) => {
  const app = await build(t);
  await app.inject({ method: 'PUT', url: '/backends/node1@lvm', payload: { volume_backend_name: 'lvm', pools: [VALID_POOL] } });
  await app.inject({ method: 'POST', url: '/volumes/schedule', payload: { id: 'v1', size: 1 } });

  await fc.assert(fc.asyncProperty(segment, reportBody, (host, body) => check(t, app, 'PUT', `/backends/${host}`, body)), { numRuns: 250 });
  await fc.assert(fc.asyncProperty(query, scheduleBody, (q, body) => check(t, app, 'POST', `/volumes/schedule${q}`, body)), { numRuns: 250 });
  await fc.assert(fc.asyncProperty(query, (q) => check(t, app, 'GET', `/pools${q}`)), { numRuns: 200 });
  await fc.assert(
    fc.asyncProperty(fc.constantFrom('GET', 'DELETE'), fc.constantFrom('/volumes/', '/backends/'), segment, (method, prefix, id) =>
      check(t, app, method, `${prefix}${id}`)),
    { numRuns: 150 },
  );
  // Malformed JSON, wrong content type, oversized body.
  for (const [payload, type] of [['{"size":', 'application/json'], ['size=1', 'application/x-www-form-urlencoded'], ['"x"', 'application/json']] as const) {
    const res = await app.inject({ method: 'POST', url: '/volumes/schedule', payload, headers: { 'content-type': type } });
    t.ok(res.statusCode >= 400 && res.statusCode < 500, `${type} ${payload} → ${res.statusCode}`);
    t.match(res.headers['content-type'], /application\/problem\+json/);
  }
  t.pass('fuzzing done');
});
