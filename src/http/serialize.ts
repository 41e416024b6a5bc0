// Large or hot responses skip zod's response encoding: they are built from validated state, and re-checking
// thousands of entries would cost more than the decision. The route's response schema still documents them in
// OpenAPI; this helper only changes how the body is written.
import type { FastifyReply } from 'fastify';

const JSON_TYPE = 'application/json; charset=utf-8';

/** Sends `body` as JSON without validating it against the route's response schema. */
export function sendJson(reply: FastifyReply, body: unknown, status = 200): FastifyReply {
  return reply.code(status).type(JSON_TYPE).serializer(JSON.stringify).send(body);
}
