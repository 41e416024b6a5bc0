// The audit trail: one structured log line (msg "audit") per state change — who, what, the target, the outcome
// and the request id — for every request that changes state, refused ones included, and for every token reload.
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { changesState } from './roles.ts';

export interface AuditLine {
  audit: true;
  /** Token name or JWT subject; null when nobody authenticated. */
  who: string | null;
  /** How the caller authenticated: token, jwt, none (authentication off or refused); for reloads what triggered it. */
  via: string;
  /** "PUT /backends/:host", or "tokens.reload". */
  action: string;
  /** Path parameters of the request, or the reloaded file. */
  target: unknown;
  /** The HTTP status, or "ok" / "error" for reloads. */
  outcome: number | string;
  request_id?: string;
  /** Placement's x-openstack-request-id, which its clients see. */
  openstack_request_id?: string;
  [detail: string]: unknown;
}

export function writeAudit(log: FastifyBaseLogger, line: AuditLine, level: 'info' | 'error' = 'info'): void {
  log[level](line, 'audit');
}

export function registerAudit(app: FastifyInstance): void {
  // Callback style, not async: it runs after every answer, and a promise per answer is measurable there.
  app.addHook('onResponse', (request, reply, done) => {
    const { url, config } = request.routeOptions;
    const resolved = config?.berthAccess?.[request.method];
    // Requests that matched no route change nothing.
    if (url === undefined || !resolved || !changesState(resolved.rule, request.method)) return done();
    const principal = request.berthPrincipal;
    const openstackId = reply.getHeader('x-openstack-request-id');
    writeAudit(request.log, {
      audit: true,
      who: principal?.name ?? null,
      via: principal?.via ?? 'none',
      action: `${request.method} ${url}`,
      target: request.params ?? {},
      outcome: reply.statusCode,
      request_id: request.id,
      ...(typeof openstackId === 'string' && openstackId !== '' ? { openstack_request_id: openstackId } : {}),
    });
    done();
  });
}
