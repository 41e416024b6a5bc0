// What every Placement route module shares: the service, the Berth context, the route declaration with its
// microversion range (version_handler), Accept check (check_accept), content type and body validation
// (require_content, extract_json) and cache headers (1.15+), and the documentation helpers.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { z } from 'zod';
import type { BerthContext } from '../../http/context.ts';
import { acceptableOffers } from '../accept.ts';
import { PlacementError } from '../errors.ts';
import { formatVersion, MAX_VERSION, MIN_VERSION } from '../microversion.ts';
import type { PlacementMetrics } from '../metrics.ts';
import * as S from '../schemas.ts';
import type { PlacementService } from '../service.ts';
import { validateWith } from '../validate.ts';
import { effectiveAccept } from './plugin.ts';

export interface RouteDeps {
  service: PlacementService;
  ctx: BerthContext;
  metrics: PlacementMetrics;
}

/** A Placement route module: declares its routes on the (encapsulated) Placement scope. */
export type PlacementRoutes = (app: FastifyInstance, deps: RouteDeps) => void;

type Handler = (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>;

interface RouteSpec {
  method: 'GET' | 'PUT' | 'POST' | 'DELETE';
  url: string;
  /** The minor microversion the operation appeared in; below it Placement answers `belowStatus` (404). */
  since?: number;
  belowStatus?: 404 | 405;
  /** util.require_content: the body must be JSON (415), checked before the handler looks at anything. */
  json?: boolean | ((mv: number) => boolean);
  schema: Record<string, unknown>;
  handler: Handler;
}

/** Declares a Placement operation. GET operations refuse an Accept header that excludes JSON (406). */
export function route(app: FastifyInstance, spec: RouteSpec): void {
  const since = spec.since ?? 0;
  app.route({
    method: spec.method, url: spec.url, schema: spec.schema,
    handler: async (request, reply) => {
      const mv = request.placementMv;
      if (mv < since) {
        const status = spec.belowStatus ?? 404;
        // Placement's 404 says nothing; a client that sent no version header learns why (clients ignore detail).
        const hint = request.placementMvDefaulted && status === 404
          ? `${spec.method} ${spec.url} needs microversion ${formatVersion(since)} or later; without an OpenStack-API-Version ` +
            `header Placement answers at ${MIN_VERSION} (send e.g. "OpenStack-API-Version: placement ${MAX_VERSION}"; supported ${MIN_VERSION} to ${MAX_VERSION}).`
          : '';
        if (hint) request.log.info({ operation: `${spec.method} ${spec.url}`, since: formatVersion(since) }, 'placement: no microversion header');
        throw new PlacementError(status, hint);
      }
      if (spec.method === 'GET' && acceptableOffers(effectiveAccept(request), ['application/json']).length === 0) {
        throw new PlacementError(406, 'Only application/json is provided');
      }
      if (typeof spec.json === 'function' ? spec.json(mv) : spec.json) requireJson(request);
      return spec.handler(request, reply);
    },
  });
}

/** util.require_content: 415 unless the request says its body is JSON. */
function requireJson(request: FastifyRequest): void {
  const header = request.headers['content-type'];
  const type = header ? header.split(';')[0]!.trim().toLowerCase() : '';
  if (type !== 'application/json') {
    throw new PlacementError(415, `The media type ${type || 'None'} is not supported, use application/json`);
  }
}

/** util.extract_json: 400 unless the body parses and validates against the microversion's schema. */
export function jsonBody<T>(request: FastifyRequest, schema: z.ZodType<T>): T {
  let data: unknown;
  try {
    data = JSON.parse(typeof request.body === 'string' ? request.body : '');
  } catch (err) {
    throw new PlacementError(400, `Malformed JSON: ${(err as Error).message}`);
  }
  return validateWith(schema, data);
}

/** The cache headers Placement sends from 1.15 on. */
export function cacheHeaders(request: FastifyRequest, reply: FastifyReply, now: number): void {
  if (request.placementMv < 15) return;
  reply.header('cache-control', 'no-cache');
  reply.header('last-modified', new Date(now).toUTCString());
}

/** Location headers are absolute, as webob makes them. */
export function location(request: FastifyRequest, path: string): string {
  return `${request.protocol}://${request.host}${path}`;
}

/** Path parameters as strings. */
export function param(request: FastifyRequest, name: string): string {
  return (request.params as Record<string, string>)[name]!;
}

export const errors = {
  400: S.placementErrorResponse('Bad request (Placement error body)'),
  404: S.placementErrorResponse('Not found'),
  409: S.placementErrorResponse('Conflict (generation, capacity or in use)'),
};

/** The OpenAPI entry of a Placement operation: tag, summary, the microversion header. */
export const doc = <T extends object>(summary: string, extra: T) => ({ tags: ['placement'], summary, headers: S.PlacementHeadersSchema, ...extra });

/** A body-less answer (204, or 201 before 1.20). */
export const EMPTY = undefined as never;
