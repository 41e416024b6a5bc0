// Authentication and the role check. Credentials: `Authorization: Bearer <token>` or `X-Auth-Token: <token>` (what
// OpenStack clients send), a static token (auth_tokens_file) or a JWT (auth_jwks_url / auth_jwks_file). Each
// route's rule comes from the role table (roles.ts), attached when the route is declared.
//
// Order, as in Placement (auth middleware, then microversion, then the handler's policy check): authentication in
// onRequest (401, 429), the role check in preParsing (403), after the dialects' own onRequest hooks (Placement's
// 406 for a bad microversion comes first) and before the body is parsed or validated.
import { isIP } from 'node:net';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Counter } from 'prom-client';
import type { Config } from '../config.ts';
import type { BerthContext } from './context.ts';
import { writeAudit } from './audit.ts';
import { JwtVerifier, looksLikeJwt } from './auth-jwt.ts';
import { FailureLimiter } from './auth-limiter.ts';
import {
  authUnavailable, forbidden, MISSING_DETAIL, tooManyFailures, unauthorized, UNKNOWN_TOKEN_DETAIL,
} from './auth-refusals.ts';
import { AuthFileError, TokenStore } from './auth-tokens.ts';
import {
  effectiveAccess, grantedRoles, lookupRule, ROLES, UNLISTED_REQUEST, UNLISTED_ROUTE, type Access, type Role,
  type RouteRule, type RuleSource,
} from './roles.ts';
import { routeOf } from './route-options.ts';

export { AuthFileError } from './auth-tokens.ts';

/** Who is calling, once authenticated. */
export interface Principal {
  /** Token name or JWT subject; null when authentication is off. */
  name: string | null;
  via: 'token' | 'jwt' | 'none';
  /** The roles as given (token entry or JWT claim). */
  held: readonly Role[];
  /** Every role they grant (reporter and scheduler include reader, admin everything). */
  granted: ReadonlySet<Role>;
}

/** A route's rule for one method, resolved at declaration. */
export interface ResolvedRule {
  rule: RouteRule;
  access: Access;
}

declare module 'fastify' {
  interface FastifyRequest {
    berthPrincipal: Principal | null;
  }
  interface FastifyContextConfig {
    berthAccess?: Record<string, ResolvedRule>;
  }
  interface FastifyInstance {
    berthAuth: AuthControl;
  }
}

export interface AuthControl {
  /** Whether any credentials are checked. */
  readonly enabled: boolean;
  /** One phrase for the start-up log line. */
  describe(): string;
  /** Re-reads the tokens file and auth_jwks_file (SIGHUP, file change); a bad file keeps what is in force. */
  reload(trigger: string): { ok: boolean; error?: string };
  /** Every route declared so far and where its rule came from ('none': not in the role table, admin only). */
  routes(): ReadonlyArray<DeclaredRoute>;
}

export interface DeclaredRoute {
  method: string;
  url: string;
  source: RuleSource | 'none';
  /** Left out of the OpenAPI document (404/405 answers, the document itself). */
  hidden: boolean;
  access: Access;
  rule: RouteRule;
}

/** The request headers that carry credentials: never logged as they came. */
const CREDENTIAL_HEADERS = ['authorization', 'x-auth-token'];
const REDACTED = '[Redacted]';

/**
 * pino serializers that keep credentials out of every line: a request is logged with Fastify's fields and never its
 * headers, and headers logged under `headers` have their credentials replaced. Serializers, not pino's `redact`
 * paths: those copy the request's fields on every line that has them (1.6 of 5.7 µs of a decision's line, measured).
 */
export const LOG_SERIALIZERS = {
  req: (req: FastifyRequest) => ({
    method: req.method,
    url: req.url,
    version: req.headers?.['accept-version'] as string | undefined,
    host: req.host,
    remoteAddress: req.ip,
    remotePort: req.socket?.remotePort,
  }),
  headers: (headers: unknown) => {
    if (headers === null || typeof headers !== 'object') return headers;
    const copy: Record<string, unknown> = { ...headers };
    for (const name of CREDENTIAL_HEADERS) if (copy[name] !== undefined) copy[name] = REDACTED;
    return copy;
  },
};

const ANONYMOUS: Principal = { name: null, via: 'none', held: [], granted: new Set(ROLES) };
/** Stands in if a request reached the role check unauthenticated: it holds nothing. */
const NOBODY: Principal = { name: null, via: 'none', held: [], granted: new Set() };

const FAILURE_REASONS = [
  'missing', 'unknown_token', 'jwt_malformed', 'jwt_signature', 'jwt_expired', 'jwt_claims', 'jwks_unavailable',
  'forbidden', 'rate_limited',
] as const;

/** The credential of a request, from `Authorization: Bearer` or else `X-Auth-Token`. */
function credentialOf(request: FastifyRequest): string | undefined {
  const authorization = request.headers.authorization;
  if (typeof authorization === 'string') {
    const m = /^Bearer +(\S+) *$/i.exec(authorization);
    if (m) return m[1];
  }
  const header = request.headers['x-auth-token'];
  const token = Array.isArray(header) ? header[0] : header;
  return token !== undefined && token.trim() !== '' ? token.trim() : undefined;
}

export function isLoopback(host: string): boolean {
  const h = host.replace(/^\[(.*)\]$/, '$1').toLowerCase();
  if (h === 'localhost') return true;
  if (isIP(h) === 4) return h.startsWith('127.');
  if (isIP(h) === 6) return h === '::1' || /^::ffff:127\./.test(h);
  return false;
}

function authConfigured(config: Config): boolean {
  return Boolean(config.auth_tokens_file || config.auth_jwks_url || config.auth_jwks_file);
}

/**
 * The start-up rule: without credentials configured Berth listens only on loopback, unless allow_unauthenticated.
 * `error` stops start-up; `warning` is logged at every start.
 */
export function listenRule(config: Config): { error?: string; warning?: string } {
  if (authConfigured(config) || isLoopback(config.host)) return {};
  if (!config.allow_unauthenticated) {
    return {
      error: `refusing to listen on ${config.host} without authentication: set auth_tokens_file (BERTH_AUTH_TOKENS_FILE) ` +
        'to a tokens file, or allow_unauthenticated=true (BERTH_ALLOW_UNAUTHENTICATED) to let anyone who reaches the port in',
    };
  }
  return {
    warning: `authentication is off and Berth listens on ${config.host} (allow_unauthenticated=true): anyone who can ` +
      'reach the port can report capacity, claim, release and change settings',
  };
}

/** Registers the hooks; must come before any route so that every route gets its rule. */
export async function registerAuth(app: FastifyInstance, ctx: BerthContext): Promise<void> {
  const { config } = ctx;
  const tokens = config.auth_tokens_file ? new TokenStore(config.auth_tokens_file) : undefined;
  tokens?.reload();
  const jwt = config.auth_jwks_url || config.auth_jwks_file ? new JwtVerifier(config, ctx.now) : undefined;
  const enabled = Boolean(tokens || jwt);
  const limiter = new FailureLimiter(config.auth_failures_per_minute);
  const failures = new Counter({
    name: 'berth_auth_failures_total',
    help: 'Refused authentications and authorizations, by reason',
    labelNames: ['reason'] as const,
    registers: [ctx.metrics.registry],
  });
  if (enabled) for (const reason of FAILURE_REASONS) failures.inc({ reason }, 0);

  function reload(trigger: string): { ok: boolean; error?: string } {
    const errors: string[] = [];
    const attempt = (action: 'tokens.reload' | 'jwks.reload', file: string, run: () => Record<string, unknown> | undefined) => {
      try {
        const detail = run();
        if (detail) writeAudit(app.log, { audit: true, who: null, via: trigger, action, target: file, outcome: 'ok', ...detail });
      } catch (err) {
        if (!(err instanceof AuthFileError)) throw err;
        errors.push(err.message);
        writeAudit(app.log, {
          audit: true, who: null, via: trigger, action, target: file, outcome: 'error', error: err.message,
          ...(action === 'tokens.reload' ? { tokens_in_force: tokens?.size ?? 0 } : {}),
        }, 'error');
      }
    };
    if (tokens) {
      attempt('tokens.reload', tokens.file, () => {
        const r = tokens.reload();
        // An unchanged file (the watch also sees unrelated events) is only worth a line when asked for.
        return r.changed || trigger === 'SIGHUP' ? { tokens: r.count, added: r.added, removed: r.removed } : undefined;
      });
    }
    if (jwt && config.auth_jwks_file) attempt('jwks.reload', config.auth_jwks_file, () => (jwt.reload() ? {} : undefined));
    return errors.length === 0 ? { ok: true } : { ok: false, error: errors.join('; ') };
  }

  const declared: DeclaredRoute[] = [];
  const control: AuthControl = {
    enabled,
    describe() {
      if (!enabled) return isLoopback(config.host) ? 'off (no auth_tokens_file or JWKS configured; loopback only)' : 'off (allow_unauthenticated=true)';
      const parts: string[] = [];
      if (tokens) parts.push(`${tokens.size} token(s) from ${tokens.file}`);
      if (jwt) parts.push(`JWTs from ${config.auth_jwt_issuer} verified against ${jwt.source}`);
      return `on: ${parts.join('; ')}`;
    },
    reload,
    routes: () => declared,
  };
  app.decorate('berthAuth', control);
  if (tokens) {
    tokens.watch(() => reload('watch'));
    app.addHook('onClose', async () => tokens.unwatch());
  }

  app.decorateRequest('berthPrincipal', null);
  app.addHook('onRoute', (route) => {
    const berthAccess: Record<string, ResolvedRule> = {};
    const hidden = Boolean((route.schema as { hide?: boolean } | undefined)?.hide);
    for (const method of [route.method].flat()) {
      const found = lookupRule(method, route.url);
      if (!found) app.log.warn({ route: `${method} ${route.url}` }, 'route has no entry in the role table: admin only');
      const rule = found?.rule ?? UNLISTED_ROUTE;
      const access = effectiveAccess(rule, config);
      berthAccess[method] = { rule, access };
      declared.push({ method, url: route.url, source: found?.source ?? 'none', hidden, access, rule });
    }
    route.config = { ...route.config, berthAccess };
  });

  const resolvedOf = (request: FastifyRequest): ResolvedRule =>
    routeOf(request).config?.berthAccess?.[request.method] ?? { rule: UNLISTED_REQUEST, access: UNLISTED_REQUEST.access };

  /** A request to a route that needs a caller: who it is, or the refusal (true: the refusal was sent already). */
  const authenticate = async (request: FastifyRequest, reply: FastifyReply, rule: RouteRule): Promise<boolean> => {
    const client = request.ip;
    const wait = limiter.retryAfterSeconds(client, ctx.now());
    if (wait > 0) {
      failures.inc({ reason: 'rate_limited' });
      throw tooManyFailures(reply, rule, limiter.limit, wait);
    }
    const credential = credentialOf(request);
    if (credential === undefined) {
      failures.inc({ reason: 'missing' });
      const err = unauthorized(reply, rule, 'missing', MISSING_DETAIL);
      if (err) throw err;
      return true;
    }
    const entry = tokens?.match(credential);
    if (entry) {
      request.berthPrincipal = { name: entry.name, via: 'token', held: entry.roles, granted: grantedRoles(entry.roles) };
      return false;
    }
    let reason: (typeof FAILURE_REASONS)[number] = 'unknown_token';
    let detail = UNKNOWN_TOKEN_DETAIL;
    if (jwt && looksLikeJwt(credential)) {
      const outcome = await jwt.verify(credential);
      if (outcome.ok) {
        request.berthPrincipal = { name: outcome.subject, via: 'jwt', held: outcome.roles, granted: grantedRoles(outcome.roles) };
        return false;
      }
      if (outcome.reason === 'jwks_unavailable') {
        failures.inc({ reason: outcome.reason });
        request.log.error({ jwks: jwt.source }, 'the JWT key set cannot be fetched');
        throw authUnavailable(reply, rule, outcome.detail);
      }
      reason = outcome.reason;
      detail = outcome.detail;
    }
    failures.inc({ reason });
    limiter.fail(client, ctx.now());
    const err = unauthorized(reply, rule, 'invalid', detail);
    if (err) throw err;
    return true;
  };

  // Callback style, not async: the routes that need no caller (and every route with authentication off) pay no promise.
  app.addHook('onRequest', (request, reply, done) => {
    const { rule, access } = resolvedOf(request);
    if (access === 'open') return done();
    if (!enabled) {
      request.berthPrincipal = ANONYMOUS;
      return done();
    }
    authenticate(request, reply, rule).then((answered) => {
      if (!answered) done();
    }, (err: Error) => done(err));
  });

  // Callback style, not async: it runs before every body is read, and a promise per request is measurable there.
  app.addHook('preParsing', (request, reply, payload, done) => {
    const { rule, access } = resolvedOf(request);
    if (access === 'open' || access === 'authenticated') return done(null, payload);
    const principal = request.berthPrincipal ?? NOBODY;
    if (!principal.granted.has(access)) {
      failures.inc({ reason: 'forbidden' });
      return done(forbidden(reply, rule, access, principal.name ?? 'the caller', principal.held));
    }
    done(null, payload);
  });
}
