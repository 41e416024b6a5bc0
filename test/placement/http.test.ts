// HTTP as Placement speaks it (webob + microversion_parse + Placement's middleware): Accept negotiation (406),
// 405 with Allow, 415 vs 400, the error rendering per status and per Accept, unknown paths, Content-Type without
// charset, the microversion header, the request id, cache headers, absolute Location headers, and the hint for
// a client that sent no microversion header.
import { connect } from 'node:net';
import { Writable } from 'node:stream';
import t from 'tap';
import { buildApp } from '../../src/app.ts';
import { parseConfig } from '../../src/config.ts';
import { openSqliteStore } from '../../src/store/sqlite.ts';
import { build } from '../helper.ts';
import { call, u } from './fixtures.ts';

const RP = u('http-rp');
const get = (app: Awaited<ReturnType<typeof build>>, url: string, headers: Record<string, string> = {}) =>
  app.inject({ method: 'GET', url, headers: { 'x-auth-token': 'admin', ...headers } });

t.test('Accept: 406 when JSON is not acceptable, JSON when absent or */*, browsers match through */*', async (t) => {
  const app = await build(t);
  let r = await get(app, '/resource_providers', { accept: 'text/plain' });
  t.equal(r.statusCode, 406);
  t.match(r.body, 'Only application/json is provided');
  t.match(r.headers['content-type'], /^text\/plain/, 'the error itself follows the Accept header');
  r = await get(app, '/resource_providers', { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' });
  t.equal(r.statusCode, 200);
  r = await get(app, '/resource_providers', { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9' });
  t.equal(r.statusCode, 406);
  r = await get(app, '/resource_providers/foo', { accept: '*/*' });
  t.equal(r.statusCode, 404);
  t.equal(r.headers['content-type'], 'application/json');
  r = await get(app, '/resource_providers', { 'openstack-api-version': 'placement 1.15' });
  t.equal(r.headers['content-type'], 'application/json', 'no charset, as webob sends it');
});

t.test('405 with Allow for OPTIONS and other methods, 404 in Placement shape below its paths and for its clients', async (t) => {
  const app = await build(t);
  let r = await app.inject({ method: 'DELETE', url: '/resource_providers', headers: { 'x-auth-token': 'admin' } });
  t.equal(r.statusCode, 405);
  t.equal(r.headers.allow, 'GET, POST');
  t.equal(JSON.parse(r.body).errors[0].detail,
    'The method DELETE is not allowed for this resource. \n\n The method specified is not allowed for this resource.');
  r = await app.inject({ method: 'OPTIONS', url: '/resource_providers/x/inventories', headers: { 'x-auth-token': 'admin' } });
  t.equal(r.statusCode, 405);
  t.equal(r.headers.allow, 'GET, PUT, POST, DELETE');
  t.match(JSON.parse(r.body).errors[0].detail, 'The method OPTIONS is not allowed for this resource.');
  r = await app.inject({ method: 'DELETE', url: '/' });
  t.equal(r.headers.allow, 'GET');

  r = await get(app, `/resource_providers/${RP}/cows`);
  t.equal(r.statusCode, 404);
  t.same(JSON.parse(r.body).errors[0].title, 'Not Found');
  r = await get(app, '/barnabas', { 'openstack-api-version': 'placement 1.23' });
  t.equal(r.statusCode, 404);
  t.equal(JSON.parse(r.body).errors[0].code, 'placement.undefined_code', 'a Placement client gets Placement’s shape anywhere');
  r = await app.inject({ method: 'GET', url: '/barnabas' });
  t.match(r.headers['content-type'], /^application\/problem\+json/, 'others get problem+json');
  r = await get(app, '/nope', { 'openstack-api-version': 'volume 3.70', 'x-auth-token': 'admin' });
  t.match(r.headers['content-type'], /^application\/problem\+json/, 'a token for another service is not a Placement client');
  r = await get(app, '/barnabas');
  t.equal(JSON.parse(r.body).errors[0].title, 'Not Found', 'a token and no other service: Placement’s shape');
  r = await get(app, '/moo', { accept: 'text/html' });
  t.match(r.headers['content-type'], /^text\/html/);
  t.match(r.body, '<title>404 Not Found</title>');
});

t.test('415 for a body that is not JSON, 400 for a body without a content type or malformed JSON', async (t) => {
  const app = await build(t);
  let r = await app.inject({ method: 'POST', url: '/resource_providers', headers: { 'content-type': 'text/plain' }, payload: 'I want one' });
  t.equal(r.statusCode, 415);
  t.equal(JSON.parse(r.body).errors[0].detail,
    'The request media type text/plain is not supported by this server. \n\n The media type text/plain is not supported, use application/json');
  r = await app.inject({ method: 'POST', url: '/resource_providers', payload: Buffer.from('I want one') });
  t.equal(r.statusCode, 400);
  t.match(r.body, 'content-type header required when content-length > 0');
  r = await app.inject({ method: 'PUT', url: `/resource_providers/${RP}` });
  t.equal(r.statusCode, 415, 'the content type is checked before the provider is looked up');
  t.match(r.body, 'The media type None is not supported, use application/json');
  r = await app.inject({ method: 'POST', url: '/resource_providers', headers: { 'content-type': 'application/json' }, payload: '{"name": ' });
  t.equal(r.statusCode, 400);
  t.match(JSON.parse(r.body).errors[0].detail, 'Malformed JSON: ');
  r = await app.inject({ method: 'POST', url: '/', headers: { 'content-type': 'application/xml' }, payload: '<x/>' });
  t.equal(r.statusCode, 405, 'routing comes before content types');
  t.equal(r.headers['openstack-api-version'], 'placement 1.0');
});

t.test('a Content-Length that is not an integer gets Placement’s 400 (Node refuses it before routing)', async (t) => {
  const app = await build(t);
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as { port: number };
  const answer = await new Promise<string>((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => {
      socket.write('POST /resource_providers HTTP/1.1\r\nHost: x\r\nX-Auth-Token: admin\r\nContent-Type: application/json\r\nContent-Length: hi mom\r\n\r\n{}');
    });
    let data = '';
    socket.on('data', (d) => (data += d.toString()));
    socket.on('close', () => resolve(data));
    socket.on('error', reject);
  });
  t.match(answer, /^HTTP\/1.1 400 Bad Request/);
  t.match(answer, 'content-length header must be an integer');
  t.match(answer, /x-openstack-request-id: req-/);
});

t.test('OpenStack-API-Version: last placement entry wins, latest, 400 for a malformed string, 406 out of range', async (t) => {
  const app = await build(t);
  let r = await get(app, '/', { 'openstack-api-version': 'compute 2.1, placement 1.20, placement latest' });
  t.equal(r.headers['openstack-api-version'], 'placement 1.39');
  t.equal(r.headers.vary, 'openstack-api-version');
  r = await get(app, '/', { 'openstack-api-version': 'placement 0.5' });
  t.equal(r.statusCode, 406);
  const e = JSON.parse(r.body).errors[0];
  t.match(e, { title: 'Not Acceptable', max_version: '1.39', min_version: '1.0' });
  t.notOk('code' in e, 'no code: the microversion was refused before any was set');
  t.notOk(r.headers['openstack-api-version'], 'no version to report');
  r = await get(app, '/', { 'openstack-api-version': 'placement 0.5', accept: 'text/html' });
  t.match(r.headers['content-type'], /^text\/html/);
  t.match(r.body, 'Unacceptable version header: 0.5');
  r = await get(app, '/', { 'openstack-api-version': 'placement pony.horse' });
  t.equal(r.statusCode, 400);
  t.match(r.body, "invalid version string: pony.horse; invalid literal for int() with base 10: 'pony'");
  r = await get(app, '/', { 'openstack-api-version': 'placement 1.2.3' });
  t.match(r.body, 'invalid version string: 1.2.3');
  r = await get(app, '/', { 'openstack-api-version': 'placement 01.05' });
  t.equal(r.headers['openstack-api-version'], 'placement 1.5', 'Python int() parts: 01.05 is 1.5');
});

t.test('cache headers from 1.15 only; Location absolute', async (t) => {
  const app = await build(t);
  let r = await get(app, '/', { 'openstack-api-version': 'placement 1.15' });
  t.equal(r.headers['cache-control'], 'no-cache');
  t.match(r.headers['last-modified'], /^\w+, \d+ \w+ \d{4} [\d:]+ GMT$/);
  r = await get(app, '/', { 'openstack-api-version': 'placement 1.14' });
  t.notOk(r.headers['cache-control']);
  t.notOk(r.headers['last-modified']);
  let w = await call(app, 'POST', '/resource_providers', { name: 'rp', uuid: RP });
  t.equal(w.headers.location, `http://localhost:80/resource_providers/${RP}`);
  t.equal(w.headers['cache-control'], 'no-cache');
  w = await call(app, 'POST', `/resource_providers/${RP}/inventories`, { resource_class: 'VCPU', total: 4 });
  t.equal(w.headers.location, `http://localhost:80/resource_providers/${RP}/inventories/VCPU`);
  w = await call(app, 'POST', '/resource_providers', { name: 'old', uuid: u('old') }, '1.19');
  t.equal(w.status, 201);
  t.notOk(w.headers['content-type'], '201 without a body has no content type');
});

t.test('the request id: x-openstack-request-id is Fastify’s request id, in error bodies and in the log', async (t) => {
  const lines: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString().split('\n')) if (line) lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  const store = openSqliteStore(':memory:');
  const app = await buildApp({ config: parseConfig({ data_dir: ':memory:' }), store, processMetrics: false, logger: { level: 'info', stream } });
  t.teardown(async () => {
    await app.close();
    await store.close();
  });
  const r = await app.inject({ method: 'GET', url: '/allocation_candidates?resources=VCPU:1', headers: { 'x-auth-token': 'admin' } });
  const id = r.headers['x-openstack-request-id'];
  t.equal(r.statusCode, 404);
  const err = JSON.parse(r.body).errors[0];
  t.equal(err.request_id, id, 'the error body carries the same id');
  // A GET decision route's line is deferred past the next request (src/http/deferred.ts).
  app.berth.deferred.flush();
  t.ok(lines.some((l) => l.reqId === id && l.msg === 'request completed'), 'the request log line carries it');
  // No microversion header: Placement's 404, and a hint clients ignore in the detail, and a log line.
  t.equal(err.detail.split('\n\n ')[0], 'The resource could not be found.');
  t.match(err.detail, 'GET /allocation_candidates needs microversion 1.10 or later');
  t.match(err.detail, 'OpenStack-API-Version: placement 1.39');
  t.ok(lines.some((l) => l.reqId === id && l.msg === 'placement: no microversion header'));
  // With the header asking for a version below the route, the detail stays Placement's (empty).
  const old = await app.inject({ method: 'GET', url: '/allocation_candidates?resources=VCPU:1', headers: { 'openstack-api-version': 'placement 1.9' } });
  t.equal(JSON.parse(old.body).errors[0].detail, 'The resource could not be found.\n\n   ');
  // A malformed header: Placement's 400 and a log line naming the supported range.
  await app.inject({ method: 'GET', url: '/', headers: { 'openstack-api-version': 'placement one' } });
  t.ok(lines.some((l) => l.msg === 'placement: refused OpenStack-API-Version header' && l.supported === '1.0-1.39'));
});
