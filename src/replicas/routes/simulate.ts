// POST /replicas/simulate: what-if steps (schedule, delete) against a copy of the state, under hypothetical
// settings, each answered as the real route would answer it; the live state, its generations and the store stay as
// they were.
import type { FastifyInstance } from 'fastify';
import { DomainError } from '../../domain-errors.ts';
import { zodApp, type BerthContext } from '../../http/context.ts';
import { classifyError, problemResponse, ProblemError } from '../../http/problem.ts';
import { balanceScore } from '../balance.ts';
import { SIMULATION_BUDGET_MS, SIMULATION_MAX_STEPS } from '../../planning.ts';
import { SimulateBodySchema, SimulateResponseSchema } from '../schemas.ts';
import type { ReplicaService } from '../service.ts';
import type { ReplicaSettings } from '../settings.ts';
import { usableStorage } from '../space.ts';
import { answer, decide } from './schedule.ts';
import { sendJson } from '../../http/serialize.ts';
import { TAGS } from './tags.ts';

export function simulateRoutes(fastify: FastifyInstance, service: ReplicaService, ctx: BerthContext): void {
  const app = zodApp(fastify);
  const staleAfterSeconds = ctx.config.stats_stale_after_seconds;

  app.post('/replicas/simulate', {
    schema: {
      tags: TAGS,
      summary: 'What if: run schedule and delete steps against a copy of the state, optionally under other settings',
      description: 'Each step is answered with the status and body the real route would give (POST /replicas/schedule, ' +
        'DELETE /replicas/{name}; a delete that names a volume deletes its replicas). `final` has every disk\'s figures ' +
        'and the balance score after the last step. Nothing changes: no claim, no store write. More than 10,000 steps: ' +
        '413; longer than 5 s: 422.',
      body: SimulateBodySchema,
      response: {
        200: SimulateResponseSchema,
        400: problemResponse('Invalid step or setting (named); nothing run'),
        413: problemResponse('More than 10,000 steps (type …/simulation-too-large)'),
        422: problemResponse('The simulation ran longer than 5 s (type …/simulation-over-budget)'),
      },
    },
  }, async (request, reply) => {
    const started = ctx.now();
    const timer = process.hrtime.bigint();
    const { steps, settings } = request.body;
    const refuse = (outcome: string, err: ProblemError): never => {
      ctx.metrics.simulations.inc({ domain: 'replicas', outcome });
      throw err;
    };
    if (steps.length > SIMULATION_MAX_STEPS) {
      refuse('too_many_steps', new ProblemError(413, 'simulation-too-large', 'Payload Too Large',
        `${steps.length} steps: a simulation takes at most ${SIMULATION_MAX_STEPS}`));
    }
    const copy = await service.fork({ ...service.settings, ...(settings as Partial<ReplicaSettings> | undefined) });
    const answers: Array<{ status: number; body: unknown }> = [];
    for (const step of steps) {
      answers.push(await run(copy, step, ctx.now(), staleAfterSeconds, request.berthPrincipal?.name ?? null));
      if (ctx.now() - started > SIMULATION_BUDGET_MS) {
        refuse('over_time_budget', new ProblemError(422, 'simulation-over-budget', 'Simulation over budget',
          `the simulation ran longer than ${SIMULATION_BUDGET_MS / 1000} s (stopped after ${answers.length} of ${steps.length} steps)`));
      }
    }
    const disks = copy.nodes.flatMap((n) => n.disks.map((d) => ({
      node: n.name, disk: d.name, storageMaximum: d.storageMaximum, storageAvailable: d.storageAvailable,
      storageReserved: d.storageReserved, storageScheduled: d.storageScheduled, usable: usableStorage(d),
    })));
    ctx.metrics.simulations.inc({ domain: 'replicas', outcome: 'completed' });
    ctx.metrics.simulationDuration.observe({ domain: 'replicas' }, Number(process.hrtime.bigint() - timer) / 1e9);
    return sendJson(reply, { steps: answers, final: { disks, balanceScore: balanceScore(disks.map((d) => d.usable)) } });
  });
}

type Step = ReturnType<typeof SimulateBodySchema.parse>['steps'][number];

/** One step as the real route answers it: its status and body (a problem's body for a refusal). */
async function run(copy: ReplicaService, step: Step, now: number, staleAfterSeconds: number, createdBy: string | null): Promise<{ status: number; body: unknown }> {
  try {
    if ('schedule' in step) {
      const { volume, outcome } = await decide(copy, step.schedule, {
        dryRun: step.dry_run, explain: step.explain, explainTarget: undefined, now, staleAfterSeconds, createdBy,
      });
      return { status: 200, body: answer(volume, outcome, step.dry_run) };
    }
    const name = step.delete;
    if (copy.replica(name)) await copy.deleteReplica(name);
    else {
      const ofVolume = copy.replicas(name);
      if (ofVolume.length === 0) throw new ProblemError(404, 'not-found', 'Not Found', `replica ${name} not found`);
      for (const r of ofVolume) await copy.deleteReplica(r.name);
    }
    return { status: 204, body: null };
  } catch (err) {
    if (!(err instanceof ProblemError) && !(err instanceof DomainError)) throw err;
    const { problem } = classifyError(err);
    return { status: problem.status, body: problem };
  }
}
