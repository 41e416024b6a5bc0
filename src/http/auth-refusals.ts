// How a refused request is answered, in the route's own shape. problem+json everywhere but on Placement routes,
// where Placement's own answers are reproduced: its 401 is webob's plain HTTPUnauthorized from the auth middleware
// in front of Placement (negotiated by Accept, no microversion headers, not the {"errors": [...]} shape), its 403
// is the handler's policy refusal in the {"errors": [...]} shape ("Policy does not allow X to be performed.").
import type { FastifyReply } from 'fastify';
import { PlacementError } from '../placement/errors.ts';
import { ProblemError } from './problem.ts';
import type { Role, RouteRule } from './roles.ts';

const REALM = 'berth';

/** RFC 6750 challenges: a 401 says how to authenticate, a 403 which role (scope) is missing. */
function challenge(kind: 'missing' | 'invalid' | Role): string {
  if (kind === 'missing') return `Bearer realm="${REALM}"`;
  if (kind === 'invalid') return `Bearer realm="${REALM}", error="invalid_token"`;
  return `Bearer realm="${REALM}", error="insufficient_scope", scope="${kind}"`;
}

const WEBOB_401_EXPLANATION =
  'This server could not verify that you are authorized to access the document you requested. Either you supplied ' +
  'the wrong credentials (e.g., bad password), or your browser does not understand how to supply the credentials required.';

type Offer = 'text/html' | 'application/json';

/**
 * webob's choice between its two offers (text/html first) by the Accept header's q-values; neither acceptable,
 * an empty or an absent header → text/plain.
 */
function webobOffer(accept: string | undefined): Offer | 'text/plain' {
  if (!accept || accept.trim() === '') return 'text/plain';
  const ranges = accept.split(',').map((part) => {
    const [range = '', ...params] = part.trim().split(';');
    const q = params.map((p) => /^\s*q\s*=\s*([0-9.]+)\s*$/i.exec(p)?.[1]).find((v) => v !== undefined);
    return { range: range.trim().toLowerCase(), q: q === undefined ? 1 : Number(q) };
  });
  const qualityOf = (offer: Offer): number => {
    const [type] = offer.split('/');
    let best: { specificity: number; q: number } | undefined;
    for (const r of ranges) {
      const specificity = r.range === offer ? 3 : r.range === `${type}/*` ? 2 : r.range === '*/*' ? 1 : 0;
      if (specificity > 0 && (!best || specificity > best.specificity)) best = { specificity, q: r.q };
    }
    return best?.q ?? 0;
  };
  const offers: Offer[] = ['text/html', 'application/json'];
  const scored = offers.map((o) => ({ o, q: qualityOf(o) })).filter((s) => s.q > 0);
  scored.sort((a, b) => b.q - a.q);
  return scored[0]?.o ?? 'text/plain';
}

/** Placement's 401 (noauth2 and the same middleware position as keystonemiddleware): webob's default rendering. */
function placementUnauthorized(accept: string | undefined): { type: string; body: string } {
  switch (webobOffer(accept)) {
    case 'application/json':
      // Python's json.dumps separators.
      return {
        type: 'application/json',
        body: `{"message": ${JSON.stringify(`${WEBOB_401_EXPLANATION}<br /><br />\n\n\n`)}, "code": "401 Unauthorized", "title": "Unauthorized"}`,
      };
    case 'text/html':
      return {
        type: 'text/html; charset=UTF-8',
        body: '<html>\n <head>\n  <title>401 Unauthorized</title>\n </head>\n <body>\n  <h1>401 Unauthorized</h1>\n  ' +
          `${WEBOB_401_EXPLANATION}<br /><br />\n\n\n\n </body>\n</html>`,
      };
    default:
      return { type: 'text/plain; charset=UTF-8', body: `401 Unauthorized\n\n${WEBOB_401_EXPLANATION}\n\n   ` };
  }
}

export const MISSING_DETAIL = 'This route needs a token: send Authorization: Bearer <token> or X-Auth-Token: <token>.';
export const UNKNOWN_TOKEN_DETAIL = 'The token is not known (mistyped or revoked).';

/** Answers 401. Problem routes get an error to throw; Placement routes are answered here. */
export function unauthorized(reply: FastifyReply, rule: RouteRule, kind: 'missing' | 'invalid', detail: string): Error | undefined {
  reply.header('www-authenticate', challenge(kind));
  if (rule.shape === 'placement') {
    const { type, body } = placementUnauthorized(reply.request.headers.accept);
    // A Buffer, so that Fastify adds no charset to webob's bare application/json.
    void reply.code(401).type(type).send(Buffer.from(body));
    return undefined;
  }
  return new ProblemError(401, 'unauthorized', 'Unauthorized', detail);
}

/** The 403 of a known caller without the role. */
export function forbidden(reply: FastifyReply, rule: RouteRule, role: Role, who: string, held: readonly Role[]): Error {
  reply.header('www-authenticate', challenge(role));
  if (rule.shape === 'placement') {
    return new PlacementError(403, `Policy does not allow ${rule.policy ?? 'this request'} to be performed.`);
  }
  const holds = held.length > 0 ? `holds ${held.join(', ')}` : 'holds no role';
  return new ProblemError(403, 'forbidden', 'Forbidden', `This route requires role ${role}; ${who} ${holds}.`, { required_role: role });
}

export function tooManyFailures(reply: FastifyReply, rule: RouteRule, limit: number, retryAfter: number): Error {
  reply.header('retry-after', String(retryAfter));
  const detail = `More than ${limit} failed authentications from this address within a minute; retry after ${retryAfter} s.`;
  if (rule.shape === 'placement') return new PlacementError(429, detail);
  return new ProblemError(429, 'too-many-failed-authentications', 'Too Many Requests', detail);
}

export function authUnavailable(reply: FastifyReply, rule: RouteRule, detail: string): Error {
  reply.header('retry-after', '5');
  if (rule.shape === 'placement') return new PlacementError(503, detail);
  return new ProblemError(503, 'authentication-unavailable', 'Service Unavailable', detail);
}
