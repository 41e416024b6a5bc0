// Cinder's block-storage API as cinderclient reads it, at the HTTP level (the real client is driven by
// scripts/conformance-cinder.sh): the versions document, get_pools in summary and detail, microversion headers and
// the filters by microversion, Cinder's boolean words for detail, errors as Cinder faults, request ids.
import type { FastifyInstance } from 'fastify';
import t from 'tap';
import { build } from '../helper.ts';

const GET_POOLS = '/volume/v3/PROJECT/scheduler-stats/get_pools';
const V = (version: string) => ({ 'openstack-api-version': `volume ${version}` });

async function fleet(t: Parameters<typeof build>[0]): Promise<FastifyInstance> {
  const app = await build(t);
  await app.inject({ method: 'PUT', url: '/backends/node1@lvm', payload: { volume_backend_name: 'lvm', storage_protocol: 'iSCSI', pools: [
    { pool_name: 'gold', total_capacity_gb: 100, free_capacity_gb: 90, thin_provisioning_support: true, tier: 'gold' },
    { pool_name: 'silver', total_capacity_gb: 100, free_capacity_gb: 10, tier: 'silver' },
  ] } });
  await app.inject({ method: 'PUT', url: '/backends/node2@ceph', payload: { volume_backend_name: 'ceph', availability_zone: 'az2', pools: [
    { pool_name: 'rbd', total_capacity_gb: 1000, free_capacity_gb: 900, thin_provisioning_support: true, tier: 'gold' },
  ] } });
  return app;
}

const names = (body: { pools: Array<{ name: string }> }) => body.pools.map((p) => p.name);

t.test('GET /volume/: Cinder\'s versions document, 300, the microversion range cinderclient negotiates against', async (t) => {
  const app = await build(t);
  for (const url of ['/volume/', '/volume']) {
    const r = await app.inject({ method: 'GET', url, headers: { host: 'berth.example:8776', ...V('3.70') } });
    t.equal(r.statusCode, 300, url);
    t.same(r.json(), { versions: [{
      id: 'v3.0', status: 'CURRENT', version: '3.70', min_version: '3.0', updated: '2022-08-31T00:00:00Z',
      links: [
        { rel: 'describedby', type: 'text/html', href: 'https://docs.openstack.org/' },
        { rel: 'self', href: 'http://berth.example:8776/volume/v3/' },
      ],
      'media-types': [{ base: 'application/json', type: 'application/vnd.openstack.volume+json;version=3' }],
    }] });
    t.equal(r.headers['openstack-api-version'], 'volume 3.70');
    t.equal(r.headers.vary, 'OpenStack-API-Version');
    t.match(r.headers['x-openstack-request-id'], /^req-/);
  }
  t.equal((await app.inject({ method: 'GET', url: '/volume/' })).headers['openstack-api-version'], 'volume 3.0', 'no header: 3.0');
});

t.test('get_pools: the same pools and capabilities as GET /pools?detail=true', async (t) => {
  const app = await fleet(t);
  const summary = await app.inject({ method: 'GET', url: GET_POOLS, headers: V('3.70') });
  t.equal(summary.statusCode, 200);
  t.same(summary.json(), (await app.inject({ method: 'GET', url: '/pools' })).json());
  t.same(names(summary.json()), ['node1@lvm#gold', 'node1@lvm#silver', 'node2@ceph#rbd']);
  const detail = await app.inject({ method: 'GET', url: `${GET_POOLS}?detail=True`, headers: V('3.70') });
  t.same(detail.json(), (await app.inject({ method: 'GET', url: '/pools?detail=true' })).json());
  t.equal(detail.json().pools[0].capabilities.storage_protocol, 'iSCSI');
  t.equal(detail.headers['openstack-api-version'], 'volume 3.70');
  t.equal(detail.headers['x-openstack-request-id'], detail.headers['x-compute-request-id']);
  // Cinder's strict boolean words.
  for (const [value, withCapabilities] of [['True', true], ['1', true], ['yes', true], ['false', false], ['0', false], ['OFF', false]] as const) {
    const r = await app.inject({ method: 'GET', url: `${GET_POOLS}?detail=${value}`, headers: V('3.70') });
    t.equal('capabilities' in r.json().pools[0], withCapabilities, `detail=${value}`);
  }
  const bad = await app.inject({ method: 'GET', url: `${GET_POOLS}?detail=maybe`, headers: V('3.70') });
  t.equal(bad.statusCode, 400);
  t.same(bad.json(), { badRequest: { code: 400, message: "Value 'maybe' for 'detail' is not a boolean." } });
  t.equal(bad.headers['openstack-api-version'], 'volume 3.70', 'errors carry the version too');
});

t.test('get_pools filters by microversion, as Cinder: none < 3.28, capabilities < 3.31, then name and volume_type', async (t) => {
  const app = await fleet(t);
  const thin = encodeURIComponent(JSON.stringify({ extra_specs: { thin_provisioning_support: '<is> True' } }));
  // cinderclient's --filters volume_type={thin_provisioning_support:<is> True} arrives as a Python dict.
  const pyDict = encodeURIComponent("{'thin_provisioning_support': '<is> True'}");
  const cases: Array<[version: string | null, query: string, expected: string[] | { status: number; fault: string; message: RegExp }]> = [
    [null, '?name=node1%40lvm%23gold', ['node1@lvm#gold', 'node1@lvm#silver', 'node2@ceph#rbd']],
    ['3.27', '?name=node1%40lvm%23gold', ['node1@lvm#gold', 'node1@lvm#silver', 'node2@ceph#rbd']],
    ['3.28', '?name=node1%40lvm%23gold', ['node1@lvm#gold']],
    ['3.28', '?tier=gold', ['node1@lvm#gold', 'node2@ceph#rbd']],
    ['3.30', `?volume_type=${thin}`, ['node1@lvm#gold', 'node1@lvm#silver', 'node2@ceph#rbd']],
    ['3.31', '?tier=gold', { status: 400, fault: 'badRequest', message: /^Invalid filters tier are found in query options\.$/ }],
    ['3.33', '?name=node2%40ceph%23rbd', ['node2@ceph#rbd']],
    ['3.34', `?volume_type=${thin}`, ['node1@lvm#gold', 'node1@lvm#silver', 'node2@ceph#rbd']],
    ['3.35', `?volume_type=${thin}`, ['node1@lvm#gold', 'node2@ceph#rbd']],
    ['3.70', `?volume_type=${pyDict}`, ['node1@lvm#gold', 'node2@ceph#rbd']],
    ['3.70', `?volume_type=${pyDict}&name=node2%40ceph%23rbd`, ['node2@ceph#rbd']],
    ['latest', '?all_tenants=1&name=node1%40lvm%23silver', ['node1@lvm#silver']],
    ['3.70', '?volume_type=nope', { status: 400, fault: 'badRequest', message: /^volume_type must be JSON/ }],
  ];
  for (const [version, query, expected] of cases) {
    const r = await app.inject({ method: 'GET', url: `${GET_POOLS}${query}`, headers: version ? V(version) : {} });
    const label = `${version ?? 'no header'} ${decodeURIComponent(query)}`;
    if (Array.isArray(expected)) {
      t.equal(r.statusCode, 200, label);
      t.same(names(r.json()), expected, label);
    } else {
      t.equal(r.statusCode, expected.status, label);
      t.match(r.json(), { [expected.fault]: { code: expected.status, message: expected.message } }, label);
    }
  }
});

t.test('microversion headers as Cinder reads them; unknown paths and methods answer Cinder faults', async (t) => {
  const app = await fleet(t);
  const cases: Array<[header: string, status: number, body: unknown]> = [
    ['volume 3.71', 406, { computeFault: { code: 406, message: 'Version 3.71 is not supported by the API. Minimum is 3.0 and maximum is 3.70.' } }],
    ['volume 2.0', 406, { computeFault: { code: 406, message: 'Version 2.0 is not supported by the API. Minimum is 3.0 and maximum is 3.70.' } }],
    ['volume 3.x', 400, { badRequest: { code: 400, message: 'API Version String 3.x is of invalid format. Must be of format MajorNum.MinorNum.' } }],
    ['volume 03.1', 400, { badRequest: { code: 400, message: 'API Version String 03.1 is of invalid format. Must be of format MajorNum.MinorNum.' } }],
    ['compute 2.1', 400, { badRequest: { code: 400, message: 'API version None is not supported on this method.' } }],
  ];
  for (const [header, status, body] of cases) {
    const r = await app.inject({ method: 'GET', url: GET_POOLS, headers: { 'openstack-api-version': header } });
    t.equal(r.statusCode, status, header);
    t.same(r.json(), body, header);
    t.match(r.headers['content-type'], /^application\/json/);
  }
  const ok = await app.inject({ method: 'GET', url: GET_POOLS, headers: { 'openstack-api-version': 'compute 2.1, volume 3.40' } });
  t.equal(ok.headers['openstack-api-version'], 'volume 3.40', 'the volume entry of a list');
  for (const [method, url] of [['GET', '/volume/v3/PROJECT/volumes'], ['POST', GET_POOLS], ['GET', '/volume/v2/']] as const) {
    const r = await app.inject({ method, url, headers: V('3.70') });
    t.equal(r.statusCode, 404, `${method} ${url}`);
    t.same(r.json(), { itemNotFound: { code: 404, message: 'The resource could not be found.' } });
  }
});
