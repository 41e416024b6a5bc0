// The audit trail: one structured log line with the audit fields (audit: true) per state change — who, what, the
// target, the outcome and the request id — for every request that changes state, refused ones included, and for
// every token reload. A line of its own (msg "audit"), except where the request writes one line anyway: a decision
// route's one line (decision-report.ts) carries the fields instead, so that a claim is one line, not two.
import type { FastifyBaseLogger, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { changesState } from './roles.ts';
import { routeOf } from './route-options.ts';

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

/** The audit fields of a request as answered; undefined when it changes nothing (reads, planning, no route). */
function auditOf(request: FastifyRequest, reply: FastifyReply): AuditLine | undefined {
  const { url, config } = routeOf(request);
  const resolved = config?.berthAccess?.[request.method];
  if (url === undefined || !resolved || !changesState(resolved.rule, request.method)) return undefined;
  const principal = request.berthPrincipal;
  const openstackId = reply.getHeader('x-openstack-request-id');
  const line: AuditLine = {
    audit: true,
    who: principal?.name ?? null,
    via: principal?.via ?? 'none',
    action: `${request.method} ${url}`,
    target: request.params ?? {},
    outcome: reply.statusCode,
    request_id: request.id,
  };
  if (typeof openstackId === 'string' && openstackId !== '') line.openstack_request_id = openstackId;
  return line;
}

/** Requests whose own line carried their audit fields: the onResponse hook writes no second line for them. */
const carried = new WeakSet<FastifyRequest>();

/**
 * The audit fields for the one line a request writes itself, as it is answered (status and headers set); undefined
 * when the request changes nothing. Once they are handed out the request gets no separate audit line.
 */
export function auditFieldsForOwnLine(request: FastifyRequest, reply: FastifyReply): AuditLine | undefined {
  const line = auditOf(request, reply);
  if (line) carried.add(request);
  return line;
}

export function registerAudit(app: FastifyInstance): void {
  // Callback style, not async: it runs after every answer, and a promise per answer is measurable there.
  app.addHook('onResponse', (request, reply, done) => {
    if (carried.has(request)) return done();
    const line = auditOf(request, reply);
    if (line) writeAudit(request.log, line);
    done();
  });
}
