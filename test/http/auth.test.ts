// Static tokens end to end: the two header forms, 401/403 shapes per dialect (Placement's own), reload and
// revocation without a restart, the brute-force limit, the audit trail, created_by, and logs that never hold a token.
import { EventEmitter } from 'node:events';
import { renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import t, { type Test } from 'tap';
import { buildApp } from '../../src/app.ts';
import { parseConfig, type ConfigInput } from '../../src/config.ts';
import { AuthFileError } from '../../src/http/auth.ts';
import { openSqliteStore } from '../../src/store/sqlite.ts';
import type { AsyncStore } from '../../src/store/store.ts';
import { bearer, TOKENS, tokensFileText, writeTokens, type TokenSpec } from './auth-helper.ts';

interface Logged {
  app: Awaited<ReturnType<typeof buildApp>>;
  lines: string[];
  /** Resolves with the first line (already written or still to come) that matches. */
  waitFor(match: (line: Record<string, unknown>) => boolean): Promise<Record<string, unknown>>;
}

async function buildLogged(
  t: Test, config: ConfigInput, options: { now?: () => number; store?: AsyncStore } = {},
): Promise<Logged> {
  const lines: string[] = [];
  const events = new EventEmitter();
  const stream = new Writable({
    write(chunk, _encoding, done) {
      for (const line of chunk.toString().split('\n')) if (line) { lines.push(line); events.emit('line', line); }
      done();
    },
  });
  const store = options.store ?? openSqliteStore(':memory:');
  const app = await buildApp({
    config: parseConfig({ data_dir: ':memory:', max_event_loop_delay_ms: 0, ...config }), store, processMetrics: false,
    logger: { level: 'trace', stream }, ...(options.now ? { now: options.now } : {}),
  });
  t.teardown(async () => {
    await app.close();
    await store.close();
  });
  await app.ready();
  // The deadline only bounds a failing test (and keeps the process alive while the watch is pending).
  const waitFor = (match: (line: Record<string, unknown>) => boolean) => new Promise<Record<string, unknown>>((resolve, reject) => {
    const deadline = setTimeout(() => reject(new Error('no matching log line within 30 s')), 30_000);
    const check = (line: string) => {
      const json = JSON.parse(line) as Record<string, unknown>;
      if (!match(json)) return false;
      events.off('line', check);
      clearTimeout(deadline);
      resolve(json);
      return true;
    };
    if (!lines.some(check)) events.on('line', check);
  });
  return { app, lines, waitFor };
}

const audits = (lines: string[]) => lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.audit === true);
const UUID = '2ee6b0a5-8a64-4b3e-9b6e-0c9f6f0b1b11';
const BACKEND = { pools: [{ pool_name: 'p', total_capacity_gb: 100, free_capacity_gb: 100 }] };
const NODE = { disks: { d1: { path: '/d1', storageMaximum: 100 * 2 ** 30, storageAvailable: 100 * 2 ** 30 } } };

t.test('both header forms; Bearer is case-insensitive; other schemes and unknown tokens are 401', async (t) => {
  const { app } = await buildLogged(t, { auth_tokens_file: writeTokens(t.testdir()) });
  const status = async (headers: Record<string, string>) => (await app.inject({ url: '/backends', headers })).statusCode;
  t.equal(await status(bearer(TOKENS.reader)), 200);
  t.equal(await status({ authorization: `bearer ${TOKENS.reader}` }), 200);
  t.equal(await status({ 'x-auth-token': TOKENS.reader }), 200);
  t.equal(await status({ authorization: `Basic ${Buffer.from(`u:${TOKENS.reader}`).toString('base64')}` }), 401);
  const unknown = await app.inject({ url: '/backends', headers: bearer('not-a-token') });
  t.equal(unknown.statusCode, 401);
  t.equal(unknown.headers['www-authenticate'], 'Bearer realm="berth", error="invalid_token"');
  t.same(unknown.json(), { type: '/problems/unauthorized', title: 'Unauthorized', status: 401, detail: 'The token is not known (mistyped or revoked).' });
  const missing = await app.inject({ url: '/nodes' });
  t.equal(missing.headers['www-authenticate'], 'Bearer realm="berth"');
  t.match(missing.headers['content-type'], /^application\/problem\+json/);
  t.match(missing.json(), { status: 401, detail: /Authorization: Bearer <token> or X-Auth-Token: <token>/ });
});

t.test('Placement routes answer as Placement 8.0.0 under noauth2 (the conformance tokens file)', async (t) => {
  const file = writeTokens(t.testdir(), [
    { name: 'admin', token: 'admin', roles: ['admin'] }, { name: 'admin:admin', token: 'admin:admin', roles: ['admin'] },
    { name: 'user', token: 'user', roles: [] },
  ]);
  const { app } = await buildLogged(t, { auth_tokens_file: file });
  // confirm-auth.yaml
  t.equal((await app.inject({ url: '/', headers: { accept: 'application/json' } })).statusCode, 200, 'no token gets 200 at root');
  t.equal((await app.inject({ url: '/', headers: { 'x-auth-token': 'admin:admin' } })).statusCode, 200);
  const noToken = await app.inject({ url: '/resource_providers', headers: { accept: 'application/json' } });
  t.equal(noToken.statusCode, 401, 'no token gets 401');
  t.equal((await app.inject({ url: '/resource_providers', headers: { 'x-auth-token': 'admin:admin' } })).statusCode, 200);
  // The 401 comes from the auth middleware in front of Placement: webob's body, no microversion headers.
  t.equal(noToken.headers['content-type'], 'application/json');
  t.equal(noToken.body, '{"message": "This server could not verify that you are authorized to access the document you requested. ' +
    'Either you supplied the wrong credentials (e.g., bad password), or your browser does not understand how to supply the ' +
    'credentials required.<br /><br />\\n\\n\\n", "code": "401 Unauthorized", "title": "Unauthorized"}');
  t.notOk(noToken.headers['openstack-api-version'], 'no microversion header on the 401');
  t.match(noToken.headers['x-openstack-request-id'], /^req-[0-9a-f-]{36}$/);
  t.equal(noToken.headers['www-authenticate'], 'Bearer realm="berth"');
  // webob's negotiation, as recorded from webob 1.8.7 (Accept → content type).
  const negotiated: Array<[string | undefined, string]> = [
    [undefined, 'text/plain; charset=UTF-8'], ['', 'text/plain; charset=UTF-8'], ['application/json', 'application/json'],
    ['*/*', 'text/html; charset=UTF-8'], ['text/plain', 'text/plain; charset=UTF-8'], ['text/html', 'text/html; charset=UTF-8'],
    ['application/json, text/html', 'text/html; charset=UTF-8'], ['text/html;q=0.5, application/json', 'application/json'],
    ['application/*', 'application/json'], ['text/*', 'text/html; charset=UTF-8'], ['image/png', 'text/plain; charset=UTF-8'],
    ['*/*;q=0', 'text/plain; charset=UTF-8'], ['application/json;q=0, */*', 'text/html; charset=UTF-8'],
    ['text/html;q=0.9, application/json;q=0.9', 'text/html; charset=UTF-8'], ['TEXT/HTML', 'text/html; charset=UTF-8'],
  ];
  for (const [accept, type] of negotiated) {
    const res = await app.inject({ url: '/traits', headers: accept === undefined ? {} : { accept } });
    t.equal(res.headers['content-type'], type, `Accept ${JSON.stringify(accept)}`);
  }
  const plain = await app.inject({ url: '/traits' });
  t.equal(plain.body, '401 Unauthorized\n\nThis server could not verify that you are authorized to access the document you requested. ' +
    'Either you supplied the wrong credentials (e.g., bad password), or your browser does not understand how to supply the ' +
    'credentials required.\n\n   ');

  // resource-provider.yaml, resource-classes.yaml: "non admin forbidden".
  for (const url of ['/resource_providers', '/resource_classes']) {
    const res = await app.inject({ url, headers: { 'x-auth-token': 'user', accept: 'application/json' } });
    t.equal(res.statusCode, 403, url);
    t.equal(res.json().errors[0].title, 'Forbidden');
  }
  // The policy refusal is the handler's: inside the microversion middleware, so with its headers, and with a code from 1.23.
  const old = await app.inject({ url: '/resource_providers', headers: { 'x-auth-token': 'user' } });
  t.equal(old.headers['openstack-api-version'], 'placement 1.0');
  t.same(old.json(), { errors: [{
    status: 403, title: 'Forbidden', request_id: old.headers['x-openstack-request-id'],
    detail: 'Access was denied to this resource.\n\n Policy does not allow placement:resource_providers:list to be performed.  ',
  }] });
  const recent = await app.inject({ method: 'POST', url: '/resource_providers', headers: { 'x-auth-token': 'user', 'openstack-api-version': 'placement 1.39' }, payload: { name: 'x' } });
  t.equal(recent.statusCode, 403);
  t.match(recent.json().errors[0], { code: 'placement.undefined_code', detail: /placement:resource_providers:create/ });
  // microversion-bug-1724065.yaml: a bad microversion is refused before the policy check.
  const bad = await app.inject({ url: '/resource_providers', headers: { 'x-auth-token': 'user', 'openstack-api-version': 'placement 0.9' } });
  t.equal(bad.statusCode, 406);
  t.match(bad.body, /Unacceptable version header/);
  // A method Placement does not route is its 405, after authentication.
  t.equal((await app.inject({ method: 'PATCH', url: '/resource_providers', headers: { 'x-auth-token': 'user' } })).statusCode, 405);
  t.equal((await app.inject({ method: 'PATCH', url: '/resource_providers' })).statusCode, 401);
});

t.test('tokens are added and revoked without a restart; a bad file keeps the tokens in force', async (t) => {
  const dir = t.testdir();
  const ops: TokenSpec = { name: 'ops', token: 'tok-ops-Y7uI2oP5aS8dF1', roles: ['admin'] };
  const file = writeTokens(dir, [ops]);
  const { app, lines } = await buildLogged(t, { auth_tokens_file: file });
  const status = async (token: string) => (await app.inject({ url: '/backends', headers: bearer(token) })).statusCode;
  t.equal(await status(ops.token), 200);
  const late: TokenSpec = { name: 'late', token: 'tok-late-W3eR6tY9uI2o', roles: ['reader'] };
  t.equal(await status(late.token), 401, 'not yet known');

  writeFileSync(file, tokensFileText([ops, late]));
  t.same(app.berthAuth.reload('test'), { ok: true });
  t.equal(await status(late.token), 200, 'added without a restart');
  t.match(audits(lines).at(-1), { action: 'tokens.reload', via: 'test', outcome: 'ok', tokens: 2, added: ['late'], removed: [], target: file });

  writeFileSync(file, tokensFileText([late]));
  app.berthAuth.reload('test');
  t.equal(await status(ops.token), 401, 'revoked without a restart');
  t.match(audits(lines).at(-1), { outcome: 'ok', added: [], removed: ['ops'] });

  const bad: Array<[string, RegExp]> = [
    ['{"tokens": [', /is not valid JSON/],
    ['{"tokens": [{"name": "x", "sha256": "abc", "roles": []}]}', /tokens\[0\]\.sha256: must be the 64 hex digits/],
    [JSON.stringify({ tokens: [{ name: 'x', sha256: 'a'.repeat(64), roles: ['boss'] }] }), /tokens\[0\]\.roles\[0\]: Invalid option/],
    [JSON.stringify({ tokens: [{ name: 'x', sha256: 'a'.repeat(64), roles: [] }, { name: 'x', sha256: 'b'.repeat(64), roles: [] }] }), /name x is used twice/],
    [JSON.stringify({ tokens: [{ name: 'x', sha256: 'a'.repeat(64), roles: [], role: 'admin' }] }), /Unrecognized key/],
    [JSON.stringify({ token: [] }), /Unrecognized key|tokens/],
  ];
  for (const [text, message] of bad) {
    writeFileSync(file, text);
    const result = app.berthAuth.reload('test');
    t.equal(result.ok, false, text);
    t.match(result.error, message);
    t.equal(await status(late.token), 200, 'the tokens in force stay');
    t.match(audits(lines).at(-1), { level: 50, audit: true, action: 'tokens.reload', outcome: 'error', error: message, tokens_in_force: 1 }, 'logged as an error');
  }
});

t.test('a change to the file is picked up by the watch (rename into place, as editors and the token script do)', async (t) => {
  const dir = t.testdir();
  const file = writeTokens(dir, [{ name: 'first', token: 'tok-first-A1s2D3f4G5h6', roles: ['reader'] }]);
  const { app, waitFor } = await buildLogged(t, { auth_tokens_file: file });
  const reloaded = waitFor((l) => l.audit === true && l.via === 'watch' && l.outcome === 'ok');
  writeFileSync(join(dir, 'tokens.json.tmp'), tokensFileText([{ name: 'second', token: 'tok-second-J7k8L9z0X1c2', roles: ['reader'] }]));
  renameSync(join(dir, 'tokens.json.tmp'), file);
  t.match(await reloaded, { added: ['second'], removed: ['first'] });
  t.equal((await app.inject({ url: '/pools', headers: bearer('tok-second-J7k8L9z0X1c2') })).statusCode, 200);
  t.equal((await app.inject({ url: '/pools', headers: bearer('tok-first-A1s2D3f4G5h6') })).statusCode, 401);
});

t.test('a malformed tokens file stops the app from being built, with one line naming the problem', async (t) => {
  const dir = t.testdir();
  const missing = join(dir, 'nope.json');
  await t.rejects(buildApp({ config: parseConfig({ data_dir: ':memory:', auth_tokens_file: missing }), store: openSqliteStore(':memory:'), processMetrics: false }),
    new AuthFileError(`auth_tokens_file ${missing} cannot be read (ENOENT)`));
  writeFileSync(join(dir, 'bad.json'), '{"tokens": [{"name": "n", "sha256": "00", "roles": ["reader"]}]}');
  await t.rejects(buildApp({ config: parseConfig({ data_dir: ':memory:', auth_tokens_file: join(dir, 'bad.json') }), store: openSqliteStore(':memory:'), processMetrics: false }),
    { message: /^auth_tokens_file .*bad\.json: tokens\[0\]\.sha256: must be the 64 hex digits[^\n]*$/ });
});

t.test('more than auth_failures_per_minute failures from one address: 429 with Retry-After until the minute ends', async (t) => {
  let now = 1_000_000;
  const { app } = await buildLogged(t, { auth_tokens_file: writeTokens(t.testdir()), auth_failures_per_minute: 5 }, { now: () => now });
  const from = (remoteAddress: string, headers: Record<string, string>, url = '/backends') => app.inject({ url, headers, remoteAddress });
  for (let i = 0; i < 10; i++) t.equal((await from('10.0.0.1', {})).statusCode, 401, 'requests without a token are not guesses');
  for (let i = 0; i < 5; i++) {
    t.equal((await from('10.0.0.1', bearer(`wrong-${i}`))).statusCode, 401, `failure ${i + 1}`);
    now += 1000;
  }
  const limited = await from('10.0.0.1', bearer(TOKENS.admin));
  t.equal(limited.statusCode, 429, 'then even a good token waits');
  t.equal(limited.headers['retry-after'], '55', 'until the minute from the first failure passes');
  t.match(limited.json(), { type: '/problems/too-many-failed-authentications', status: 429, detail: /More than 5 failed authentications/ });
  const placement = await from('10.0.0.1', { 'x-auth-token': TOKENS.admin }, '/resource_providers');
  t.equal(placement.statusCode, 429);
  t.match(placement.json(), { errors: [{ status: 429, title: 'Too Many Requests' }] }, 'Placement\'s shape on its routes');
  t.equal((await from('10.0.0.1', {}, '/healthz')).statusCode, 200, 'open routes stay open');
  t.equal((await from('10.0.0.2', bearer(TOKENS.admin))).statusCode, 200, 'another address is not affected');
  now += 54_000;
  t.equal((await from('10.0.0.1', bearer(TOKENS.admin))).statusCode, 429, 'one second left');
  now += 1000;
  t.equal((await from('10.0.0.1', bearer(TOKENS.admin))).statusCode, 200, 'the minute has passed');
  t.equal((await from('10.0.0.1', bearer(TOKENS.none), '/volumes')).statusCode, 403);

  const metrics = (await app.inject('/metrics')).body;
  t.match(metrics, /berth_auth_failures_total\{reason="missing"\} 10\n/);
  t.match(metrics, /berth_auth_failures_total\{reason="unknown_token"\} 5\n/);
  t.match(metrics, /berth_auth_failures_total\{reason="rate_limited"\} 3\n/);
  t.match(metrics, /berth_auth_failures_total\{reason="forbidden"\} 1\n/);
  t.match(metrics, /berth_auth_failures_total\{reason="jwt_expired"\} 0\n/);
});

t.test('one audit line per state change: who, what, target, outcome, request id; reads leave none', async (t) => {
  const { app, lines } = await buildLogged(t, { auth_tokens_file: writeTokens(t.testdir()) });
  const as = (token: string) => ({ 'x-auth-token': token });
  await app.inject({ method: 'PUT', url: '/backends/h1@lvm', headers: as(TOKENS.reporter), payload: BACKEND });
  await app.inject({ url: '/pools', headers: as(TOKENS.reader) });
  await app.inject({ method: 'POST', url: '/volumes/schedule', headers: as(TOKENS.scheduler), payload: { id: 'v1', size: 10 } });
  await app.inject({ method: 'DELETE', url: '/backends/h1@lvm', headers: as(TOKENS.reporter) });
  await app.inject({ method: 'PUT', url: '/replicas/settings', headers: as(TOKENS.admin), payload: { 'replica-soft-anti-affinity': true } });
  await app.inject({ method: 'DELETE', url: '/volumes/v1' });
  await app.inject({ method: 'PUT', url: `/resource_providers/${UUID}`, headers: as(TOKENS.reporter), payload: { name: 'x' } });
  const got = audits(lines);
  t.equal(got.length, 6, 'the GET left no line');
  t.match(got[0], { who: 'reporter', via: 'token', action: 'PUT /backends/:host', target: { host: 'h1@lvm' }, outcome: 200, request_id: /./, msg: 'audit' });
  t.match(got[1], { who: 'scheduler', action: 'POST /volumes/schedule', target: {}, outcome: 200, msg: 'decision' }, 'a claim: its decision line');
  t.match(got[2], { who: 'reporter', action: 'DELETE /backends/:host', target: { host: 'h1@lvm' }, outcome: 403 }, 'refusals are recorded too');
  t.match(got[3], { who: 'admin', action: 'PUT /replicas/settings', outcome: 200 });
  t.match(got[4], { who: null, via: 'none', action: 'DELETE /volumes/:id', target: { id: 'v1' }, outcome: 401 });
  t.match(got[5], { who: 'reporter', action: 'PUT /resource_providers/:uuid', target: { uuid: UUID }, outcome: 404, openstack_request_id: /^req-/ });
});

t.test('volumes and replicas record who claimed them; Placement bodies keep Placement\'s shape', async (t) => {
  const dir = t.testdir();
  const dataDir = join(dir, 'data');
  const file = writeTokens(dir);
  const as = (token: string) => ({ 'x-auth-token': token });
  {
    const store = openSqliteStore(dataDir);
    const { app } = await buildLogged(t, { auth_tokens_file: file }, { store });
    await app.inject({ method: 'PUT', url: '/backends/h1@lvm', headers: as(TOKENS.reporter), payload: BACKEND });
    t.equal((await app.inject({ method: 'POST', url: '/volumes/schedule', headers: as(TOKENS.scheduler), payload: { id: 'v1', size: 10 } })).statusCode, 200);
    t.equal((await app.inject({ method: 'PUT', url: '/nodes/n1', headers: as(TOKENS.reporter), payload: NODE })).statusCode, 200);
    const placed = await app.inject({ method: 'POST', url: '/replicas/schedule', headers: as(TOKENS.admin), payload: { volume: { name: 'rv', size: 2 ** 30, numberOfReplicas: 1 } } });
    t.equal(placed.statusCode, 200, placed.body);
    t.equal(placed.json().replicas[0].createdBy, 'admin');
    await app.close();
    // One process per data directory: the store is released before the "restart" opens it again.
    await store.close();
  }
  const { app } = await buildLogged(t, { auth_tokens_file: file }, { store: openSqliteStore(dataDir) });
  t.match((await app.inject({ url: '/volumes/v1', headers: as(TOKENS.reader) })).json(), { id: 'v1', created_by: 'scheduler' }, 'kept in the store');
  t.match((await app.inject({ url: '/volumes', headers: as(TOKENS.reader) })).json().volumes, [{ created_by: 'scheduler' }]);
  const replicas = (await app.inject({ url: '/replicas', headers: as(TOKENS.reader) })).json().replicas;
  t.match(replicas, [{ volume: 'rv', createdBy: 'admin' }]);
  t.match((await app.inject({ url: `/replicas/${replicas[0].name}`, headers: as(TOKENS.reader) })).json(), { createdBy: 'admin' });

  const open = await buildLogged(t, {});
  await open.app.inject({ method: 'PUT', url: '/backends/h1@lvm', payload: BACKEND });
  await open.app.inject({ method: 'POST', url: '/volumes/schedule', payload: { id: 'v2', size: 1 } });
  t.equal((await open.app.inject('/volumes/v2')).json().created_by, null, 'null without authentication');
});

t.test('no log line, at any level, holds a configured or presented token', async (t) => {
  const dir = t.testdir();
  const file = writeTokens(dir);
  const { app, lines } = await buildLogged(t, { auth_tokens_file: file, auth_failures_per_minute: 3 });
  const presented = ['wrong-Zx8Cv7Bn6Mq5', 'wrong-Lk4Jh3Gf2Ds1', 'wrong-Po9Iu8Yt7Re6', 'wrong-Wq1Ea2Sd3Fg4'];
  for (const token of [...Object.values(TOKENS), ...presented]) {
    await app.inject({ method: 'PUT', url: '/backends/h@x', headers: bearer(token), payload: BACKEND });
    await app.inject({ method: 'PUT', url: '/backends/h@x', headers: { 'x-auth-token': token, 'content-type': 'application/json' }, payload: '{bad' });
    await app.inject({ url: `/resource_providers?name=${encodeURIComponent('n')}`, headers: { 'x-auth-token': token } });
    await app.inject({ method: 'DELETE', url: '/nodes/n1', headers: bearer(token) });
  }
  writeFileSync(file, '{"tokens": [{"name": "pasted", "sha256": "' + TOKENS.admin + '", "roles": []}]}');
  app.berthAuth.reload('test');
  writeFileSync(file, `{"tokens": ["${TOKENS.admin}"`);
  app.berthAuth.reload('test');
  // Whatever logs a request or its headers later: a request is logged without its headers, headers without credentials.
  app.log.info({ req: { method: 'GET', url: '/', headers: { authorization: `Bearer ${TOKENS.admin}`, 'x-auth-token': TOKENS.admin } } }, 'req');
  app.log.info({ headers: { authorization: `Bearer ${TOKENS.admin}`, 'x-auth-token': TOKENS.admin } }, 'headers');
  t.ok(lines.length > 100, `${lines.length} lines`);
  t.ok(lines.some((l) => JSON.parse(l).level >= 50), 'errors were logged too');
  const leaked = lines.filter((l) => [...Object.values(TOKENS), ...presented].some((token) => l.includes(token)));
  t.same(leaked, [], 'no token in any line');
  t.match(JSON.parse(lines.at(-1)!), { headers: { authorization: '[Redacted]', 'x-auth-token': '[Redacted]' } });
  t.match(JSON.parse(lines.at(-2)!), { msg: 'req', req: { method: 'GET', url: '/' } });
  t.notOk('headers' in JSON.parse(lines.at(-2)!).req, 'a request is logged without its headers');
});
