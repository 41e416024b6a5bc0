// A request's route options, read once: Fastify's routeOptions getter builds a new object (a dozen fields, and a
// lookup of the version constraint) on every read, and one request reads them in several hooks (back-pressure, the
// fixed-path check, the role check, audit, metrics, the decision report, the log controller).
import type { FastifyInstance, FastifyRequest } from 'fastify';

declare module 'fastify' {
  interface FastifyRequest {
    /** The route options once read (routeOf); null before (undefined on a request Fastify refused before routing). */
    berthRoute: FastifyRequest['routeOptions'] | null | undefined;
  }
}

/** Declares the field routeOf keeps them in (before any hook reads them). */
export function registerRouteOptions(app: FastifyInstance): void {
  app.decorateRequest('berthRoute', null);
}

/** The request's route options (Fastify's request.routeOptions), read again only when its route changed. */
export function routeOf(request: FastifyRequest): FastifyRequest['routeOptions'] {
  const held = request.berthRoute;
  // A request changes route once at most: reply.callNotFound() hands it to the not-found handler, whose route has no
  // url (is404 reads that without building anything).
  if (held && (held.url === undefined || !request.is404)) return held;
  return (request.berthRoute = request.routeOptions);
}
