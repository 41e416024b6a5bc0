// JWT bearer tokens against a key set served by the test on loopback (auth_jwks_url) or read from a file
// (auth_jwks_file): valid, expired, wrong audience, wrong issuer, wrong signature, unknown key, no roles claim.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { exportJWK, generateKeyPair, SignJWT, type JWK, type JWTPayload } from 'jose';
import t, { type Test } from 'tap';
import { buildApp } from '../../src/app.ts';
import { parseConfig, type ConfigInput } from '../../src/config.ts';
import { openSqliteStore } from '../../src/store/sqlite.ts';
import { bearer, TOKENS, writeTokens } from './auth-helper.ts';

const ISSUER = 'https://issuer.test';
const AUDIENCE = 'berth';
const T0 = Date.UTC(2026, 11, 1, 12, 0, 0);

async function keyPair(kid: string) {
  const { publicKey, privateKey } = await generateKeyPair('ES256');
  const jwk: JWK = { ...(await exportJWK(publicKey)), kid, alg: 'ES256', use: 'sig' };
  return { privateKey, jwk, kid };
}
type KeyPair = Awaited<ReturnType<typeof keyPair>>;

function sign(key: KeyPair, claims: JWTPayload, options: { iss?: string; aud?: string; exp?: number; iat?: number; sub?: string | null } = {}) {
  const jwt = new SignJWT(claims).setProtectedHeader({ alg: 'ES256', kid: key.kid })
    .setIssuer(options.iss ?? ISSUER).setAudience(options.aud ?? AUDIENCE)
    .setIssuedAt(options.iat ?? T0 / 1000).setExpirationTime(options.exp ?? T0 / 1000 + 300);
  if (options.sub !== null) jwt.setSubject(options.sub ?? 'system:serviceaccount:ops:nova');
  return jwt.sign(key.privateKey);
}

/** Serves the key set at /jwks on 127.0.0.1, counting fetches. */
async function serveJwks(t: Test, keys: () => JWK[]): Promise<{ url: string; fetches: () => number; server: Server }> {
  let fetches = 0;
  const server = createServer((req, res) => {
    fetches++;
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ keys: keys() }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/jwks`, fetches: () => fetches, server };
}

async function build(t: Test, config: ConfigInput, now: () => number) {
  const lines: string[] = [];
  const stream = new Writable({ write(c, _e, done) { lines.push(...c.toString().split('\n').filter(Boolean)); done(); } });
  const store = openSqliteStore(':memory:');
  const app = await buildApp({
    config: parseConfig({ data_dir: ':memory:', max_event_loop_delay_ms: 0, auth_jwt_issuer: ISSUER, auth_jwt_audience: AUDIENCE, ...config }),
    store, processMetrics: false, now, logger: { level: 'trace', stream },
  });
  t.teardown(async () => { await app.close(); await store.close(); });
  await app.ready();
  return { app, lines };
}

t.test('JWTs against a JWKS URL: each way a token can be wrong, and the right one', async (t) => {
  const key = await keyPair('k1');
  const other = await keyPair('k1'); // same kid, another key: a forged signature
  const stranger = await keyPair('k9');
  const jwks = await serveJwks(t, () => [key.jwk]);
  let now = T0;
  const { app, lines } = await build(t, { auth_jwks_url: jwks.url }, () => now);
  const call = async (token: string, method = 'GET', url = '/volumes', payload?: object) =>
    app.inject({ method: method as 'GET', url, headers: bearer(token), ...(payload ? { payload } : {}) });

  const good = await sign(key, { berth_roles: ['scheduler'] });
  t.equal((await call(good)).statusCode, 200, 'valid: reader routes (scheduler includes reader)');
  await app.inject({ method: 'PUT', url: '/backends/h@lvm', headers: bearer(await sign(key, { berth_roles: ['reporter'] })), payload: { pools: [{ pool_name: 'p', total_capacity_gb: 10, free_capacity_gb: 10 }] } });
  const placed = await call(good, 'POST', '/volumes/schedule', { id: 'v1', size: 1 });
  t.equal(placed.statusCode, 200, placed.body);
  t.equal((await call(good, 'GET', '/volumes/v1')).json().created_by, 'system:serviceaccount:ops:nova', 'the subject claimed it');
  t.match(lines.map((l) => JSON.parse(l)).find((l) => l.audit && l.action === 'POST /volumes/schedule'), { who: 'system:serviceaccount:ops:nova', via: 'jwt' });
  t.equal((await call(good, 'DELETE', '/nodes/n1')).statusCode, 403, 'but not admin routes');

  const refused: Array<[string, Promise<string>, RegExp, string]> = [
    ['expired', sign(key, { berth_roles: ['admin'] }, { iat: T0 / 1000 - 600, exp: T0 / 1000 - 1 }), /has expired/, 'jwt_expired'],
    ['wrong audience', sign(key, { berth_roles: ['admin'] }, { aud: 'someone-else' }), /aud claim/, 'jwt_claims'],
    ['wrong issuer', sign(key, { berth_roles: ['admin'] }, { iss: 'https://evil.test' }), /iss claim/, 'jwt_claims'],
    ['no subject', sign(key, { berth_roles: ['admin'] }, { sub: null }), /sub claim/, 'jwt_claims'],
    ['wrong signature', sign(other, { berth_roles: ['admin'] }), /signature does not verify/, 'jwt_signature'],
    ['unknown key', sign(stranger, { berth_roles: ['admin'] }), /signature does not verify/, 'jwt_signature'],
    ['alg none', Promise.resolve(`${Buffer.from('{"alg":"none"}').toString('base64url')}.${Buffer.from(JSON.stringify({ iss: ISSUER, aud: AUDIENCE, sub: 'x', exp: T0 / 1000 + 60, berth_roles: ['admin'] })).toString('base64url')}.`), /signature|malformed/, 'jwt_'],
  ];
  for (const [what, token, detail, reason] of refused) {
    const res = await call(await token);
    t.equal(res.statusCode, 401, what);
    t.equal(res.headers['www-authenticate'], 'Bearer realm="berth", error="invalid_token"', what);
    t.match(res.json(), { status: 401, detail }, what);
    t.match((await app.inject('/metrics')).body, new RegExp(`berth_auth_failures_total\\{reason="${reason}`), `${what} counted`);
  }

  const noRoles = await sign(key, {});
  t.equal((await call(noRoles, 'GET', '/')).statusCode, 200, 'no roles claim: open routes');
  const forbidden = await call(noRoles);
  t.equal(forbidden.statusCode, 403, 'no roles claim: an authenticated caller without roles');
  t.match(forbidden.json().detail, /requires role reader; system:serviceaccount:ops:nova holds no role/);
  t.equal((await call(await sign(key, { berth_roles: 'reader reporter' }), 'GET', '/pools')).statusCode, 200, 'a space separated claim');
  t.equal((await call(await sign(key, { berth_roles: ['root', 'superuser'] }))).statusCode, 403, 'names that are not roles grant nothing');

  now = T0 + 301_000;
  t.equal((await call(good)).statusCode, 401, 'the same token once the (injected) clock passes its expiry');

  const all = lines.join('\n');
  for (const token of [good, noRoles]) t.notOk(all.includes(token), 'no JWT in the logs');
  t.ok(jwks.fetches() >= 1 && jwks.fetches() <= 3, `the key set was fetched ${jwks.fetches()} time(s), not per request`);
});

t.test('roles from a nested claim; static tokens and JWTs side by side', async (t) => {
  const key = await keyPair('k1');
  const jwks = await serveJwks(t, () => [key.jwk]);
  const { app } = await build(t, { auth_jwks_url: jwks.url, auth_jwt_roles_claim: 'realm_access.roles', auth_tokens_file: writeTokens(t.testdir()) }, () => T0);
  t.equal((await app.inject({ url: '/nodes', headers: bearer(await sign(key, { realm_access: { roles: ['reader'] } })) })).statusCode, 200);
  t.equal((await app.inject({ url: '/nodes', headers: bearer(await sign(key, { berth_roles: ['reader'] })) })).statusCode, 403, 'the default claim is not read');
  t.equal((await app.inject({ url: '/nodes', headers: { 'x-auth-token': TOKENS.reader } })).statusCode, 200, 'static tokens still work');
  t.equal((await app.inject({ url: '/nodes', headers: bearer('a.b.c') })).statusCode, 401);
});

t.test('an unreachable key set is 503 with Retry-After (not the caller\'s fault), in each dialect\'s shape', async (t) => {
  const key = await keyPair('k1');
  const jwks = await serveJwks(t, () => [key.jwk]);
  const url = jwks.url;
  await new Promise<void>((r) => jwks.server.close(() => r()));
  const { app } = await build(t, { auth_jwks_url: url }, () => T0);
  const token = await sign(key, { berth_roles: ['admin'] });
  const res = await app.inject({ url: '/volumes', headers: bearer(token) });
  t.equal(res.statusCode, 503);
  t.equal(res.headers['retry-after'], '5');
  t.match(res.json(), { type: '/problems/authentication-unavailable', status: 503 });
  const placement = await app.inject({ url: '/traits', headers: { 'x-auth-token': token } });
  t.match(placement.json(), { errors: [{ status: 503, title: 'Service Unavailable' }] });
});

t.test('auth_jwks_file: keys rotate on reload; a bad file keeps the keys in force', async (t) => {
  const dir = t.testdir();
  const a = await keyPair('a');
  const b = await keyPair('b');
  const file = join(dir, 'jwks.json');
  writeFileSync(file, JSON.stringify({ keys: [a.jwk] }));
  const { app, lines } = await build(t, { auth_jwks_file: file }, () => T0);
  const lastAudit = () => lines.map((l) => JSON.parse(l)).filter((l) => l.audit).at(-1);
  const status = async (key: KeyPair) => (await app.inject({ url: '/pools', headers: bearer(await sign(key, { berth_roles: ['reader'] })) })).statusCode;
  t.equal(await status(a), 200);
  t.equal(await status(b), 401);
  writeFileSync(file, JSON.stringify({ keys: [b.jwk] }));
  t.same(app.berthAuth.reload('test'), { ok: true });
  t.match(lastAudit(), { action: 'jwks.reload', via: 'test', target: file, outcome: 'ok' });
  t.equal(await status(a), 401, 'the old key is gone');
  t.equal(await status(b), 200, 'the new key is in force');
  writeFileSync(file, '{"keys": ');
  t.match(app.berthAuth.reload('test'), { ok: false, error: /auth_jwks_file .* is not valid JSON/ });
  t.equal(await status(b), 200, 'kept');
  t.match(lastAudit(), { level: 50, action: 'jwks.reload', outcome: 'error', error: /not valid JSON/ });
  await t.rejects(buildApp({ config: parseConfig({ data_dir: ':memory:', auth_jwks_file: file, auth_jwt_issuer: ISSUER, auth_jwt_audience: AUDIENCE }), store: openSqliteStore(':memory:'), processMetrics: false }),
    { message: /^auth_jwks_file .*jwks\.json is not valid JSON$/ }, 'a bad file at start-up stops it');
});

t.test('JWT options that only make sense together are checked with the configuration', async (t) => {
  t.throws(() => parseConfig({ auth_jwks_url: 'http://127.0.0.1:1/jwks' }), /needs auth_jwt_issuer and auth_jwt_audience/);
  t.throws(() => parseConfig({ auth_jwks_url: 'http://127.0.0.1:1/jwks', auth_jwks_file: '/x', auth_jwt_issuer: 'i', auth_jwt_audience: 'a' }), /not both/);
  t.throws(() => parseConfig({ auth_jwt_issuer: 'i' }), /need auth_jwks_url or auth_jwks_file/);
  t.throws(() => parseConfig({ auth_jwks_url: 'file:///etc/passwd', auth_jwt_issuer: 'i', auth_jwt_audience: 'a' }), /invalid option auth_jwks_url/);
});
