// Fuzzing the replica routes: bodies, paths and query strings. Never a 5xx; errors are problem+json; a refused
// request changes nothing.
import fc from 'fast-check';
import t from 'tap';
import { build } from '../helper.ts';
import { diskBody, GiB, putNode, scheduleVolume, snapshot } from './http.ts';

/** Values that sit near what the routes expect, plus anything JSON. */
const nearValue = fc.oneof(
  fc.constantFrom(-1, 0, 1, 1.5, 2 ** 53, Number.MAX_SAFE_INTEGER, 'x', '', true, false, null, [], {}, 'filesystem', 'block', 'v2', 'enabled', 'ssd'),
  fc.jsonValue({ maxDepth: 2 }),
);
const fieldNames = ['zone', 'region', 'tags', 'cordoned', 'ready', 'allowScheduling', 'evictionRequested', 'disks', 'path', 'type',
  'storageMaximum', 'storageAvailable', 'storageReserved', 'storageScheduled', 'volume', 'name', 'size', 'numberOfReplicas',
  'nodeSelector', 'diskSelector', 'dataEngine', 'existingReplicas', 'node', 'disk', 'failed', 'replica-soft-anti-affinity',
  'storage-minimal-available-percentage', 'storage-over-provisioning-percentage', 'default-replica-count', '__proto__', 'constructor'];
const objectArb = fc.dictionary(fc.constantFrom(...fieldNames), nearValue, { maxKeys: 5 });

/** A valid body with one field replaced by a random value. */
const mutatedNode = fc.tuple(fc.constantFrom('zone', 'tags', 'ready', 'disks', 'storageMaximum', 'type', 'path', 'storageScheduled'), nearValue)
  .map(([field, value]) => {
    const d: Record<string, unknown> = diskBody();
    const body: Record<string, unknown> = { zone: 'z', disks: { d1: d } };
    if (field in d || field === 'type') d[field] = value; else body[field] = value;
    return body;
  });
const mutatedVolume = fc.tuple(fc.constantFrom('name', 'size', 'numberOfReplicas', 'nodeSelector', 'dataEngine', 'replicaDiskSoftAntiAffinity', 'actualSize'), nearValue)
  .map(([field, value]) => ({ volume: { name: 'fz', size: GiB, [field]: value } }));

const segment = fc.oneof(
  fc.string({ maxLength: 12 }).map(encodeURIComponent),
  fc.constantFrom('a', 'n1', '%', '%E0%A4%A', '..', 'a%2Fb', '%00', 'x'.repeat(300), 'vol-r-00000000'),
);
const query = fc.oneof(
  fc.constant(''),
  fc.tuple(fc.constantFrom('explain', 'dry_run', 'volume', 'x'), fc.oneof(fc.constantFrom('true', 'false', '1', '', 'yes'), fc.string({ maxLength: 6 }).map(encodeURIComponent)))
    .map(([k, v]) => `?${k}=${v}`),
);

const requestArb = fc.oneof(
  fc.record({ method: fc.constant('PUT'), url: segment.map((s) => `/nodes/${s}`), body: fc.oneof(objectArb, mutatedNode, nearValue) }),
  fc.record({ method: fc.constantFrom('GET', 'DELETE'), url: segment.map((s) => `/nodes/${s}`), body: fc.constant(undefined) }),
  fc.record({ method: fc.constant('PUT'), url: fc.constant('/replicas/settings'), body: fc.oneof(objectArb, nearValue) }),
  fc.record({ method: fc.constant('POST'), url: query.map((q) => `/replicas/schedule${q}`), body: fc.oneof(objectArb, mutatedVolume, nearValue) }),
  fc.record({ method: fc.constant('GET'), url: query.map((q) => `/replicas${q}`), body: fc.constant(undefined) }),
  fc.record({ method: fc.constantFrom('GET', 'DELETE'), url: segment.map((s) => `/replicas/${s}`), body: fc.constant(undefined) }),
);

t.test('fuzzed requests: no 5xx, problem+json errors, refused requests change nothing', async (t) => {
  const app = await build(t);
  await putNode(app, 'a', { zone: 'z1' });
  await putNode(app, 'b', { zone: 'z2' });
  await scheduleVolume(app, { name: 'seed', numberOfReplicas: 2 });
  let refused = 0;
  let accepted = 0;
  await fc.assert(fc.asyncProperty(requestArb, async (req) => {
    const before = await snapshot(app);
    const res = await app.inject({
      method: req.method as 'GET',
      url: req.url,
      ...(req.body === undefined ? {} : { payload: JSON.stringify(req.body), headers: { 'content-type': 'application/json' } }),
    });
    if (res.statusCode >= 500) throw new Error(`${req.method} ${req.url} → ${res.statusCode} ${res.body}`);
    if (res.statusCode >= 400) {
      refused++;
      // A '..' segment resolves to another dialect's path (e.g. Placement's GET /), which answers in its own shape.
      const resolved = new URL(req.url, 'http://berth').pathname;
      const ours = resolved.startsWith('/nodes') || resolved.startsWith('/replicas');
      if (ours) {
        if (!String(res.headers['content-type']).startsWith('application/problem+json')) throw new Error(`not problem+json: ${res.headers['content-type']}`);
        const p = res.json() as Record<string, unknown>;
        if (typeof p.type !== 'string' || typeof p.title !== 'string' || p.status !== res.statusCode || typeof p.detail !== 'string') {
          throw new Error(`bad problem shape: ${res.body}`);
        }
      }
      const after = await snapshot(app);
      if (JSON.stringify(after) !== JSON.stringify(before)) throw new Error(`${req.method} ${req.url} was refused but changed state`);
    } else accepted++;
  }), { numRuns: 250 });
  t.ok(refused > 0 && accepted > 0, `both refused (${refused}) and accepted (${accepted}) requests were generated`);
});
