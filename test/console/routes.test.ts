// The console's HTTP face: its static assets, the decision ring fed by the three scheduling routes, the fleet.
import { gunzipSync } from 'node:zlib';
import type { FastifyInstance } from 'fastify';
import t from 'tap';
import { buildWithConsole } from './helper.ts';
import { GiB, PROVIDERS, seedFleet, seedManyPools } from './fleet-fixture.ts';

const MV = { 'openstack-api-version': 'placement 1.39' };

async function json(app: FastifyInstance, url: string) {
  const res = await app.inject({ method: 'GET', url });
  return { status: res.statusCode, body: res.json(), headers: res.headers };
}

async function decisions(app: FastifyInstance, query = '') {
  const res = await json(app, `/console/api/decisions${query}`);
  if (res.status !== 200) throw new Error(`decisions: ${res.status}`);
  return res.body.decisions as Array<Record<string, any>>;  
}

t.test('assets: index.html revalidates, hashed assets are immutable, gzip and 304 work', async (t) => {
  const app = await buildWithConsole(t);
  const redirect = await app.inject({ method: 'GET', url: '/console' });
  t.equal(redirect.statusCode, 302);
  t.equal(redirect.headers.location, 'console/', 'relative, so a path prefix in front of Berth keeps working');

  const page = await app.inject({ method: 'GET', url: '/console/' });
  t.equal(page.statusCode, 200);
  t.equal(page.headers['content-type'], 'text/html; charset=utf-8');
  t.equal(page.headers['cache-control'], 'no-cache');
  t.match(page.headers['content-security-policy'], /default-src 'none'; script-src 'self'; style-src 'self'/);
  t.equal(page.headers['x-content-type-options'], 'nosniff');
  t.notMatch(page.body, /https?:\/\//, 'no external resource: works offline, no CDN');
  const js = /src="assets\/(console-[A-Z0-9]+\.js)"/.exec(page.body)?.[1];
  const css = /href="assets\/(console-[A-Z0-9]+\.css)"/.exec(page.body)?.[1];
  t.ok(js && css, 'index.html names the hashed bundle and stylesheet');

  const again = await app.inject({ method: 'GET', url: '/console/', headers: { 'if-none-match': String(page.headers.etag) } });
  t.equal(again.statusCode, 304, 'unchanged: 304');
  t.equal(again.body, '');

  const script = await app.inject({ method: 'GET', url: `/console/assets/${js}`, headers: { 'accept-encoding': 'gzip, br' } });
  t.equal(script.statusCode, 200);
  t.equal(script.headers['content-type'], 'text/javascript; charset=utf-8');
  t.equal(script.headers['cache-control'], 'public, max-age=31536000, immutable');
  t.equal(script.headers['content-encoding'], 'gzip');
  t.equal(script.headers.vary, 'accept-encoding');
  const source = gunzipSync(script.rawPayload).toString('utf8');
  t.match(source, /console\/api\/fleet/, 'the bundle calls the fleet route');
  const plain = await app.inject({ method: 'GET', url: `/console/assets/${js}` });
  t.equal(plain.headers['content-encoding'], undefined, 'no gzip unless accepted');
  t.equal(plain.body, source);

  const style = await app.inject({ method: 'GET', url: `/console/assets/${css}` });
  t.equal(style.headers['content-type'], 'text/css; charset=utf-8');

  const missing = await app.inject({ method: 'GET', url: '/console/assets/nope.js' });
  t.equal(missing.statusCode, 404);
  t.equal(missing.headers['content-type'], 'application/problem+json; charset=utf-8');
  t.match(missing.json(), { status: 404, detail: 'No console asset nope.js' });
});

t.test('without built assets /console answers 503 naming the fix; the API still works', async (t) => {
  const app = await buildWithConsole(t, { consoleDir: '/nonexistent/console' });
  const res = await app.inject({ method: 'GET', url: '/console/' });
  t.equal(res.statusCode, 503);
  t.match(res.json(), { type: '/problems/console-not-built', detail: /npm run build/ });
  t.equal((await app.inject({ method: 'GET', url: '/console/assets/x.js' })).statusCode, 503);
  t.equal((await json(app, '/console/api/decisions')).status, 200);
});

t.test('volumes decisions are recorded with outcome, request, target, duration and trace', async (t) => {
  const app = await buildWithConsole(t);
  await seedFleet(app);
  const placed = await app.inject({ method: 'POST', url: '/volumes/schedule?explain=true', payload: { id: 'vol-1', size: 100 } });
  t.equal(placed.statusCode, 200);
  const dry = await app.inject({ method: 'POST', url: '/volumes/schedule?dry_run=true', payload: { size: 10, availability_zone: 'nova' } });
  t.equal(dry.statusCode, 200);
  const none = await app.inject({ method: 'POST', url: '/volumes/schedule?explain=true', payload: { size: 5000 } });
  t.equal(none.statusCode, 409);
  const exists = await app.inject({ method: 'POST', url: '/volumes/schedule', payload: { id: 'vol-1', size: 1 } });
  t.equal(exists.statusCode, 409);
  const invalid = await app.inject({ method: 'POST', url: '/volumes/schedule', payload: { size: -1 } });
  t.equal(invalid.statusCode, 400);

  const list = await decisions(app);
  t.same(list.map((d) => d.outcome), ['volume_exists', 'no_valid_backend', 'dry_run', 'placed'], 'newest first; a 400 is no decision');
  const [exist, nothing, dryRun, first] = list;
  t.match(first, {
    dialect: 'volumes', status: 200, dry_run: false, request: { size: 100, id: 'vol-1' }, targets: ['node2@nfs#far'], explained: true,
  });
  t.type(first!.duration_ms, 'number');
  t.ok(first!.duration_ms >= 0);
  t.notOk('explain' in first!, 'the list carries no traces');
  t.match(dryRun, { dry_run: true, request: { size: 10, availability_zone: 'nova' }, targets: ['node1@lvm#big'], explained: false });
  t.match(nothing, { status: 409, targets: [], detail: /No valid backend was found for a 5000 GiB volume/, explained: true });
  t.match(exist, { status: 409, detail: 'Volume vol-1 already exists', explained: false });

  const one = await json(app, `/console/api/decisions/${first!.id}`);
  t.equal(one.status, 200);
  t.same(one.body.explain, placed.json().explain, 'the trace exactly as the route answered it');
  t.match(one.body.explain.filters, [
    { name: 'AvailabilityZoneFilter', in: 3, out: 3 },
    { name: 'CapacityFilter', in: 3, out: 2, rejected: [{ pool: 'node1@lvm#small', reason: 'Insufficient free space for volume creation (requested / avail): 100/50 GiB.' }] },
    { name: 'CapabilitiesFilter', in: 2, out: 2 },
  ]);
  t.same(one.body.request_id, first!.request_id);
  const refused = await json(app, `/console/api/decisions/${nothing!.id}`);
  t.same(refused.body.explain, none.json().explain, 'a refusal keeps the trace it answered with');
});

t.test('replicas decisions: placed, nothing missing, degraded, refused', async (t) => {
  const app = await buildWithConsole(t);
  await seedFleet(app);
  const placed = await app.inject({ method: 'POST', url: '/replicas/schedule?explain=true', payload: { volume: { name: 'pvc-1', size: 10 * GiB, numberOfReplicas: 3 } } });
  t.equal(placed.statusCode, 200);
  await app.inject({ method: 'POST', url: '/replicas/schedule', payload: { volume: { name: 'pvc-1', size: 10 * GiB, numberOfReplicas: 3 } } });
  const degraded = await app.inject({ method: 'POST', url: '/replicas/schedule?dry_run=true', payload: { volume: { name: 'pvc-2', size: GiB, numberOfReplicas: 4 } } });
  t.equal(degraded.statusCode, 200);
  const refused = await app.inject({ method: 'POST', url: '/replicas/schedule?explain=true', payload: { volume: { name: 'pvc-3', size: 500 * GiB, numberOfReplicas: 1, diskSelector: ['ssd'] } } });
  t.equal(refused.statusCode, 409);

  const [no, dry, nothing, first] = await decisions(app, '?dialect=replicas');
  const targets = (placed.json().replicas as Array<{ node: string; disk: string }>).map((r) => `${r.node}/${r.disk}`);
  t.equal(targets.length, 3);
  t.match(first, { outcome: 'placed', request: { volume: 'pvc-1', size: 10 * GiB, numberOfReplicas: 3 }, targets, counts: { placed: 3, unscheduled: 0 }, explained: true });
  t.match(nothing, { outcome: 'nothing_missing', targets: [] });
  t.match(dry, { outcome: 'dry_run', dry_run: true, counts: { placed: 3, unscheduled: 1 }, detail: /./ });
  t.match(no, { outcome: 'no_valid_target', status: 409, request: { diskSelector: ['ssd'] }, detail: refused.json().detail, explained: true });
  const trace = (await json(app, `/console/api/decisions/${first!.id}`)).body.explain;
  t.same(trace, placed.json().explain);
});

t.test('placement decisions: the best candidate\'s providers, counts and trace, without parsing the whole answer', async (t) => {
  const app = await buildWithConsole(t);
  await seedFleet(app);
  const traced = await app.inject({ method: 'GET', url: '/allocation_candidates?resources=VCPU:2,MEMORY_MB:2048&limit=2&explain=true', headers: MV });
  t.equal(traced.statusCode, 200);
  const plain = await app.inject({ method: 'GET', url: '/allocation_candidates?resources=DISK_GB:10', headers: MV });
  const none = await app.inject({ method: 'GET', url: '/allocation_candidates?resources=VCPU:1000', headers: MV });
  t.same(none.json().allocation_requests, []);
  const old = await app.inject({ method: 'GET', url: '/allocation_candidates?resources=DISK_GB:10', headers: { 'openstack-api-version': 'placement 1.10' } });
  t.equal(old.statusCode, 200);
  t.ok(Array.isArray(old.json().allocation_requests[0].allocations), '1.10 lists allocations');
  const bad = await app.inject({ method: 'GET', url: '/allocation_candidates?resources=VCPU', headers: MV });
  t.equal(bad.statusCode, 400);

  const [older, empty, flat, best] = await decisions(app, '?dialect=placement');
  const answer = traced.json();
  t.match(best, {
    outcome: 'candidates', status: 200, request: { query: 'resources=VCPU:2,MEMORY_MB:2048&limit=2', microversion: 'placement 1.39' },
    targets: Object.keys(answer.allocation_requests[0].allocations), counts: { returned: 2, total: answer.explain.total }, explained: true,
  });
  t.same((await json(app, `/console/api/decisions/${best!.id}`)).body.explain, answer.explain);
  const flatAnswer = plain.json();
  t.match(flat, { targets: Object.keys(flatAnswer.allocation_requests[0].allocations), explained: false });
  t.same(flat!.counts, { returned: flatAnswer.allocation_requests.length, total: flatAnswer.allocation_requests.length }, 'the counts come from the route, with a trace or without');
  t.match(empty, { outcome: 'no_candidates', targets: [], counts: { returned: 0 } });
  t.same(older!.targets, [old.json().allocation_requests[0].allocations[0].resource_provider.uuid], 'the pre-1.12 list shape');
});

t.test('decision routes refuse bad queries and unknown ids', async (t) => {
  const app = await buildWithConsole(t);
  for (const q of ['?dialect=cinder', '?limit=0', '?after=-1', '?limit=x', '?other=1']) {
    const res = await json(app, `/console/api/decisions${q}`);
    t.equal(res.status, 400, q);
    t.equal(res.headers['content-type'], 'application/problem+json; charset=utf-8');
  }
  t.equal((await json(app, '/console/api/decisions/0')).status, 400);
  const missing = await json(app, '/console/api/decisions/42');
  t.equal(missing.status, 404);
  t.match(missing.body.detail, /latest 200/);
});

t.test('the ring through HTTP: 200 kept, newest first, after= polls', async (t) => {
  const app = await buildWithConsole(t);
  await seedFleet(app);
  for (let i = 0; i < 205; i++) {
    await app.inject({ method: 'POST', url: '/volumes/schedule?dry_run=true', payload: { size: 1 + i } });
  }
  const list = await json(app, '/console/api/decisions');
  t.equal(list.body.capacity, 200);
  t.equal(list.body.decisions.length, 200);
  t.same(list.body.decisions.slice(0, 2).map((d: { request: { size: number } }) => d.request.size), [205, 204]);
  t.equal(list.body.decisions.at(-1).request.size, 6);
  const newest = list.body.decisions[0].id as number;
  await app.inject({ method: 'POST', url: '/volumes/schedule?dry_run=true', payload: { size: 7 } });
  const polled = await decisions(app, `?after=${newest}`);
  t.same(polled.map((d) => d.request.size), [7]);
});

t.test('fleet: pools, disks and provider trees as capacity bars', async (t) => {
  const app = await buildWithConsole(t);
  await seedFleet(app);
  const pools = await json(app, '/console/api/fleet?dialect=volumes');
  t.equal(pools.status, 200);
  t.match(pools.body, { dialect: 'volumes', items: 'pools', total: 3, offset: 0, limit: 100 });
  const byName = Object.fromEntries(pools.body.rows.map((r: { name: string }) => [r.name, r]));
  t.same(Object.keys(byName), ['node1@lvm#big', 'node1@lvm#small', 'node2@nfs#far'], 'by name');
  const big = byName['node1@lvm#big'];
  t.match(big, { group: 'node1@lvm', depth: 0, state: 'ok', tags: ['nova', 'thin'] });
  t.match(big.figures, { total_capacity_gb: 1024, free_capacity_gb: 500, provisioned_capacity_gb: 924, max_over_subscription_ratio: 1 + 924 / 525 });
  t.equal(big.bars[0].used, 524);
  t.equal(big.bars[0].free, 500);
  t.equal(big.bars[0].headroom, big.figures.virtual_free_capacity_gb - 500, 'headroom: what thin volumes get beyond the physical free space');
  t.ok(big.bars[0].headroom > 1400 && big.bars[0].headroom < 1403);
  t.same(byName['node1@lvm#small'].bars, [{ label: 'GiB', unit: 'GiB', used: 0, free: 50, headroom: 0, over: false }], 'thick only: no headroom');
  t.match(byName['node2@nfs#far'], { tags: ['az2', 'thin'], bars: [{ used: 248, free: 1800, headroom: 1896 }] }, 'ratio 2: 2 × 2048 − 400 − 1800');
  t.same(pools.body.totals, { GiB: { unit: 'GiB', used: 772, free: 2350, headroom: big.bars[0].headroom + 1896 } });

  await app.inject({ method: 'POST', url: '/volumes/schedule', payload: { size: 100 } });
  const after = await json(app, '/console/api/fleet?dialect=volumes&name=FAR');
  t.match(after.body, { total: 1, rows: [{ name: 'node2@nfs#far', bars: [{ used: 348, free: 1700, headroom: 1896 }] }] }, 'a claim shows at once; the filter ignores case');

  const disks = await json(app, '/console/api/fleet?dialect=replicas&name=node-1');
  t.match(disks.body, { items: 'disks', total: 2 });
  t.match(disks.body.rows[0], {
    id: 'node-1/disk-a', group: 'node-1', tags: ['zone-1', 'filesystem'], state: 'ok',
    bars: [{ label: 'scheduled', unit: 'bytes', used: 60 * GiB, free: 30 * GiB, headroom: 0, over: false }],
    figures: { storageMaximum: 100 * GiB, storageReserved: 10 * GiB, provisionedLimit: 90 * GiB },
  });
  t.match(disks.body.rows[1], { id: 'node-1/disk-b', tags: ['zone-1', 'filesystem', 'ssd'] });
  await app.inject({ method: 'PUT', url: '/replicas/settings', payload: { 'storage-over-provisioning-percentage': 200 } });
  const over = await json(app, '/console/api/fleet?dialect=replicas&ids=node-1/disk-a');
  t.match(over.body.rows, [{ bars: [{ used: 60 * GiB, free: 30 * GiB, headroom: 90 * GiB }], figures: { provisionedLimit: 180 * GiB } }], 'over-provisioning 200%: headroom');
  await app.inject({ method: 'PUT', url: '/nodes/node-3', payload: { zone: 'zone-3', cordoned: true, disks: { 'disk-a': { path: '/x', storageMaximum: GiB, storageAvailable: GiB } } } });
  await app.inject({ method: 'PUT', url: '/replicas/settings', payload: { 'disable-scheduling-on-cordoned-node': true } });
  const cordoned = await json(app, '/console/api/fleet?dialect=replicas&name=node-3');
  t.match(cordoned.body.rows, [{ state: /^node: .*cordoned/ }], 'why a disk is not a candidate');

  const trees = await json(app, '/console/api/fleet?dialect=placement');
  t.match(trees.body, { items: 'provider trees', total: 2 });
  t.same(trees.body.rows.map((r: { name: string; depth: number; group: string }) => [r.name, r.depth, r.group]),
    [['cn1', 0, 'cn1'], ['cn2', 0, 'cn2'], ['cn2-numa0', 1, 'cn2'], ['cn2-numa1', 1, 'cn2']], 'trees depth-first');
  const cn1 = trees.body.rows[0];
  t.equal(cn1.id, PROVIDERS.cn1);
  t.same(cn1.bars, [
    { label: 'DISK_GB', unit: 'GB', used: 0, free: 500, headroom: 0, over: false },
    { label: 'MEMORY_MB', unit: 'MB', used: 8192, free: 15872 - 8192, headroom: 0, over: false },
    { label: 'VCPU', unit: '', used: 100, free: 0, headroom: 128 - 100, over: false },
  ], 'VCPU 8 × 16: 100 used, all of it over-subscribed');
  t.same(cn1.tags, ['1 trait']);
  const numa = await json(app, `/console/api/fleet?dialect=placement&ids=${PROVIDERS.numa1}`);
  t.same(numa.body.rows.map((r: { name: string }) => r.name), ['cn2', 'cn2-numa0', 'cn2-numa1'], 'ids: the whole tree holding the provider');
  const byUuid = await json(app, `/console/api/fleet?dialect=placement&name=${PROVIDERS.numa0.slice(0, 13).toUpperCase()}`);
  t.equal(byUuid.body.total, 1, 'the filter matches uuids too');

  await app.inject({
    method: 'PUT', url: `/resource_providers/${PROVIDERS.cn1}/inventories`, headers: MV,
    payload: { resource_provider_generation: cn1.figures.generation, inventories: { VCPU: { total: 4, allocation_ratio: 16 }, MEMORY_MB: { total: 16384, reserved: 512 }, DISK_GB: { total: 500 } } },
  });
  const shrunk = await json(app, `/console/api/fleet?dialect=placement&order=fullest`);
  t.equal(shrunk.body.rows[0].name, 'cn1', 'fullest first');
  t.match(shrunk.body.rows[0].bars[2], { label: 'VCPU', used: 100, free: 0, headroom: 0, over: true }, 'an inventory shrunk under its allocations');
});

t.test('fleet at 10,000 pools: paginated, filtered, ordered, totals over every match', async (t) => {
  const app = await buildWithConsole(t);
  await seedManyPools(app, 100, 100);
  const first = await json(app, '/console/api/fleet?dialect=volumes');
  t.match(first.body, { total: 10_000, offset: 0, limit: 100 });
  t.equal(first.body.rows.length, 100);
  t.equal(first.body.rows[0].name, 'host-0000@b#pool-00000');
  const last = await json(app, '/console/api/fleet?dialect=volumes&offset=9950&limit=100');
  t.equal(last.body.rows.length, 50);
  t.equal(last.body.rows.at(-1).name, 'host-0099@b#pool-09999');
  const all = await json(app, '/console/api/fleet?dialect=volumes&limit=1000&offset=0');
  t.equal(all.body.rows.length, 1000);
  let used = 0;
  for (let offset = 0; offset < 10_000; offset += 1000) {
    const page = await json(app, `/console/api/fleet?dialect=volumes&limit=1000&offset=${offset}`);
    for (const r of page.body.rows) used += r.bars[0].used;
  }
  t.equal(first.body.totals.GiB.used, used, 'totals sum every pool, not only the page');
  const some = await json(app, '/console/api/fleet?dialect=volumes&name=pool-0999');
  t.equal(some.body.total, 10);
  t.same(some.body.rows.map((r: { name: string }) => r.name.slice(-5)), ['09990', '09991', '09992', '09993', '09994', '09995', '09996', '09997', '09998', '09999']);
  const fullest = { body: { rows: [] as unknown[] } };
  for (let offset = 0; offset < 10_000; offset += 1000) {
    fullest.body.rows.push(...(await json(app, `/console/api/fleet?dialect=volumes&order=fullest&limit=1000&offset=${offset}`)).body.rows);
  }
  type Bar = { used: number; free: number; headroom: number; over: boolean };
  const share = (r: { bars: Bar[] }) => (r.bars[0]!.over ? Infinity : r.bars[0]!.used / (r.bars[0]!.used + r.bars[0]!.free + r.bars[0]!.headroom));
  const shares = (fullest.body.rows as Array<{ bars: Bar[] }>).map(share);
  t.same(shares, [...shares].sort((a, b) => b - a), 'fullest first: pools past their limit, then by used share');
  t.equal(shares[0], Infinity, 'some of these pools are provisioned past their ratio');
  t.ok(shares.includes(Infinity) && shares.at(-1)! < 1, 'then the others, fullest first');
});

t.test('fleet refuses bad queries', async (t) => {
  const app = await buildWithConsole(t);
  for (const q of ['', '?dialect=cinder', '?dialect=volumes&limit=0', '?dialect=volumes&limit=1001', '?dialect=volumes&offset=-1', '?dialect=volumes&order=size', '?dialect=volumes&x=1', `?dialect=volumes&name=${'a'.repeat(256)}`]) {
    const res = await json(app, `/console/api/fleet${q}`);
    t.equal(res.status, 400, q || '(no dialect)');
    t.equal(res.headers['content-type'], 'application/problem+json; charset=utf-8');
  }
  const empty = await json(app, '/console/api/fleet?dialect=placement');
  t.match(empty.body, { total: 0, rows: [], totals: {} });
});

t.test('the OpenAPI examples are what the routes answer after the README\'s first decision', async (t) => {
  const app = await buildWithConsole(t);
  await app.inject({
    method: 'PUT', url: '/backends/node1@lvm', payload: {
      volume_backend_name: 'lvm',
      pools: [
        { pool_name: 'big', total_capacity_gb: 1024, free_capacity_gb: 500, provisioned_capacity_gb: 924, max_over_subscription_ratio: 'auto', thin_provisioning_support: true },
        { pool_name: 'small', total_capacity_gb: 50, free_capacity_gb: 50, thick_provisioning_support: true },
      ],
    },
  });
  t.equal((await app.inject({ method: 'POST', url: '/volumes/schedule?explain=true', payload: { id: 'vol-1', size: 100 } })).statusCode, 200);
  const schemas = (app.swagger() as unknown as { components: { schemas: Record<string, { examples: unknown[] }> } }).components.schemas;
  const example = (id: string) => schemas[id]!.examples[0] as Record<string, unknown>;
  t.same((await json(app, '/console/api/fleet?dialect=volumes&name=big')).body, example('ConsoleFleetPage'));
  const volatile = ({ at: _at, duration_ms: _ms, request_id: _id, ...rest }: Record<string, unknown>) => rest;
  const list = (await json(app, '/console/api/decisions')).body;
  t.same({ ...list, decisions: list.decisions.map(volatile) }, { ...example('ConsoleDecisionList'), decisions: (example('ConsoleDecisionList').decisions as Array<Record<string, unknown>>).map(volatile) });
  t.same(volatile((await json(app, '/console/api/decisions/1')).body), volatile(example('ConsoleDecision')));
  const paths = (app.swagger() as unknown as { paths: Record<string, Record<string, { tags: string[] }>> }).paths;
  for (const p of ['/console/', '/console/api/fleet', '/console/api/decisions', '/console/api/decisions/{id}']) t.same(paths[p]?.get?.tags, ['console'], p);
  t.notOk(paths['/console/assets/{file}'], 'asset files are not API');
});

t.test('fleet: the stale window is the runtime setting, not the start-up one', async (t) => {
  let clock = Date.parse('2026-12-01T10:00:00Z');
  const app = await buildWithConsole(t, { now: () => clock });
  await seedFleet(app);
  clock += 120_000;
  const before = await json(app, '/console/api/fleet?dialect=volumes&name=big');
  t.match(before.body.rows, [{ state: 'ok' }], 'no stale window at start-up');
  const put = await app.inject({ method: 'PUT', url: '/settings/volumes', payload: { stats_stale_after_seconds: 60 } });
  t.equal(put.statusCode, 200);
  const after = await json(app, '/console/api/fleet?dialect=volumes&name=big');
  t.match(after.body.rows, [{ state: 'stale: last report 120 s ago' }], 'a changed window shows at once');
});
