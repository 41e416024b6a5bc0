// Every route the app declares × every role, generated from what the app registers: a route added later without
// an entry in the role table fails here, and so does any route that admits a role it should not.
import t from 'tap';
import type { DeclaredRoute } from '../../src/http/auth.ts';
import { lookupRule, type Role } from '../../src/http/roles.ts';
import { build } from '../helper.ts';
import { TOKENS, writeTokens, type TokenName } from './auth-helper.ts';

/** Hundreds of requests in a row: load shedding (503 on event-loop lag) must not decide any of them. */
const CALM = { max_event_loop_delay_ms: 0 };

/** The specification, independent of the code: which route roles each token may use (roles are cumulative). */
const MAY_USE: Record<TokenName, readonly Role[]> = {
  reader: ['reader'],
  reporter: ['reader', 'reporter'],
  scheduler: ['reader', 'scheduler'],
  admin: ['reader', 'reporter', 'scheduler', 'admin'],
  none: [],
};

/** The lists, route by route. */
const EXPECTED: ReadonlyArray<[string, Role | 'open']> = [
  ['GET /healthz', 'open'], ['GET /readyz', 'open'], ['GET /', 'open'], ['GET /openapi.json', 'open'], ['GET /docs', 'open'],
  ['GET /metrics', 'open'],
  ['PUT /backends/:host', 'reporter'], ['PUT /nodes/:name', 'reporter'],
  ['POST /resource_providers', 'reporter'], ['PUT /resource_providers/:uuid', 'reporter'],
  ['PUT /resource_providers/:uuid/inventories', 'reporter'], ['POST /resource_providers/:uuid/inventories', 'reporter'],
  ['PUT /resource_providers/:uuid/inventories/:resource_class', 'reporter'],
  ['DELETE /resource_providers/:uuid/inventories/:resource_class', 'reporter'],
  ['PUT /resource_providers/:uuid/traits', 'reporter'], ['PUT /traits/:name', 'reporter'],
  ['PUT /aggregates/:uuid/metadata', 'reporter'], ['POST /resource_classes', 'reporter'], ['PUT /resource_classes/:name', 'reporter'],
  ['POST /volumes/schedule', 'scheduler'], ['DELETE /volumes/:id', 'scheduler'], ['POST /replicas/schedule', 'scheduler'],
  ['DELETE /replicas/:name', 'scheduler'], ['PUT /allocations/:consumer_uuid', 'scheduler'],
  ['DELETE /allocations/:consumer_uuid', 'scheduler'], ['POST /allocations', 'scheduler'],
  ['PUT /replicas/settings', 'admin'], ['DELETE /backends/:host', 'admin'], ['DELETE /nodes/:name', 'admin'],
  ['DELETE /resource_providers/:uuid', 'admin'],
  ['GET /allocation_candidates', 'reader'], ['GET /pools', 'reader'], ['GET /replicas/settings', 'reader'],
];

/** A concrete URL for a route pattern. */
function concrete(url: string): string {
  return url.replace(/:([A-Za-z_]+)/g, (_m, name: string) => (name.includes('uuid') ? '2ee6b0a5-8a64-4b3e-9b6e-0c9f6f0b1b11' : `x-${name}`))
    .replace(/\*$/, 'deeper/path');
}

async function answer(app: Awaited<ReturnType<typeof build>>, route: DeclaredRoute, token?: string) {
  const withBody = ['POST', 'PUT', 'PATCH'].includes(route.method);
  return app.inject({
    method: route.method as 'GET',
    url: concrete(route.url),
    headers: { ...(token ? { 'x-auth-token': token } : {}), ...(withBody ? { 'content-type': 'application/json' } : {}) },
    ...(withBody ? { payload: '{}' } : {}),
  });
}

t.test('every declared route has an entry in the role table, and every GET needs reader (or is open)', async (t) => {
  const app = await build(t, { auth_tokens_file: writeTokens(t.testdir()), ...CALM });
  const routes = app.berthAuth.routes();
  t.ok(routes.length > 60, `${routes.length} routes declared`);
  for (const r of routes) {
    t.not(r.source, 'none', `${r.method} ${r.url} has an entry in src/http/roles.ts`);
    if (!r.hidden) t.not(r.source, 'method-not-allowed', `${r.method} ${r.url} is documented, so it needs its own entry`);
    if ((r.method === 'GET' || r.method === 'HEAD') && r.access !== 'open' && r.access !== 'authenticated') {
      t.equal(r.access, 'reader', `${r.method} ${r.url} is a read`);
    }
    if (r.access === 'authenticated') t.ok(r.hidden, `${r.method} ${r.url}: only 404/405 answers need no role`);
  }
  const byKey = new Map(routes.map((r) => [`${r.method} ${r.url}`, r.access]));
  for (const [key, access] of EXPECTED) t.equal(byKey.get(key), access, key);
});

t.test('route × role: allowed roles pass, the others get 403 naming the role, no token gets 401', async (t) => {
  const app = await build(t, { auth_tokens_file: writeTokens(t.testdir()), ...CALM });
  let requests = 0;
  for (const route of app.berthAuth.routes()) {
    const label = `${route.method} ${route.url}`;
    const anonymous = await answer(app, route);
    requests++;
    if (route.access === 'open') {
      t.notOk([401, 403].includes(anonymous.statusCode), `${label} is open: ${anonymous.statusCode}`);
    } else {
      t.equal(anonymous.statusCode, 401, `${label} without a token`);
      t.match(anonymous.headers['www-authenticate'], /^Bearer realm="berth"/, `${label}: 401 challenges Bearer`);
    }
    for (const name of Object.keys(TOKENS) as TokenName[]) {
      const res = await answer(app, route, TOKENS[name]);
      requests++;
      const allowed = route.access === 'open' || route.access === 'authenticated' || MAY_USE[name].includes(route.access);
      if (allowed) {
        t.notOk([401, 403].includes(res.statusCode), `${label} admits ${name}: ${res.statusCode} ${res.body.slice(0, 120)}`);
        continue;
      }
      t.equal(res.statusCode, 403, `${label} refuses ${name}`);
      t.match(res.headers['www-authenticate'], new RegExp(`error="insufficient_scope", scope="${route.access}"`), `${label}: the challenge names ${route.access}`);
      if (route.method === 'HEAD') continue;
      if (route.rule.shape === 'cinder') {
        t.match(res.json(), { forbidden: { code: 403, message: new RegExp(`requires role ${route.access}; ${name} holds`) } }, `${label}: Cinder's fault`);
      } else if (route.rule.shape === 'placement') {
        const entry = res.json().errors[0];
        t.match(entry, { status: 403, title: 'Forbidden' }, `${label}: Placement's shape`);
        t.match(entry.detail, /^Access was denied to this resource\.\n\n Policy does not allow \S+ to be performed\. {2}$/, `${label}: Placement's detail`);
      } else {
        t.match(res.headers['content-type'], /^application\/problem\+json/, `${label}: problem+json`);
        t.match(res.json(), { status: 403, title: 'Forbidden', required_role: route.access, detail: new RegExp(`requires role ${route.access}; ${name} holds`) });
      }
    }
  }
  t.ok(requests > 400, `${requests} requests`);
});

t.test('authentication and the role check come before body parsing and validation', async (t) => {
  const app = await build(t, { auth_tokens_file: writeTokens(t.testdir()), ...CALM });
  const cases: Array<[string, string]> = [['PUT', '/backends/h@x'], ['POST', '/volumes/schedule'], ['PUT', '/nodes/n1'], ['POST', '/resource_providers'], ['PUT', '/allocations/2ee6b0a5-8a64-4b3e-9b6e-0c9f6f0b1b11']];
  for (const [method, url] of cases) {
    const send = (headers: Record<string, string>) =>
      app.inject({ method: method as 'PUT', url, headers: { 'content-type': 'application/json', ...headers }, payload: '{"not json' });
    t.equal((await send({})).statusCode, 401, `${method} ${url}: malformed body, no token → 401`);
    t.equal((await send({ 'x-auth-token': TOKENS.none })).statusCode, 403, `${method} ${url}: malformed body, no role → 403`);
    t.equal((await send({ 'x-auth-token': TOKENS.admin })).statusCode, 400, `${method} ${url}: with the role the body is looked at`);
  }
});

t.test('metrics_require_auth puts /metrics behind the reader role', async (t) => {
  const file = writeTokens(t.testdir());
  const open = await build(t, { auth_tokens_file: file, ...CALM });
  t.equal((await open.inject('/metrics')).statusCode, 200, 'open by default');
  const closed = await build(t, { auth_tokens_file: file, metrics_require_auth: true, ...CALM });
  t.equal((await closed.inject('/metrics')).statusCode, 401);
  t.equal((await closed.inject({ url: '/metrics', headers: { 'x-auth-token': TOKENS.none } })).statusCode, 403);
  t.equal((await closed.inject({ url: '/metrics', headers: { 'x-auth-token': TOKENS.reader } })).statusCode, 200);
  for (const path of ['/healthz', '/readyz', '/docs/', '/openapi.json', '/']) t.equal((await closed.inject(path)).statusCode, 200, `${path} stays open`);
});

t.test('the OpenAPI document declares both token schemes and each operation\'s role from the table', async (t) => {
  const app = await build(t, { auth_tokens_file: writeTokens(t.testdir()), ...CALM });
  const doc = (await app.inject('/openapi.json')).json() as {
    components: { securitySchemes: Record<string, Record<string, string>> };
    security: unknown[];
    paths: Record<string, Record<string, { description?: string; security?: unknown[] }>>;
  };
  t.same(doc.components.securitySchemes.bearerAuth, { type: 'http', scheme: 'bearer', description: doc.components.securitySchemes.bearerAuth!.description });
  t.match(doc.components.securitySchemes.authToken, { type: 'apiKey', in: 'header', name: 'X-Auth-Token' });
  t.same(doc.security, [{ bearerAuth: [] }, { authToken: [] }]);
  const declared = new Map(app.berthAuth.routes().map((r) => [`${r.method} ${r.url.replace(/:([A-Za-z_]+)/g, '{$1}')}`, r.access]));
  let operations = 0;
  for (const [path, methods] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(methods)) {
      operations++;
      // A prefixed '/' route is declared once as '/volume' and documented as '/volume/' (Fastify's prefixTrailingSlash).
      const access = declared.get(`${method.toUpperCase()} ${path}`) ?? declared.get(`${method.toUpperCase()} ${path.replace(/(.)\/$/, '$1')}`);
      t.ok(access, `${method} ${path} is a declared route`);
      if (access === 'open') {
        t.match(op.description, /Open: no token needed/, `${method} ${path} says it is open`);
        t.same(op.security, [], `${method} ${path} needs no token in Swagger UI`);
      } else {
        t.match(op.description, new RegExp(`Requires role: ${access}\\.$`), `${method} ${path} names its role`);
        t.same(op.security, [{ bearerAuth: [] }, { authToken: [] }]);
      }
    }
  }
  t.ok(operations > 50);
});

t.test('lookups: HEAD answers as GET, prefixes cover a path and what is below it, other methods are the 405', async (t) => {
  t.match(lookupRule('HEAD', '/backends'), { rule: { access: 'reader' }, source: 'entry' });
  t.match(lookupRule('GET', '/docs'), { rule: { access: 'open' }, source: 'prefix' });
  t.match(lookupRule('GET', '/docs/static/*'), { rule: { access: 'open' }, source: 'prefix' });
  t.equal(lookupRule('GET', '/docsearch'), undefined, 'a sibling of the prefix is not under it');
  t.match(lookupRule('PUT', '/settings/volumes'), { rule: { access: 'admin' }, source: 'prefix' }, 'future settings routes are admin');
  t.match(lookupRule('PATCH', '/resource_providers/:uuid'), { rule: { access: 'authenticated', shape: 'placement' }, source: 'method-not-allowed' });
  t.match(lookupRule('POST', '/'), { rule: { access: 'open', shape: 'placement' } }, 'Placement\'s root is open whatever the method');
  t.match(lookupRule('POST', '/replicas/headroom'), { rule: { access: 'reader', readOnly: true } }, 'planning routes are listed already');
  t.equal(lookupRule('GET', '/brand-new'), undefined);
});
