// Large answers of GET /allocation_candidates stream in chunks: over a real socket the body is byte for byte the
// one-string serialisation; and the model's slot columns follow providers removed and created in their place.
import t from 'tap';
import { placementServices } from '../../src/placement/routes/index.ts';
import { parseAllocationCandidatesQuery, queryPairs } from '../../src/placement/query.ts';
import { candidatesBody } from '../../src/placement/serialize.ts';
import { build } from '../helper.ts';
import { call, createProviders, u } from './fixtures.ts';

const HEADERS = { 'openstack-api-version': 'placement 1.39', 'x-auth-token': 'x' };

t.test('a streamed answer equals the string answer byte for byte, over HTTP', async (t) => {
  const app = await build(t);
  const service = placementServices.get(app.berth)!;
  const m = service.model;
  // Loaded straight into the model (thousands of providers through the API would take long).
  for (let i = 0; i < 2500; i++) {
    const rp = u(`stream-${i}`);
    m.applyProvider({
      uuid: rp, name: `s${i}`, parent_provider_uuid: null, generation: 1,
      inventories: {
        VCPU: { total: 8 + (i % 5) * 8, reserved: 0, min_unit: 1, max_unit: 64, step_size: 1, allocation_ratio: 4 },
        MEMORY_MB: { total: 4096 * (1 + (i % 3)), reserved: 0, min_unit: 1, max_unit: 65536, step_size: 1, allocation_ratio: 1 },
      },
      traits: i % 2 === 0 ? ['HW_CPU_X86_AVX2'] : [], aggregates: [],
    });
    if (i % 3 === 0) {
      const c = u(`c-${i}`);
      m.applyConsumer(c, { uuid: c, project_id: 'p', user_id: 'u', consumer_type: 'INSTANCE', generation: 1, allocations: { [rp]: { VCPU: 2 } } });
    }
  }
  const base = await app.listen({ port: 0, host: '127.0.0.1' });
  for (const q of ['resources=VCPU:1,MEMORY_MB:512', 'resources=VCPU:1&explain=true', 'resources=VCPU:1&limit=2400']) {
    const res = await fetch(`${base}/allocation_candidates?${q}`, { headers: HEADERS });
    t.equal(res.status, 200, q);
    t.equal(res.headers.get('transfer-encoding'), 'chunked', `${q}: streamed`);
    t.equal(res.headers.get('content-type'), 'application/json', q);
    const body = await res.text();
    const query = parseAllocationCandidatesQuery(queryPairs(`/allocation_candidates?${q}`), 39);
    const explain = q.includes('explain');
    const { result } = service.allocationCandidates(query, 39, explain);
    t.ok(result.candidates.length > 2000, `${q}: ${result.candidates.length} candidates`);
    const requested = new Set(query.groups.flatMap((g) => [...g.resources.keys()]));
    if (explain) {
      // The trace's timing-free parts are the same; compare the candidates' part and that the explain member follows.
      const json = candidatesBody(m, result.candidates, 39, requested).toString('utf8');
      t.equal(body.slice(0, json.length - 1), json.slice(0, -1), `${q}: same candidates and summaries`);
      t.ok(body.slice(json.length - 1).startsWith(',"explain":{'), `${q}: then the explain member`);
      t.ok(JSON.parse(body), `${q}: well-formed`);
    } else {
      t.equal(body, candidatesBody(m, result.candidates, 39, requested).toString('utf8'), `${q}: byte for byte`);
    }
  }
  // A small answer stays one string (with its length).
  const small = await fetch(`${base}/allocation_candidates?resources=VCPU:1&limit=10`, { headers: HEADERS });
  t.equal(small.headers.get('transfer-encoding'), null);
  t.equal(small.headers.get('content-type'), 'application/json');
  t.equal(Number(small.headers.get('content-length')), Buffer.byteLength(await small.text()));
});

t.test('a provider created after one was removed reuses its slot with its own inventories, traits and usage', async (t) => {
  const app = await build(t);
  const [a, b, c] = [u('slot-a'), u('slot-b'), u('slot-c')];
  await createProviders(app, [
    { uuid: a, inventories: { VCPU: 64, DISK_GB: 1000 }, traits: ['HW_CPU_X86_AVX2'] },
    { uuid: b, inventories: { VCPU: 4 } },
  ]);
  t.equal((await call(app, 'DELETE', `/resource_providers/${a}`)).status, 204);
  await createProviders(app, [{ uuid: c, inventories: { VCPU: 16 } }]);
  const candidates = async (q: string) =>
    ((await call(app, 'GET', `/allocation_candidates?${q}`)).body.allocation_requests as Array<{ allocations: Record<string, unknown> }>)
      .map((r) => Object.keys(r.allocations)[0]);
  t.same(await candidates('resources=VCPU:8'), [c], 'c fits 8 VCPU, b does not, a is gone');
  t.same(await candidates('resources=DISK_GB:1'), [], "a's DISK_GB left with it");
  t.same(await candidates('resources=VCPU:1&required=HW_CPU_X86_AVX2'), [], "a's trait left with it");
  const put = await call(app, 'PUT', `/allocations/${u('slot-consumer')}`, {
    allocations: { [c]: { resources: { VCPU: 10 } } }, consumer_generation: null, project_id: 'p', user_id: 'u', consumer_type: 'INSTANCE',
  });
  t.equal(put.status, 204);
  t.same(await candidates('resources=VCPU:8'), [], "c's usage counts (10 of 16 used)");
  t.same(await candidates('resources=VCPU:6'), [c]);
});
