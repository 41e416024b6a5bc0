// What every Placement route module shares: the service, the Berth context, the documentation helpers.
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { BerthContext } from '../../http/context.ts';
import type { PlacementMetrics } from '../metrics.ts';
import * as S from '../schemas.ts';
import type { PlacementService } from '../service.ts';

export interface RouteDeps {
  service: PlacementService;
  ctx: BerthContext;
  metrics: PlacementMetrics;
}

/** A Placement route module: declares its routes on the (encapsulated) Placement scope. */
export type PlacementRoutes = (app: FastifyInstance, deps: RouteDeps) => void;

/** The scope with zod type inference for params, bodies and queries. */
export const withZod = (app: FastifyInstance) => app.withTypeProvider<ZodTypeProvider>();

export const errors = {
  400: S.placementErrorResponse('Bad request (Placement error body)'),
  404: S.placementErrorResponse('Not found'),
  409: S.placementErrorResponse('Conflict (generation, capacity or in use)'),
};

/** The OpenAPI entry of a Placement operation: tag, summary, the microversion header. */
export const doc = <T extends object>(summary: string, extra: T) => ({ tags: ['placement'], summary, headers: S.PlacementHeadersSchema, ...extra });

/** A body-less answer (204, or 201 before 1.20). */
export const EMPTY = undefined as never;
