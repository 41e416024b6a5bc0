// POST /volumes/simulate: "what if these volumes arrive, those go, and the ratio were 2?" — the steps run in order on
// a copy of the current state (under hypothetical settings if given), each answered as the real route would answer
// it; nothing live changes and nothing is written to the store. Bounded in steps (413) and in time (422).
import type { FastifyInstance } from 'fastify';
import { zodApp, type BerthContext } from '../../http/context.ts';
import { classifyError, ProblemError, problemResponse, validationProblem } from '../../http/problem.ts';
import { sendJson } from '../../http/serialize.ts';
import { SIMULATION_BUDGET_MS, SIMULATION_MAX_STEPS } from '../../planning.ts';
import {
  ScheduleBodySchema, VolumeParamsSchema, SimulateBodySchema, SimulateResponseSchema,
} from '../schemas.ts';
import type { VolumesService } from '../service.ts';
import { VolumesSettingsPatch } from '../settings.ts';
import { TAGS } from './tags.ts';

export interface SimulateOptions {
  /** The time a simulation may take, in ms of `now` (injectable: tests advance their clock). */
  budgetMs?: number;
}

export function simulateRoutes(fastify: FastifyInstance, service: VolumesService, ctx: BerthContext, options: SimulateOptions = {}): void {
  const app = zodApp(fastify);
  const budgetMs = options.budgetMs ?? SIMULATION_BUDGET_MS;
  const count = (outcome: string) => ctx.metrics.simulations.inc({ domain: 'volumes', outcome });

  app.post('/volumes/simulate', {
    schema: {
      tags: TAGS,
      summary: 'Run schedule and delete steps on a copy of the current state, as the real routes would (nothing changes)',
      description: 'Each step is {"schedule": <the body of POST /volumes/schedule>} (optionally "explain": true) or ' +
        '{"delete": "<volume id>"}, answered with the status and body the real route would give at that point. ' +
        '`settings` are hypothetical settings for the copy. `final` has every pool\'s figures after the last step. ' +
        `At most ${SIMULATION_MAX_STEPS} steps (413 simulation-too-large) and ${SIMULATION_BUDGET_MS / 1000} s ` +
        '(422 simulation-over-budget).',
      body: SimulateBodySchema,
      response: {
        200: SimulateResponseSchema,
        400: problemResponse('Invalid request or settings (nothing ran)'),
        413: problemResponse('More steps than a simulation takes'),
        422: problemResponse('The simulation ran out of time (nothing changed either way)'),
      },
    },
  }, async (request, reply) => {
    const { steps, settings: patch } = request.body;
    if (steps.length > SIMULATION_MAX_STEPS) {
      count('too_many_steps');
      throw new ProblemError(413, 'simulation-too-large', 'Simulation too large',
        `A simulation takes at most ${SIMULATION_MAX_STEPS} steps; this one has ${steps.length}`, { max_steps: SIMULATION_MAX_STEPS });
    }
    let settings = service.settings;
    if (patch !== undefined) {
      const parsed = VolumesSettingsPatch.safeParse(patch);
      if (!parsed.success) {
        count('invalid');
        throw validationProblemError('body.settings', parsed.error.issues);
      }
      settings = { ...settings, ...parsed.data };
    }
    const started = ctx.now();
    const timer = ctx.metrics.simulationDuration.startTimer({ domain: 'volumes' });
    const copy = service.simulation(settings);
    const answers: Array<{ status: number; body: unknown }> = [];
    for (const step of steps) {
      if (ctx.now() - started > budgetMs) {
        timer();
        count('over_time_budget');
        throw new ProblemError(422, 'simulation-over-budget', 'Simulation over budget',
          `The simulation ran longer than ${budgetMs / 1000} s after ${answers.length} of ${steps.length} steps; nothing changed`,
          { steps_done: answers.length });
      }
      answers.push(await ('delete' in step ? deleteStep(copy, step.delete) : scheduleStep(copy, step.schedule, step.explain ?? false)));
    }
    timer();
    count('completed');
    return sendJson(reply, { steps: answers, final: { pools: copy.poolFigures() } });
  });
}

function validationProblemError(context: string, issues: ReadonlyArray<{ path: ReadonlyArray<PropertyKey>; message: string }>): ProblemError {
  const p = validationProblem(context, issues);
  const { type: _type, title, status, detail, ...extensions } = p;
  return new ProblemError(status, 'validation', title, detail, extensions);
}

/** As POST /volumes/schedule answers: the body validated as the route validates it, then the decision and claim. */
async function scheduleStep(copy: VolumesService, body: unknown, explain: boolean): Promise<{ status: number; body: unknown }> {
  const parsed = ScheduleBodySchema.safeParse(body);
  if (!parsed.success) return { status: 400, body: validationProblem('body', parsed.error.issues) };
  try {
    const result = await copy.schedule(parsed.data, { dryRun: false, explain, createdBy: null });
    if (result.error) throw result.error;
    return { status: 200, body: result.answer };
  } catch (err) {
    return problemAnswer(err);
  }
}

/** As DELETE /volumes/{id} answers. */
async function deleteStep(copy: VolumesService, id: string): Promise<{ status: number; body: unknown }> {
  const parsed = VolumeParamsSchema.safeParse({ id });
  if (!parsed.success) return { status: 400, body: validationProblem('params', parsed.error.issues) };
  try {
    await copy.deleteVolume(parsed.data.id);
    return { status: 204, body: null };
  } catch (err) {
    return problemAnswer(err);
  }
}

function problemAnswer(err: unknown): { status: number; body: unknown } {
  const { problem, unexpected } = classifyError(err);
  if (unexpected) throw err;
  return { status: problem.status, body: problem };
}
