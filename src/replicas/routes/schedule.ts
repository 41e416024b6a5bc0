// POST /replicas/schedule: place a volume's missing replicas (Longhorn v1.11's replica scheduler) and claim them.
import type { FastifyInstance } from 'fastify';
import type { z } from 'zod';
import { zodApp, type BerthContext } from '../../http/context.ts';
import { startDecision } from '../../http/decision-report.ts';
import { problemResponse, ProblemError } from '../../http/problem.ts';
import type { ReplicaMetrics } from '../metrics.ts';
import type { VolumeSpec } from '../model.ts';
import { failureDetail } from '../scheduler.ts';
import { ScheduleBodySchema, ScheduleQuerySchema, ScheduleResponseSchema } from '../schemas.ts';
import type { ReplicaService, ScheduleOutcome } from '../service.ts';
import { sendJson } from '../../http/serialize.ts';
import { TAGS } from './tags.ts';

type ScheduleBody = z.output<typeof ScheduleBodySchema>;

export function scheduleRoutes(fastify: FastifyInstance, service: ReplicaService, ctx: BerthContext, metrics: ReplicaMetrics): void {
  const app = zodApp(fastify);
  const staleAfterSeconds = ctx.config.stats_stale_after_seconds;

  app.post('/replicas/schedule', {
    schema: {
      tags: TAGS,
      summary: 'Place the missing replicas of a volume onto node disks (Longhorn v1.11 replica scheduler)',
      description:
        'Places numberOfReplicas minus the usable replicas (existingReplicas that are neither failed nor being evicted, plus ' +
        'replicas Berth placed for the volume), one at a time, each seeing the earlier ones. If some cannot be placed: with ' +
        'allow-volume-creation-with-degraded-availability and at least one placed, 200 with `unscheduled`; otherwise 409 ' +
        '(`detail` = Longhorn reason keys sorted and joined with "; "), nothing claimed.',
      querystring: ScheduleQuerySchema,
      body: ScheduleBodySchema,
      response: {
        200: ScheduleResponseSchema,
        400: problemResponse('Invalid request body or query'),
        404: problemResponse('explain_target names a node or disk Berth does not know'),
        409: problemResponse('Not every replica could be placed and degraded availability does not apply (type ends in /replica-scheduling-failure), or the store claim kept conflicting (/conflict); nothing claimed'),
      },
    },
  }, async (request, reply) => {
    const report = startDecision(request);
    const dryRun = request.query.dry_run === 'true';
    const explain = request.query.explain === 'true';
    const body = request.body;
    const { volume, outcome } = await decide(service, body, {
      dryRun, explain, explainTarget: request.query.explain_target, now: ctx.now(), staleAfterSeconds,
      createdBy: request.berthPrincipal?.name ?? null,
    });
    const { result } = outcome;
    const refused = outcome.outcome === 'no_valid_target';
    if (!dryRun) for (const u of result.unscheduled) metrics.failures.inc({ reason: u.reason });
    // What was asked and what was chosen, so an operator can follow one volume through the log.
    const targets = refused ? [] : dryRun ? outcome.proposed : outcome.replicas;
    report.finish({
      outcome: refused ? 'no_valid_target' : dryRun ? 'dry_run' : outcome.outcome,
      asked: { dryRun, volume: volume.name, size: volume.size, numberOfReplicas: volume.numberOfReplicas, existingReplicas: body.existingReplicas.length },
      targets: targets.map((x) => `${x.node}/${x.disk}`),
      logged: {
        replicas: targets.map((x) => ({ ...('name' in x ? { name: x.name } : {}), node: x.node, disk: x.disk, size: x.size })),
        missing: result.missing, unscheduled: result.unscheduled.length,
      },
      candidates: result.candidates, passed: result.passed, rejections: result.rejections,
      ...(refused ? {} : { counts: { placed: targets.length, unscheduled: result.unscheduled.length } }),
      ...(refused || result.unscheduled.length > 0 ? { detail: refused ? failureDetail(result.unscheduled) : result.unscheduled.map((u) => u.reason).join(' | ') } : {}),
      ...(result.trace ? { explain: result.trace } : {}),
    });
    return sendJson(reply, answer(volume, outcome, dryRun));
  });
}

export interface ScheduleFlags {
  dryRun: boolean;
  explain: boolean;
  explainTarget: string | undefined;
  now: number;
  staleAfterSeconds: number;
  createdBy: string | null;
}

/** The decision (and claim) of POST /replicas/schedule; a 404 (explain_target) or 409 (conflict) is thrown as a problem. */
export async function decide(service: ReplicaService, body: ScheduleBody, flags: ScheduleFlags): Promise<{ volume: VolumeSpec; outcome: ScheduleOutcome }> {
  const volume: VolumeSpec = {
    ...body.volume,
    numberOfReplicas: body.volume.numberOfReplicas ?? service.settings['default-replica-count'],
  };
  const target = targetOf(service, flags.explainTarget);
  const outcome = await service.schedule(volume, body.existingReplicas, {
    dryRun: flags.dryRun, explain: flags.explain, target, now: flags.now, staleAfterSeconds: flags.staleAfterSeconds,
    createdBy: flags.createdBy,
  });
  return { volume, outcome };
}

/** The 200 answer of POST /replicas/schedule, or its 409 thrown as a problem. */
export function answer(volume: VolumeSpec, outcome: ScheduleOutcome, dryRun: boolean): z.output<typeof ScheduleResponseSchema> {
  const { result } = outcome;
  if (outcome.outcome === 'no_valid_target') {
    throw new ProblemError(409, 'replica-scheduling-failure', 'Replica scheduling failure', failureDetail(result.unscheduled), {
      volume: volume.name,
      missingReplicas: result.missing,
      placeable: result.placements.length,
      unscheduled: result.unscheduled.map((u) => ({ reason: u.reason })),
      ...(result.trace ? { explain: result.trace } : {}),
      ...(result.targetVerdict ? { explainTarget: result.targetVerdict } : {}),
    });
  }
  return {
    dryRun,
    replicas: dryRun ? outcome.proposed : outcome.replicas,
    ...(result.unscheduled.length > 0 ? { unscheduled: result.unscheduled.map((u) => ({ reason: u.reason })) } : {}),
    // The trace is a typed interface; the schema documents it as an open object.
    ...(result.trace ? { explain: result.trace as unknown as Record<string, unknown> } : {}),
    ...(result.targetVerdict ? { explainTarget: result.targetVerdict as unknown as Record<string, unknown> } : {}),
  };
}

/** explain_target as node and disk; a node or disk Berth does not know is a 404 naming it. */
function targetOf(service: ReplicaService, text: string | undefined): { node: string; disk?: string } | undefined {
  if (text === undefined) return undefined;
  const [node, disk] = text.split('/') as [string, string | undefined];
  const known = service.node(node);
  if (!known) throw new ProblemError(404, 'not-found', 'Not Found', `explain_target ${text}: node ${node} not found`);
  if (disk === undefined) return { node };
  if (!known.disks.some((d) => d.name === disk)) {
    throw new ProblemError(404, 'not-found', 'Not Found', `explain_target ${text}: node ${node} has no disk ${disk}`);
  }
  return { node, disk };
}
