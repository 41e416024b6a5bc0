// Request ids: every request gets one, every log line of the request carries it (Fastify's child logger labels
// them reqId), and the response echoes it. A caller's id is honoured when it is safe to write into a log line.
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { FastifyInstance } from 'fastify';

/** Headers a caller may send its id in, first match wins: the common one, then Placement's (OpenStack's). */
const REQUEST_ID_HEADERS = ['x-request-id', 'x-openstack-request-id'] as const;

/** At most 128 characters, letters, digits and . _ : - (a UUID, req-<uuid>, a trace id): nothing to inject. */
const SAFE_ID = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;

/** Placement's format, so Placement answers carry an id its clients expect. */
const newRequestId = (): string => `req-${randomUUID()}`;

/** Fastify's genReqId: the caller's id if it is safe, otherwise a new one. */
export function requestIdOf(req: IncomingMessage): string {
  for (const name of REQUEST_ID_HEADERS) {
    const value = req.headers[name];
    if (typeof value === 'string' && SAFE_ID.test(value)) return value;
  }
  return newRequestId();
}

export function registerRequestId(app: FastifyInstance): void {
  app.addHook('onRequest', (request, _reply, done) => {
    const sent = REQUEST_ID_HEADERS.filter((name) => request.headers[name] !== undefined);
    if (sent.length > 0 && !sent.some((name) => request.headers[name] === request.id)) {
      // Only the lengths are logged: the values are what was judged unsafe to log.
      const lengths = Object.fromEntries(sent.map((name) => [name, String(request.headers[name]).length]));
      request.log.info({ refusedRequestIdLengths: lengths }, 'request id refused (1–128 of A-Z a-z 0-9 . _ : -); using a new one');
    }
    done();
  });
  app.addHook('onSend', (request, reply, payload, done) => {
    reply.header('x-request-id', request.id);
    done(null, payload);
  });
}
