// RFC 9457 problem details: one classification of every error, rendered as application/problem+json.
// Routes in another dialect (Placement) reuse classifyError and render their own shape.
import type { Duplex } from 'node:stream';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { FieldError } from '../domain-errors.ts';
import { StoreUnavailableError } from '../store/store.ts';
import { isDecided } from './decision-report.ts';
import { describeDomainError } from './errors.ts';
import { routeOf } from './route-options.ts';

const PROBLEM_CONTENT_TYPE = 'application/problem+json';
const TYPE_BASE = '/problems/';

export type { FieldError };

export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  errors?: FieldError[];
  [extension: string]: unknown;
}

/** Thrown by domain code to answer with a specific problem (e.g. 409 no-valid-backend). */
export class ProblemError extends Error {
  readonly status: number;
  readonly slug: string;
  readonly title: string;
  readonly extensions: Record<string, unknown>;
  constructor(status: number, slug: string, title: string, detail: string, extensions: Record<string, unknown> = {}) {
    super(detail);
    this.name = 'ProblemError';
    this.status = status;
    this.slug = slug;
    this.title = title;
    this.extensions = extensions;
  }
}

/** The problem+json body, for OpenAPI documentation of error responses. */
const ProblemSchema = z
  .object({
    type: z.string(),
    title: z.string(),
    status: z.number().int(),
    detail: z.string(),
    errors: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
  })
  .loose()
  .meta({ id: 'Problem', description: 'RFC 9457 problem details (application/problem+json)' });

/** An OpenAPI response entry documenting a problem+json answer. */
export function problemResponse(description: string) {
  return { description, content: { [PROBLEM_CONTENT_TYPE]: { schema: ProblemSchema } } };
}

function problem(status: number, slug: string, title: string, detail: string, extra: Record<string, unknown> = {}): Problem {
  return { type: TYPE_BASE + slug, title, status, detail, ...extra };
}

function joinPath(context: string | undefined, segments: ReadonlyArray<PropertyKey>): string {
  const parts = segments.map(String);
  return [context, ...parts].filter((p) => p !== undefined && p !== '').join('.');
}

/** The 400 a route answers when its schema refuses part of the request (context: body, querystring, …). */
export function validationProblem(context: string | undefined, issues: ReadonlyArray<{ path: ReadonlyArray<PropertyKey>; message: string }>): Problem {
  const errors: FieldError[] = issues.map((issue) => ({ path: joinPath(context, issue.path), message: issue.message }));
  const detail = errors.map((e) => `${e.path || context || 'request'}: ${e.message}`).join('; ');
  return problem(400, 'validation', 'Invalid request', detail, { errors });
}

/** Maps any error Fastify hands us to the problem it means. `log` tells whether the error is unexpected. */
export function classifyError(err: unknown): { problem: Problem; unexpected: boolean; retryAfterSeconds?: number } {
  if (err instanceof StoreUnavailableError) {
    // The write's outcome is unknown to this instance (the change feed will tell); the client retries.
    return {
      problem: problem(503, 'store-unavailable', 'Service Unavailable',
        `The store is unreachable (${err.message}); nothing was acknowledged. Retry after the time in Retry-After.`),
      unexpected: false,
      retryAfterSeconds: err.retryAfterSeconds,
    };
  }
  if (err instanceof ProblemError) {
    return { problem: problem(err.status, err.slug, err.title, err.message, err.extensions), unexpected: false };
  }
  const domain = describeDomainError(err);
  if (domain) return { problem: problem(domain.status, domain.slug, domain.title, domain.detail, domain.extensions), unexpected: false };
  if (hasZodFastifySchemaValidationErrors(err)) {
    const context = (err as FastifyError & { validationContext?: string }).validationContext;
    const issues = err.validation.map((v) => ({
      path: (v.params as { issue?: { path?: PropertyKey[] } }).issue?.path ?? v.instancePath.split('/').filter(Boolean),
      message: v.message ?? 'invalid',
    }));
    return { problem: validationProblem(context, issues), unexpected: false };
  }
  const fe = err as Partial<FastifyError> & { status?: number };
  const status = fe.statusCode ?? fe.status;
  switch (fe.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return { problem: problem(413, 'payload-too-large', 'Payload Too Large', 'The request body is larger than the configured limit.'), unexpected: false };
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return { problem: problem(415, 'unsupported-media-type', 'Unsupported Media Type', `${fe.message ?? 'Unsupported content type'}; send application/json.`), unexpected: false };
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return { problem: problem(400, 'malformed-body', 'Malformed body', 'The body is empty but Content-Type is application/json.'), unexpected: false };
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return { problem: problem(400, 'malformed-body', 'Malformed body', `The body is not valid JSON: ${fe.message}`), unexpected: false };
    case 'FST_ERR_BAD_URL':
      return { problem: problem(400, 'bad-url', 'Bad URL', 'The URL is not valid (bad percent-encoding).'), unexpected: false };
    case 'FST_ERR_ASYNC_CONSTRAINT':
      return { problem: problem(400, 'bad-request', 'Bad Request', fe.message ?? 'Bad request'), unexpected: false };
    default:
      break;
  }
  if (err instanceof SyntaxError && status === 400) {
    return { problem: problem(400, 'malformed-body', 'Malformed body', `The body is not valid JSON: ${err.message}`), unexpected: false };
  }
  if (typeof status === 'number' && status >= 400 && status < 500) {
    return { problem: problem(status, 'client-error', fe.name ?? 'Client Error', fe.message ?? 'Client error'), unexpected: false };
  }
  return {
    problem: problem(500, 'internal', 'Internal Server Error', 'An unexpected error occurred; it has been logged.'),
    unexpected: true,
  };
}

function sendProblem(reply: FastifyReply, p: Problem): FastifyReply {
  return reply.code(p.status).type(PROBLEM_CONTENT_TYPE).send(p);
}

function problemErrorHandler(err: unknown, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const { problem: p, unexpected, retryAfterSeconds } = classifyError(err);
  if (unexpected) request.log.error({ err }, 'unexpected error');
  else if (p.status >= 500) request.log.warn({ status: p.status, detail: p.detail }, 'request not served');
  // A refusal that was decided (nothing fits) is told by its decision line.
  else if (!isDecided(request)) request.log.info({ status: p.status, detail: p.detail }, 'request refused');
  if (retryAfterSeconds !== undefined) reply.header('retry-after', String(retryAfterSeconds));
  return sendProblem(reply, p);
}

/** Fastify's frameworkErrors hook (bad URL encoding and the like happen before routing). */
export function frameworkErrorHandler(err: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  problemErrorHandler(err, request, reply);
}

/**
 * Errors Node's HTTP parser raises before Fastify sees a request (request timeout, oversized headers, garbage):
 * answered as problem+json on the raw socket, then the connection is closed.
 */
export function clientErrorHandler(err: NodeJS.ErrnoException, socket: Duplex): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  let p: Problem;
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    p = problem(408, 'request-timeout', 'Request Timeout', 'The request did not arrive completely within the configured time.');
  } else if (err.code === 'HPE_HEADER_OVERFLOW') {
    p = problem(431, 'headers-too-large', 'Request Header Fields Too Large', 'The request headers are larger than allowed.');
  } else {
    p = problem(400, 'bad-request', 'Bad Request', 'The request is not valid HTTP.');
  }
  if (socket.writable) {
    const body = JSON.stringify(p);
    socket.write(
      `HTTP/1.1 ${p.status} ${p.title}\r\nContent-Type: ${PROBLEM_CONTENT_TYPE}\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}

const METHOD_ORDER = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];
const byMethodOrder = (a: string, b: string) => (METHOD_ORDER.indexOf(a) - METHOD_ORDER.indexOf(b)) || (a < b ? -1 : 1);

/** The routes Fastify knows, by path, to tell a wrong method (405 with Allow) from a path that does not exist (404). */
class RouteTable {
  readonly #fixed = new Map<string, Set<string>>();
  readonly #patterns: Array<{ url: string; re: RegExp; methods: Set<string> }> = [];

  static isPattern(url: string): boolean {
    return url.includes(':') || url.includes('*');
  }

  add(methods: string | string[], url: string): void {
    let set: Set<string> | undefined;
    if (!RouteTable.isPattern(url)) {
      set = this.#fixed.get(url);
      if (!set) this.#fixed.set(url, (set = new Set()));
    } else {
      set = this.#patterns.find((p) => p.url === url)?.methods;
      if (!set) {
        // A segment with a parameter matches one segment; '*' matches the rest of the path.
        const body = url.split('/').map((seg) => (seg === '*' ? '.*' : seg.includes(':') ? '[^/]+' : seg.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))).join('/');
        this.#patterns.push({ url, re: new RegExp(`^${body.replace(/\/\.\*$/, '(?:/.*)?')}$`), methods: (set = new Set()) });
      }
    }
    for (const m of [methods].flat()) set.add(m.toUpperCase());
  }

  /** The methods of the fixed route at exactly this path, if there is one. */
  fixedMethods(path: string): string[] | undefined {
    const set = this.#fixed.get(path);
    return set ? [...set].sort(byMethodOrder) : undefined;
  }

  /** Every method some route answers on this path. */
  methodsFor(path: string): string[] {
    const all = new Set(this.#fixed.get(path));
    for (const p of this.#patterns) if (p.re.test(path)) for (const m of p.methods) all.add(m);
    return [...all].sort(byMethodOrder);
  }
}

function methodNotAllowed(reply: FastifyReply, method: string, path: string, allowed: string[]): FastifyReply {
  reply.header('allow', allowed.join(', '));
  return sendProblem(reply, problem(405, 'method-not-allowed', 'Method Not Allowed',
    `${method} is not allowed on ${path}; use ${allowed.join(', ')}.`, { allow: allowed }));
}

export function registerProblemHandlers(app: FastifyInstance): void {
  const routes = new RouteTable();
  // Routes that only answer 404/405 for a dialect (config.fallback) serve no method.
  app.addHook('onRoute', (route) => {
    if (!(route.config as { fallback?: boolean } | undefined)?.fallback) routes.add(route.method, route.url);
  });
  app.setErrorHandler(problemErrorHandler);
  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0]!;
    const allowed = routes.methodsFor(path);
    if (allowed.length > 0) return methodNotAllowed(reply, request.method, path, allowed);
    return sendProblem(reply, problem(404, 'not-found', 'Not Found', `No route ${request.method} ${path}`));
  });
  // A fixed path names its own resource: GET /volumes/schedule is the scheduling route asked with the wrong method,
  // not a volume called "schedule" (which the parametric GET /volumes/:id would otherwise look up).
  app.addHook('onRequest', (request, reply, done) => {
    const url = routeOf(request).url;
    if (url === undefined || !RouteTable.isPattern(url)) return done();
    const path = request.url.split('?')[0]!;
    const fixed = routes.fixedMethods(path);
    if (fixed && !fixed.includes(request.method)) return void methodNotAllowed(reply, request.method, path, fixed);
    done();
  });
}
