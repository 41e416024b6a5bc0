// The Placement scope's HTTP behaviour, in the order of Placement's WSGI middleware (deploy.py): the request id
// and a default Accept (requestlog), the microversion (microversion_parse: 400/406, then the version header on
// every answer), the content-length check and the routing (handler.py: 404 for unknown paths, 405 with Allow for
// other methods), Placement's error shape rendered for the Accept header, and bodies kept raw so that each
// handler checks its content type (415) and validates against its microversion's schema.
import { randomUUID } from 'node:crypto';
import type { Duplex } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { classifyError } from '../../http/problem.ts';
import { routeOf } from '../../http/route-options.ts';
import { acceptableOffers } from '../accept.ts';
import { PlacementError, renderError, type ErrorFormat, type RequestFacts } from '../errors.ts';
import { formatVersion, MAX_VERSION, MIN_VERSION, parseMicroversion } from '../microversion.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** The requested microversion's minor number; -1 until parsed (or when the header was refused). */
    placementMv: number;
    /** True when the request carried no OpenStack-API-Version header for placement. */
    placementMvDefaulted: boolean;
  }
}

/** The Accept header as Placement's requestlog middleware leaves it: absent or "*\/*" means JSON. */
export function effectiveAccept(request: FastifyRequest): string {
  const accept = request.headers.accept;
  return !accept || accept === '*/*' ? 'application/json' : accept;
}

function facts(request: FastifyRequest): RequestFacts {
  const ct = request.headers['content-type'];
  return { method: request.method, accept: effectiveAccept(request), contentType: ct === undefined || ct === '' ? 'None' : ct };
}

function errorFormat(request: FastifyRequest): ErrorFormat {
  const best = acceptableOffers(effectiveAccept(request), ['text/html', 'application/json'])[0];
  return best === 'text/html' ? 'html' : best === 'application/json' ? 'json' : 'plain';
}

function placementErrorFrom(err: unknown): PlacementError {
  if (err instanceof PlacementError) return err;
  const { problem, unexpected, retryAfterSeconds } = classifyError(err);
  // The store unreachable: Placement's shape, the client told when to retry (nothing was acknowledged).
  if (retryAfterSeconds !== undefined) {
    return new PlacementError(problem.status, problem.detail, undefined, {}, { 'retry-after': String(retryAfterSeconds) });
  }
  return new PlacementError(problem.status, unexpected || problem.status >= 500 ? 'An unexpected error occurred; it has been logged.' : problem.detail);
}

/** Sends `err` in Placement's shape for this request. */
function sendPlacementError(request: FastifyRequest, reply: FastifyReply, err: PlacementError): FastifyReply {
  const mv = request.placementMv;
  const { contentType, payload } = renderError(err, facts(request), request.id, mv >= 23, errorFormat(request));
  for (const [k, v] of Object.entries(err.headers)) reply.header(k, v);
  return reply.code(err.status).type(contentType).send(payload);
}

/**
 * Does a request to a path no dialect serves come from a Placement client? It names placement in its
 * OpenStack-API-Version header, or it carries an OpenStack token and names no other service there.
 */
function fromPlacementClient(request: FastifyRequest): boolean {
  return isPlacementClient(request.headers['openstack-api-version'], request.headers['x-auth-token']);
}

function isPlacementClient(version: string | string[] | undefined, token: string | string[] | undefined): boolean {
  if (version !== undefined) return /(^|,)\s*placement\s/i.test(String(version));
  return token !== undefined;
}

/** Hooks, body parsing and the error handler of the Placement scope (register before the routes). */
export function registerPlacementHttp(app: FastifyInstance): void {
  app.decorateRequest('placementMv', -1);
  app.decorateRequest('placementMvDefaulted', false);
  // Callback style, not async: every request through this scope runs them, and a promise each is measurable there.
  app.addHook('onRequest', (request, _reply, done) => {
    // A path no dialect serves reaches the Placement catch-all; only Placement clients get Placement's checks.
    if (routeOf(request).url === '/*' && !fromPlacementClient(request)) return done();
    const header = request.headers['openstack-api-version'];
    request.placementMvDefaulted = header === undefined || !/(^|,)\s*placement\s/i.test(String(header));
    try {
      request.placementMv = parseMicroversion(header);
    } catch (err) {
      request.log.info({ header, supported: `${MIN_VERSION}-${MAX_VERSION}` }, 'placement: refused OpenStack-API-Version header');
      return done(err as Error);
    }
    // handler.py: a body needs a content type.
    const length = request.headers['content-length'];
    if (length !== undefined && length !== '' && Number(length) > 0 && !request.headers['content-type']) {
      return done(new PlacementError(400, 'content-type header required when content-length > 0'));
    }
    done();
  });
  app.addHook('onSend', (request, reply, payload, done) => {
    if (request.placementMv >= 0) {
      reply.header('openstack-api-version', `placement ${formatVersion(request.placementMv)}`);
      reply.header('vary', 'openstack-api-version');
    }
    reply.header('x-openstack-request-id', request.id);
    const type = reply.getHeader('content-type');
    if (reply.statusCode === 204 || payload === undefined || payload === null || payload === '') reply.removeHeader('content-type');
    else if (typeof type === 'string' && type.startsWith('application/json')) reply.header('content-type', 'application/json');
    done(null, payload);
  });
  // Every body is kept as text: the handler checks its content type (415) before parsing it (400).
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string' }, (_request, body, done) => done(null, body));
  app.setErrorHandler((err: unknown, request: FastifyRequest, reply: FastifyReply) => {
    const perr = placementErrorFrom(err);
    if (perr.status === 503 && perr.headers['retry-after'] !== undefined) request.log.warn({ detail: perr.message }, 'request not served: store unavailable');
    else if (perr.status >= 500) request.log.error({ err }, 'unexpected error');
    else request.log.info({ status: perr.status, detail: perr.message }, 'request refused');
    return sendPlacementError(request, reply, perr);
  });
  // Route schemas document; each handler validates with its microversion's schema and builds its body.
  app.setValidatorCompiler(() => (data) => ({ value: data }));
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));
}

/** Placement's routes, in its order, for the Allow header of a 405. */
const ALLOW_ORDER = ['GET', 'PUT', 'POST', 'DELETE'];
const FALLBACK_METHODS = ['GET', 'PUT', 'POST', 'DELETE', 'PATCH', 'OPTIONS'] as const;
const PREFIXES = ['/resource_providers/*', '/traits/*', '/resource_classes/*', '/allocations/*', '/aggregates/*', '/usages/*',
  '/allocation_candidates/*', '/reshaper/*'];

/** Records the routes declared on the scope, for the 405 fallbacks (call before declaring them). */
export function trackRoutes(app: FastifyInstance): Array<{ url: string; method: string }> {
  const declared: Array<{ url: string; method: string }> = [];
  app.addHook('onRoute', (route) => {
    for (const m of [route.method].flat()) declared.push({ url: route.url, method: m });
  });
  return declared;
}

/** Marks the routes that only answer 404/405: the app's 405 logic must not count their methods as served. */
const FALLBACK = { fallback: true } as const;

/**
 * handler.py's routing answers: 405 with Allow for a known path and another method, 404 below Placement's
 * prefixes, and for a path no dialect serves when the client is a Placement client (others get problem+json).
 */
export function registerFallbacks(app: FastifyInstance, declared: ReadonlyArray<{ url: string; method: string }>): void {
  const known = new Map<string, string[]>();
  for (const route of declared) {
    if (route.method === 'HEAD') continue;
    const list = known.get(route.url) ?? [];
    known.set(route.url, [...list, route.method]);
  }
  for (const [url, methods] of known) {
    const allow = [...methods].sort((a, b) => ALLOW_ORDER.indexOf(a) - ALLOW_ORDER.indexOf(b)).join(', ');
    app.route({
      method: FALLBACK_METHODS.filter((m) => !methods.includes(m)), url, schema: { hide: true }, config: FALLBACK,
      handler: async () => {
        throw new PlacementError(405, 'The method specified is not allowed for this resource.', undefined, {}, { allow });
      },
    });
  }
  for (const prefix of PREFIXES) {
    app.route({
      method: [...FALLBACK_METHODS], url: prefix, schema: { hide: true }, config: FALLBACK,
      handler: async () => {
        throw new PlacementError(404, '');
      },
    });
  }
  app.route({
    method: [...FALLBACK_METHODS], url: '/*', schema: { hide: true }, config: FALLBACK,
    handler: async (request, reply) => {
      if (!fromPlacementClient(request)) return reply.callNotFound();
      throw new PlacementError(404, '');
    },
  });
}

const PLACEMENT_PATH = /^\/(resource_providers|traits|resource_classes|allocations|allocation_candidates|usages|reshaper)(\/|\?|$)/;

/**
 * handler.py refuses a Content-Length that is not an integer with its own 400; Node's parser refuses it before
 * Fastify sees the request, so the app's client-error handler asks here first. True when answered.
 */
export function placementClientError(err: { code?: string; rawPacket?: unknown }, socket: Duplex): boolean {
  if (err.code !== 'HPE_INVALID_CONTENT_LENGTH' || !Buffer.isBuffer(err.rawPacket) || !socket.writable) return false;
  const head = err.rawPacket.toString('latin1');
  const [requestLine = '', ...lines] = head.split('\r\n');
  const [method = 'GET', path = '/'] = requestLine.split(' ');
  const header = (name: string) => lines.find((l) => l.toLowerCase().startsWith(`${name}:`))?.slice(name.length + 1).trim();
  const version = header('openstack-api-version');
  if (!PLACEMENT_PATH.test(path) && !isPlacementClient(version, header('x-auth-token'))) return false;
  let mv: number;
  try {
    mv = parseMicroversion(version);
  } catch {
    return false;
  }
  const requestId = `req-${randomUUID()}`;
  const err400 = new PlacementError(400, 'content-length header must be an integer');
  const facts = { method, accept: header('accept') || 'application/json', contentType: header('content-type') || 'None' };
  const { contentType, payload } = renderError(err400, facts, requestId, mv >= 23, 'json');
  socket.write(
    `HTTP/1.1 400 Bad Request\r\nContent-Type: ${contentType}\r\nContent-Length: ${Buffer.byteLength(payload)}\r\n` +
      `openstack-api-version: placement ${formatVersion(mv)}\r\nx-openstack-request-id: ${requestId}\r\nConnection: close\r\n\r\n${payload}`,
  );
  socket.destroy();
  return true;
}
