// The role table: which role each route needs. One table read by the authentication hook (auth.ts), by the
// OpenAPI document (each operation says its role) and by the tests that try every route with every role.
// Keys are the Fastify method and URL pattern as routes are declared ("PUT /backends/:host"). Pure.

export const ROLES = ['reader', 'reporter', 'scheduler', 'admin'] as const;
export type Role = (typeof ROLES)[number];

/** What a role may do besides its own routes: reporter and scheduler read, admin does everything. */
const GRANTS: Record<Role, readonly Role[]> = {
  reader: ['reader'],
  reporter: ['reporter', 'reader'],
  scheduler: ['scheduler', 'reader'],
  admin: ROLES,
};

export function isRole(name: string): name is Role {
  return (ROLES as readonly string[]).includes(name);
}

/** Every role the given roles hold, cumulative as described above. */
export function grantedRoles(roles: Iterable<Role>): Set<Role> {
  const out = new Set<Role>();
  for (const r of roles) for (const g of GRANTS[r]) out.add(g);
  return out;
}

/**
 * open: no credentials; authenticated: any known credentials (Placement's 404/405 answers behind its auth
 * middleware); a role: credentials holding it.
 */
export type Access = 'open' | 'authenticated' | Role;

/**
 * The shape refusals take: problem+json, Placement's {"errors": [...]} with its policy name in the 403, or Cinder's
 * fault ({"forbidden": {code, message}}: the /volume scope renders the problem as cinderclient reads it).
 */
export type Shape = 'problem' | 'placement' | 'cinder';

export interface RouteRule {
  access: Access;
  shape: Shape;
  /** Placement's policy rule for the route (named in its 403 detail, as Placement does). */
  policy?: string;
  /** A POST that changes nothing (planning routes): no audit line. Non-GET routes otherwise change state. */
  readOnly?: boolean;
  /** Open unless this option is true, then the route needs `access`. */
  openUnless?: 'metrics_require_auth';
}

const problem = (access: Access, extra: Partial<RouteRule> = {}): RouteRule => ({ access, shape: 'problem', ...extra });
const placement = (access: Access, policy?: string): RouteRule => ({ access, shape: 'placement', ...(policy ? { policy } : {}) });
const planning: RouteRule = { access: 'reader', shape: 'problem', readOnly: true };

/** Exact entries; method `*` stands for every method (Placement's catch-all routes). */
const ROUTE_TABLE: Readonly<Record<string, RouteRule>> = {
  // ---- operations
  'GET /healthz': problem('open'),
  'GET /readyz': problem('open'),
  'GET /metrics': problem('reader', { openUnless: 'metrics_require_auth' }),
  'GET /openapi.json': problem('open'),

  // ---- runtime settings of every dialect (PUT: the prefix entry below, admin)
  'GET /settings/:dialect': problem('reader'),
  'GET /settings/:dialect/history': problem('reader'),
  'PUT /settings/:dialect': problem('admin'),

  // ---- the console: its page and assets hold no data (the page must load before a token can be entered)
  'GET /console': problem('open'),
  'GET /console/': problem('open'),
  'GET /console/assets/:file': problem('open'),
  'GET /console/api/fleet': problem('reader'),
  'GET /console/api/decisions': problem('reader'),
  'GET /console/api/decisions/:id': problem('reader'),

  // ---- volumes (Cinder)
  'PUT /backends/:host': problem('reporter'),
  'GET /backends': problem('reader'),
  'DELETE /backends/:host': problem('admin'),
  'GET /pools': problem('reader'),
  'POST /volumes/schedule': problem('scheduler'),
  'GET /volumes': problem('reader'),
  'GET /volumes/:id': problem('reader'),
  'DELETE /volumes/:id': problem('scheduler'),
  'POST /volumes/headroom': planning,
  // Cinder's block-storage API for its client's scheduler-stats read: the versions document is open, as in Cinder.
  'GET /volume': problem('open'),
  'GET /volume/': problem('open'),
  'GET /volume/v3/:project_id/scheduler-stats/get_pools': { access: 'reader', shape: 'cinder' },
  'POST /volumes/simulate': planning,

  // ---- replicas (Longhorn)
  'PUT /nodes/:name': problem('reporter'),
  'GET /nodes': problem('reader'),
  'GET /nodes/:name': problem('reader'),
  'DELETE /nodes/:name': problem('admin'),
  'GET /replicas/settings': problem('reader'),
  'PUT /replicas/settings': problem('admin'),
  'POST /replicas/schedule': problem('scheduler'),
  'GET /replicas': problem('reader'),
  'GET /replicas/:name': problem('reader'),
  'DELETE /replicas/:name': problem('scheduler'),
  'POST /replicas/headroom': planning,
  'POST /replicas/simulate': planning,

  // ---- planning across dialects: Placement's headroom answers in Placement's shape (it is served by that dialect)
  'GET /headroom': { ...placement('reader', 'placement:headroom'), readOnly: true },

  // ---- Placement: every route of Placement 8.0.0 (policy names from placement/policies/), open root as in Placement
  'GET /': placement('open'),
  'GET /resource_classes': placement('reader', 'placement:resource_classes:list'),
  'POST /resource_classes': placement('reporter', 'placement:resource_classes:create'),
  'GET /resource_classes/:name': placement('reader', 'placement:resource_classes:show'),
  'PUT /resource_classes/:name': placement('reporter', 'placement:resource_classes:update'),
  'DELETE /resource_classes/:name': placement('reporter', 'placement:resource_classes:delete'),
  'GET /resource_providers': placement('reader', 'placement:resource_providers:list'),
  'POST /resource_providers': placement('reporter', 'placement:resource_providers:create'),
  'GET /resource_providers/:uuid': placement('reader', 'placement:resource_providers:show'),
  'PUT /resource_providers/:uuid': placement('reporter', 'placement:resource_providers:update'),
  'DELETE /resource_providers/:uuid': placement('admin', 'placement:resource_providers:delete'),
  'GET /resource_providers/:uuid/inventories': placement('reader', 'placement:resource_providers:inventories:list'),
  'POST /resource_providers/:uuid/inventories': placement('reporter', 'placement:resource_providers:inventories:create'),
  'PUT /resource_providers/:uuid/inventories': placement('reporter', 'placement:resource_providers:inventories:update'),
  'DELETE /resource_providers/:uuid/inventories': placement('reporter', 'placement:resource_providers:inventories:delete'),
  'GET /resource_providers/:uuid/inventories/:resource_class': placement('reader', 'placement:resource_providers:inventories:show'),
  'PUT /resource_providers/:uuid/inventories/:resource_class': placement('reporter', 'placement:resource_providers:inventories:update'),
  'DELETE /resource_providers/:uuid/inventories/:resource_class': placement('reporter', 'placement:resource_providers:inventories:delete'),
  'GET /resource_providers/:uuid/usages': placement('reader', 'placement:resource_providers:usages'),
  'GET /resource_providers/:uuid/aggregates': placement('reader', 'placement:resource_providers:aggregates:list'),
  'PUT /resource_providers/:uuid/aggregates': placement('reporter', 'placement:resource_providers:aggregates:update'),
  'GET /resource_providers/:uuid/allocations': placement('reader', 'placement:resource_providers:allocations:list'),
  'GET /resource_providers/:uuid/traits': placement('reader', 'placement:resource_providers:traits:list'),
  'PUT /resource_providers/:uuid/traits': placement('reporter', 'placement:resource_providers:traits:update'),
  'DELETE /resource_providers/:uuid/traits': placement('reporter', 'placement:resource_providers:traits:delete'),
  'POST /allocations': placement('scheduler', 'placement:allocations:manage'),
  'GET /allocations/:consumer_uuid': placement('reader', 'placement:allocations:list'),
  'PUT /allocations/:consumer_uuid': placement('scheduler', 'placement:allocations:update'),
  'DELETE /allocations/:consumer_uuid': placement('scheduler', 'placement:allocations:delete'),
  'GET /allocation_candidates': placement('reader', 'placement:allocation_candidates:list'),
  'GET /traits': placement('reader', 'placement:traits:list'),
  'GET /traits/:name': placement('reader', 'placement:traits:show'),
  'PUT /traits/:name': placement('reporter', 'placement:traits:update'),
  'DELETE /traits/:name': placement('reporter', 'placement:traits:delete'),
  'GET /usages': placement('reader', 'placement:usages'),
  'POST /reshaper': placement('reporter', 'placement:reshaper:reshape'),
  // Nova's host-aggregate metadata (isolate_aggregates), served beside Placement in its shape; Nova's policy names.
  'GET /aggregates/:uuid/metadata': placement('reader', 'os_compute_api:os-aggregates:show'),
  'PUT /aggregates/:uuid/metadata': placement('reporter', 'os_compute_api:os-aggregates:set_metadata'),
  // Placement's 404 below its prefixes, after authentication.
  '* /resource_providers/*': placement('authenticated'),
  '* /traits/*': placement('authenticated'),
  '* /resource_classes/*': placement('authenticated'),
  '* /allocations/*': placement('authenticated'),
  '* /aggregates/*': placement('authenticated'),
  '* /usages/*': placement('authenticated'),
  '* /allocation_candidates/*': placement('authenticated'),
  '* /reshaper/*': placement('authenticated'),
  // A path no dialect serves: Placement's 404 for Placement clients, problem+json for everyone else.
  '* /*': problem('authenticated'),
  // Cinder's 404 below its prefix.
  '* /volume/*': { access: 'authenticated', shape: 'cinder' },
};

/** Prefix entries (the path itself and everything below it), for route families whose URLs are not ours to name. */
const PREFIX_TABLE: ReadonlyArray<{ method: string; prefix: string; rule: RouteRule }> = [
  // Swagger UI's page, its assets and the document it loads.
  { method: 'GET', prefix: '/docs', rule: problem('open') },
  // Settings of every dialect (Longhorn's are PUT /replicas/settings above).
  { method: 'PUT', prefix: '/settings/', rule: problem('admin') },
];

export type RuleSource = 'entry' | 'prefix' | 'method-not-allowed';

/** What answers for routes nobody listed: authentication only (the 404 answer), in problem+json. */
export const UNLISTED_REQUEST: RouteRule = problem('authenticated');
/** A route without an entry needs admin (fail closed); the role-table test fails until it has one. */
export const UNLISTED_ROUTE: RouteRule = problem('admin');

/** Methods with an entry, per URL: another method on such a URL is the dialect's 405 answer. */
const METHODS_BY_URL = new Map<string, RouteRule[]>();
for (const [key, rule] of Object.entries(ROUTE_TABLE)) {
  const url = key.slice(key.indexOf(' ') + 1);
  const list = METHODS_BY_URL.get(url) ?? [];
  list.push(rule);
  METHODS_BY_URL.set(url, list);
}

/**
 * The rule of a route as declared (HEAD answers as GET). `method-not-allowed` covers the 405 routes a dialect
 * declares for the other methods of its URLs: authentication only, in the URL's shape (open if the URL is open).
 */
export function lookupRule(method: string, url: string): { rule: RouteRule; source: RuleSource } | undefined {
  const m = method === 'HEAD' ? 'GET' : method;
  const exact = ROUTE_TABLE[`${m} ${url}`] ?? ROUTE_TABLE[`* ${url}`];
  if (exact) return { rule: exact, source: 'entry' };
  const siblings = METHODS_BY_URL.get(url);
  if (siblings) {
    const shape = siblings[0]!.shape;
    const access: Access = siblings.every((r) => r.access === 'open') ? 'open' : 'authenticated';
    return { rule: { access, shape }, source: 'method-not-allowed' };
  }
  for (const p of PREFIX_TABLE) {
    const under = url === p.prefix || url.startsWith(p.prefix.endsWith('/') ? p.prefix : `${p.prefix}/`);
    if ((p.method === '*' || p.method === m) && under) return { rule: p.rule, source: 'prefix' };
  }
  return undefined;
}

/** The access a rule needs under the configuration (`metrics_require_auth`). */
export function effectiveAccess(rule: RouteRule, options: { metrics_require_auth: boolean }): Access {
  if (rule.openUnless === 'metrics_require_auth' && !options.metrics_require_auth) return 'open';
  return rule.access;
}

/** Whether a request on this rule changes state (and so leaves an audit line). */
export function changesState(rule: RouteRule, method: string): boolean {
  if (rule.readOnly || method === 'GET' || method === 'HEAD' || method === 'OPTIONS') return false;
  return rule.access !== 'open';
}
