// One report per scheduling decision, from one timer stopped when it is decided: its metrics, one log line (the
// request's only line: Fastify's own request lines are off on these routes) and an entry in the console's decision
// ring, as a claim's answer leaves or once a GET's has left; all from what the route knows, never by parsing the answer
// (allocation candidates run to tens of megabytes). A refusal raised before anything was decided (a volume id that
// exists, a claim that kept conflicting) is recorded from its small problem body. When the request changes state (a
// claim, a dry run: every POST here) the one line is also its audit record: it carries audit.ts's fields and no
// separate audit line follows. Those fields keep their audit meaning (outcome is the HTTP status, target the path
// parameters), so the decision's own result and choice are named decision and chosen.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { auditFieldsForOwnLine, type AuditLine } from './audit.ts';
import { routeOf } from './route-options.ts';
import type { BerthContext } from './context.ts';
import type { Dialect } from './decision-log.ts';

/** The routes whose answer is a decision, by "METHOD url" (Fastify's route url). */
const DECISION_ROUTES: Readonly<Record<string, Dialect>> = {
  'POST /volumes/schedule': 'volumes',
  'POST /replicas/schedule': 'replicas',
  'GET /allocation_candidates': 'placement',
};

const dialectOf = (request: FastifyRequest): Dialect | undefined => DECISION_ROUTES[`${request.method} ${routeOf(request).url}`];

/** Fastify's disableRequestLogging: a decision route writes its own one line. */
export const isDecisionRoute = (request: FastifyRequest): boolean => dialectOf(request) !== undefined;

export interface DecisionSummary {
  /** "placed", "dry_run", "no_valid_backend", "candidates", … (the metrics' outcome label). */
  outcome: string;
  /** What was asked, as log fields (e.g. { volume, size }). */
  asked: Record<string, unknown>;
  /** What was chosen: a pool, one node/disk per replica, the best candidate's providers; empty when nothing. */
  targets: string[];
  /** Candidates considered and candidates that passed every filter. */
  candidates: number;
  passed: number;
  /** Rejections per filter name. */
  rejections?: ReadonlyMap<string, number>;
  /** More log fields (the replicas placed, …). */
  logged?: Record<string, unknown>;
  /** Counts the answer carried, for the console (e.g. { returned, total }). */
  counts?: Record<string, number>;
  /** The reason given to the client when nothing fit. */
  detail?: string;
  /** The explain trace the answer carries. */
  explain?: unknown;
}

export interface DecisionReport {
  finish(summary: DecisionSummary): void;
}

interface Finished { summary: DecisionSummary; ms: number }

const finished = new WeakMap<FastifyRequest, Finished>();

/** The decision's clock starts; finish stops it. Its metrics, line and console entry come with the answer (report). */
export function startDecision(request: FastifyRequest): DecisionReport {
  const started = performance.now();
  return {
    finish(summary) {
      finished.set(request, { summary, ms: performance.now() - started });
    },
  };
}

/** Whether the request's decision was reported (its log line will say how it ended). */
export const isDecided = (request: FastifyRequest): boolean => finished.has(request);

type Json = Record<string, unknown>;

/** dry_run as the route's schema left it: a boolean (queryFlag) or the word itself. */
const isTrue = (v: unknown) => v === true || v === 'true';

/** A short digest of what was asked, for the console (the whole body can be large: selectors, existing replicas). */
function askedDigest(dialect: Dialect, request: FastifyRequest): Json {
  if (dialect === 'placement') {
    const at = request.url.indexOf('?');
    const params = new URLSearchParams(at < 0 ? '' : request.url.slice(at + 1));
    return {
      query: [...params].filter(([k]) => k !== 'explain' && k !== 'dry_run').map(([k, v]) => `${k}=${v}`).join('&'),
      microversion: request.headers['openstack-api-version'] ?? null,
    };
  }
  if (dialect === 'volumes') {
    const asked = (request.body ?? {}) as Json;
    const digest: Json = { size: asked.size };
    for (const key of ['id', 'volume_type', 'availability_zone']) if (asked[key] !== undefined) digest[key] = asked[key];
    return digest;
  }
  const asked = (request.body ?? {}) as { volume?: Json; existingReplicas?: unknown[] };
  const v = asked.volume ?? {};
  const digest: Json = { volume: v.name, size: v.size, numberOfReplicas: v.numberOfReplicas };
  for (const key of ['nodeSelector', 'diskSelector']) if (Array.isArray(v[key]) && (v[key] as unknown[]).length > 0) digest[key] = v[key];
  if (v.dataEngine !== undefined && v.dataEngine !== 'v1') digest.dataEngine = v.dataEngine;
  if (asked.existingReplicas?.length) digest.existingReplicas = asked.existingReplicas.length;
  return digest;
}

/** A refusal nothing decided (409 volume exists, conflict): its outcome is the problem type's slug. */
function refusal(payload: unknown): { outcome: string; detail: string; explain?: unknown } | null {
  if (typeof payload !== 'string') return null;
  try {
    const body = JSON.parse(payload) as Json;
    const slug = typeof body.type === 'string' ? body.type.slice(body.type.lastIndexOf('/') + 1) : 'conflict';
    return { outcome: slug.replaceAll('-', '_'), detail: String(body.detail ?? ''), ...(body.explain !== undefined ? { explain: body.explain } : {}) };
  } catch {
    return null;
  }
}

/**
 * A line's request fields, then its audit fields when it is the audit record. Built by assignment, not as a literal
 * that begins with a spread: on Node 20's V8 each property added after such a leading spread costs about 0.5 µs (the
 * decision line took 12 µs to build that way, 0.2 µs this way).
 */
function lineOf(request: FastifyRequest, reply: FastifyReply, elapsedMs: number, audit: AuditLine | undefined): Json {
  const line: Json = { req: request, res: reply, responseTime: elapsedMs };
  return audit ? Object.assign(line, audit) : line;
}

/** The console ring's entry: what every decision has, and what this one carried (record skips what is undefined). */
function recordDecision(ctx: BerthContext, dialect: Dialect, request: FastifyRequest, reply: FastifyReply, outcome: string,
  targets: string[], ms: number, carried: { counts?: Record<string, number>; detail?: string; explain?: unknown }): void {
  ctx.decisions.record({
    dialect, outcome, status: reply.statusCode, dry_run: isTrue((request.query as Json | undefined)?.dry_run),
    request: askedDigest(dialect, request), targets, duration_ms: Math.round(ms * 1000) / 1000,
    counts: carried.counts, detail: carried.detail, explain: carried.explain, request_id: String(request.id),
  });
}

/**
 * The decision's metrics, one line and console entry, from what the route reported (or, undecided, the request line).
 * `elapsedMs`: the answer's time, read as it ended (a deferred report is written later).
 */
function report(ctx: BerthContext, dialect: Dialect, request: FastifyRequest, reply: FastifyReply, payload: unknown, elapsedMs: number): void {
  const decided = finished.get(request);
  const audit = auditFieldsForOwnLine(request, reply);
  if (decided) {
    const { summary } = decided;
    ctx.metrics.observeDecision({
      domain: dialect, outcome: summary.outcome, seconds: decided.ms / 1000, ...(summary.rejections ? { rejections: summary.rejections } : {}),
    });
    const line = lineOf(request, reply, elapsedMs, audit);
    line.domain = dialect;
    line.decision = summary.outcome;
    Object.assign(line, summary.asked);
    line.chosen = dialect === 'volumes' ? (summary.targets[0] ?? null) : summary.targets;
    if (summary.logged) Object.assign(line, summary.logged);
    line.candidates = summary.candidates;
    line.passed = summary.passed;
    line.ms = decided.ms;
    request.log.info(line, 'decision');
    recordDecision(ctx, dialect, request, reply, summary.outcome, summary.targets, decided.ms, summary);
  } else {
    request.log.info(lineOf(request, reply, elapsedMs, audit), 'request completed');
    const refused = reply.statusCode === 409 ? refusal(payload) : null;
    if (refused) recordDecision(ctx, dialect, request, reply, refused.outcome, [], elapsedMs, refused);
  }
}

/** Writes each decision route's one log line and feeds ctx.decisions; added before the domain plugins register. */
export function registerDecisionReports(app: FastifyInstance, ctx: BerthContext): void {
  // Callback style, not async: it runs on every answer, and a promise per answer is measurable there.
  app.addHook('onSend', (request, reply, payload, done) => {
    const dialect = dialectOf(request);
    if (dialect === undefined) return done(null, payload);
    if (request.method === 'GET') {
      // A decision that changes nothing (GET /allocation_candidates) is not audited: its report follows the answer,
      // off the time its client waits (0.15–0.4 ms of an answer on a new connection after an idle pause, measured),
      // and is deferred past the client's next request (deferred.ts). 'close' comes once the answer has left or its
      // connection has gone, so an abandoned answer is told too.
      reply.raw.once('close', () => {
        const elapsedMs = reply.elapsedTime;
        // Only a problem body (a string) is ever read back; an answer's buffers go back to its route meanwhile.
        const kept = typeof payload === 'string' ? payload : undefined;
        ctx.deferred.defer(() => report(ctx, dialect, request, reply, kept, elapsedMs));
      });
      return done(null, payload);
    }
    // A claim or dry run: written as it is answered, since the line is also its audit record. (Before the dialects'
    // own onSend hooks: the one decision route that gets an x-openstack-request-id from such a hook is the GET.)
    report(ctx, dialect, request, reply, payload, reply.elapsedTime);
    done(null, payload);
  });
}
