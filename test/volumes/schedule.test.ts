// POST /volumes/schedule as a newcomer meets it: whole GiB only, dry runs that say so and claim no id, explain with
// the filters first, true/false flags, problem bodies exactly as before, and a decision log line that says what was
// asked and what was chosen.
import { Writable } from 'node:stream';
import t from 'tap';
import { buildApp } from '../../src/app.ts';
import { parseConfig } from '../../src/config.ts';
import { openSqliteStore } from '../../src/store/sqlite.ts';
import { build } from '../helper.ts';

const REPORT = { pools: [
  { pool_name: 'a', total_capacity_gb: 100, free_capacity_gb: 80 },
  { pool_name: 'b', total_capacity_gb: 100, free_capacity_gb: 20 },
] };

t.test('sizes are whole GiB: a fractional size is refused, naming size', async (t) => {
  const app = await build(t);
  await app.inject({ method: 'PUT', url: '/backends/h@x', payload: REPORT });
  for (const size of [1.5, 0.25, 10.000001]) {
    const r = await app.inject({ method: 'POST', url: '/volumes/schedule', payload: { size } });
    t.equal(r.statusCode, 400, `size ${size}`);
    t.match(r.json(), { type: '/problems/validation', errors: [{ path: 'body.size', message: /whole number of GiB/ }] });
    const pools = await app.inject({ method: 'GET', url: `/pools?size=${size}` });
    t.equal(pools.statusCode, 400, `GET /pools?size=${size}`);
    t.match(pools.json(), { errors: [{ path: 'querystring.size' }] });
  }
  t.same((await app.inject({ method: 'GET', url: '/volumes' })).json().volumes, [], 'nothing claimed');
  t.equal((await app.inject({ method: 'POST', url: '/volumes/schedule', payload: { size: 2 } })).statusCode, 200);
});

t.test('a dry run says so and names no volume id it was not given; a claim gets its id', async (t) => {
  const app = await build(t);
  await app.inject({ method: 'PUT', url: '/backends/h@x', payload: REPORT });
  const cases: Array<{ query: string; body: Record<string, unknown>; dryRun: boolean; id: 'none' | 'given' | 'generated' }> = [
    { query: '?dry_run=true', body: { size: 5 }, dryRun: true, id: 'none' },
    { query: '?dry_run=true&explain=true', body: { size: 5 }, dryRun: true, id: 'none' },
    { query: '?dry_run=true', body: { id: 'mine', size: 5 }, dryRun: true, id: 'given' },
    { query: '?dry_run=false', body: { size: 5 }, dryRun: false, id: 'generated' },
    { query: '', body: { id: 'v2', size: 5 }, dryRun: false, id: 'given' },
  ];
  for (const c of cases) {
    const before = Date.now();
    const r = await app.inject({ method: 'POST', url: `/volumes/schedule${c.query}`, payload: c.body });
    t.equal(r.statusCode, 200, `${c.query} ${JSON.stringify(c.body)}`);
    const body = r.json();
    t.equal(body.dryRun, c.dryRun, 'dryRun says what happened');
    t.equal(body.volume.pool, 'h@x#a');
    if (c.id === 'none') t.notOk('id' in body.volume, 'no generated id on a dry run');
    if (c.id === 'given') t.equal(body.volume.id, c.body.id);
    if (c.id === 'generated') {
      // UUIDv7 (src/uuid-v7.ts): its first 48 bits are the claim's time, so generated ids sort by creation.
      t.match(body.volume.id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      const ms = Number.parseInt(body.volume.id.slice(0, 8) + body.volume.id.slice(9, 13), 16);
      t.ok(ms >= before && ms <= Date.now(), 'the id carries the time of the claim');
    }
  }
  const volumes = (await app.inject({ method: 'GET', url: '/volumes' })).json().volumes as Array<{ id: string }>;
  t.equal(volumes.length, 2, 'only the two claims');
  t.ok(volumes.some((v) => v.id === 'v2'));
});

t.test('explain lists the filters before the weighed pools; flags are true or false', async (t) => {
  const app = await build(t);
  await app.inject({ method: 'PUT', url: '/backends/h@x', payload: REPORT });
  const r = await app.inject({ method: 'POST', url: '/volumes/schedule?explain=true&dry_run=true', payload: { size: 30 } });
  t.same(Object.keys(r.json()), ['dryRun', 'pool', 'weight', 'volume', 'explain']);
  t.same(Object.keys(r.json().explain), ['filters', 'weighed'], 'filters first, in the JSON too');
  t.ok(r.body.indexOf('"filters"') < r.body.indexOf('"weighed"'));
  const miss = await app.inject({ method: 'POST', url: '/volumes/schedule?explain=true', payload: { size: 500 } });
  t.same(Object.keys(miss.json().explain), ['filters', 'weighed']);
  for (const value of ['1', 'yes', 'True', 'on', '']) {
    const bad = await app.inject({ method: 'POST', url: `/volumes/schedule?dry_run=${value}`, payload: { size: 1 } });
    t.equal(bad.statusCode, 400, `dry_run=${value}`);
    t.match(bad.json(), { errors: [{ path: 'querystring.dry_run' }] });
  }
  t.equal((await app.inject({ method: 'GET', url: '/pools?detail=yes' })).statusCode, 400);
  t.same((await app.inject({ method: 'GET', url: '/volumes' })).json().volumes, [], 'nothing claimed by refused requests');
});

t.test('problem bodies: the same status, type, title and detail as before the error codes', async (t) => {
  const app = await build(t);
  await app.inject({ method: 'PUT', url: '/backends/h@x', payload: { pools: [{ pool_name: 'a', total_capacity_gb: 10, free_capacity_gb: 10 }] } });
  await app.inject({ method: 'POST', url: '/volumes/schedule', payload: { id: 'v', size: 1 } });
  const exists = await app.inject({ method: 'POST', url: '/volumes/schedule', payload: { id: 'v', size: 1 } });
  t.equal(exists.statusCode, 409);
  t.equal(exists.body, '{"type":"/problems/volume-exists","title":"Volume already exists","status":409,"detail":"Volume v already exists"}');
  t.match(exists.headers['content-type'], /^application\/problem\+json/);
  t.equal((await app.inject({ method: 'GET', url: '/volumes/nope' })).body,
    '{"type":"/problems/not-found","title":"Not Found","status":404,"detail":"No volume nope"}');
  t.equal((await app.inject({ method: 'DELETE', url: '/backends/nope@x' })).body,
    '{"type":"/problems/not-found","title":"Not Found","status":404,"detail":"No backend nope@x"}');
  const miss = await app.inject({ method: 'POST', url: '/volumes/schedule', payload: { size: 11 } });
  t.equal(miss.statusCode, 409);
  t.equal(miss.body, JSON.stringify({
    type: '/problems/no-valid-backend', title: 'No valid backend', status: 409,
    detail: 'No valid backend was found for a 11 GiB volume: CapacityFilter rejected 1',
    rejected: [{
      pool: 'h@x#a', filter: 'CapacityFilter', code: 'insufficient_free',
      reason: 'Insufficient free space for volume creation (requested / avail): 11/9 GiB.',
    }],
  }));
  const bad = await app.inject({ method: 'GET', url: '/pools?volume_type=nope' });
  t.equal(bad.body, JSON.stringify({
    type: '/problems/bad-request', title: 'Bad Request', status: 400,
    detail: 'volume_type must be JSON, e.g. {"extra_specs":{"thin_provisioning_support":"<is> True"}}',
    errors: [{ path: 'querystring.volume_type', message: 'not valid JSON' }],
  }));
});

t.test('one decision log line per decision: what was asked, what was chosen, counts and duration', async (t) => {
  const lines: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n')) if (line.trim() !== '') lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  const store = openSqliteStore(':memory:');
  const app = await buildApp({ config: parseConfig({ data_dir: ':memory:' }), store, processMetrics: false, logger: { level: 'info', stream } });
  t.teardown(async () => {
    await app.close();
    await store.close();
  });
  await app.inject({ method: 'PUT', url: '/backends/h@x', payload: REPORT });
  await app.inject({ method: 'POST', url: '/volumes/schedule', payload: { id: 'vol-1', size: 30 } });
  await app.inject({ method: 'POST', url: '/volumes/schedule?dry_run=true', payload: { size: 5 } });
  await app.inject({ method: 'POST', url: '/volumes/schedule', payload: { id: 'vol-3', size: 90 } });
  const decisions = lines.filter((l) => l.msg === 'decision');
  t.equal(decisions.length, 3);
  t.match(decisions[0], { domain: 'volumes', decision: 'placed', volume: 'vol-1', size: 30, chosen: 'h@x#a', candidates: 2, passed: 1, ms: Number });
  t.match(decisions[1], { decision: 'dry_run', volume: null, size: 5, chosen: 'h@x#a', candidates: 2, passed: 2 });
  t.match(decisions[2], { decision: 'no_valid_backend', volume: 'vol-3', size: 90, chosen: null, candidates: 2, passed: 0 });
  t.ok(decisions.every((d) => typeof d.reqId === 'string'), 'each with its request id');
});
