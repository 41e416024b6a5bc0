// The Placement scope's HTTP behaviour: microversion and request id on every request, Placement's headers and
// error shape on every answer, and the fallbacks for wrong methods (405) and unknown sub-paths (404).
import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { classifyError } from '../../http/problem.ts';
import { badRequest, errorBody, notFound, PlacementError } from '../errors.ts';
import { formatVersion, parseMicroversion } from '../microversion.ts';

declare module 'fastify' {
  interface FastifyRequest {
    placementMv: number;
    placementRequestId: string;
  }
}

function placementErrorFrom(err: unknown): PlacementError {
  if (err instanceof PlacementError) return err;
  const { problem } = classifyError(err);
  if (problem.type.endsWith('/validation')) return badRequest(`JSON does not validate: ${problem.detail}`);
  if (problem.type.endsWith('/malformed-body')) return badRequest(`Malformed JSON: ${problem.detail}`);
  if (problem.status === 415) {
    return new PlacementError(415, 'The media type is not supported, use application/json');
  }
  return new PlacementError(problem.status, problem.detail);
}

/** Hooks, body parsing and the error handler of the Placement scope (register before the routes). */
export function registerPlacementHttp(app: FastifyInstance): void {
  app.decorateRequest('placementMv', 0);
  app.decorateRequest('placementRequestId', '');
  app.addHook('onRequest', async (request) => {
    request.placementRequestId = `req-${randomUUID()}`;
    request.placementMv = parseMicroversion(request.headers['openstack-api-version']);
  });
  app.addHook('onSend', async (request, reply, payload) => {
    reply.header('openstack-api-version', `placement ${formatVersion(request.placementMv ?? 0)}`);
    reply.header('vary', 'openstack-api-version');
    reply.header('x-openstack-request-id', request.placementRequestId);
    return payload;
  });
  // Placement accepts an empty body on body-less routes (PUT /traits/{name}) whatever the content type says.
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    const text = body as string;
    if (text.trim() === '') return done(null, undefined);
    try {
      done(null, JSON.parse(text));
    } catch (e) {
      done(badRequest(`Malformed JSON: ${(e as Error).message}`), undefined);
    }
  });
  app.setErrorHandler((err: unknown, request: FastifyRequest, reply: FastifyReply) => {
    const perr = placementErrorFrom(err);
    if (perr.status >= 500) request.log.error({ err }, 'unexpected error');
    else request.log.info({ status: perr.status, detail: perr.message }, 'request refused');
    const requestId = request.placementRequestId || `req-${randomUUID()}`;
    const mv = Number.isFinite(request.placementMv) ? request.placementMv : 0;
    return reply.code(perr.status).type('application/json').send(errorBody(perr, requestId, mv >= 23));
  });
  // Bodies are built by the handlers; serialise them directly (the response schemas document, not re-validate).
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));
}

const METHODS = ['GET', 'PUT', 'POST', 'DELETE', 'PATCH'] as const;
const PREFIXES = ['/resource_providers/*', '/traits/*', '/resource_classes/*', '/allocations/*', '/aggregates/*'];

/** Records the routes declared on the scope, for the 405 fallbacks (call before declaring them). */
export function trackRoutes(app: FastifyInstance): Array<{ url: string; method: string }> {
  const declared: Array<{ url: string; method: string }> = [];
  app.addHook('onRoute', (route) => {
    for (const m of [route.method].flat()) declared.push({ url: route.url, method: m });
  });
  return declared;
}

/** Placement answers these in its own shape: 405 for a known path with another method, 404 below its prefixes. */
export function registerFallbacks(app: FastifyInstance, declared: ReadonlyArray<{ url: string; method: string }>): void {
  const known: Record<string, string[]> = {};
  for (const route of declared) (known[route.url] ??= []).push(route.method);
  for (const [url, methods] of Object.entries(known)) {
    const others = METHODS.filter((m) => !methods.includes(m) && !(m === 'GET' && methods.includes('HEAD')));
    if (others.length === 0) continue;
    app.route({
      method: [...others], url, schema: { hide: true },
      handler: async (request, reply) => {
        const err = new PlacementError(405, 'The method specified is not allowed for this resource.');
        return reply.code(405).header('allow', methods.filter((m) => m !== 'HEAD').join(', ')).type('application/json')
          .send(errorBody(err, request.placementRequestId, request.placementMv >= 23) as never);
      },
    });
  }
  for (const prefix of PREFIXES) {
    app.route({
      method: [...METHODS], url: prefix, schema: { hide: true },
      handler: async () => {
        throw notFound('');
      },
    });
  }
}
