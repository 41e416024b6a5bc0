// GET/PUT /settings/{dialect} and GET /settings/{dialect}/history: each dialect's runtime settings (src/settings.ts),
// registered by the dialect's plugin into ctx.settings. A PUT takes any subset; If-Match (the generation, as the
// ETag says it) makes it conditional (412 when it changed).
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { DomainError } from '../domain-errors.ts';
import { KIND_SETTINGS, type DialectSettings, type SettingsDialect } from '../settings.ts';
import type { FollowedView } from '../store/follow.ts';
import { zodApp, type BerthContext } from './context.ts';
import { problemResponse } from './problem.ts';

type AnySettings = DialectSettings<Record<string, unknown>>;

/** The dialects' settings, registered by each dialect plugin as it starts. */
export class SettingsRegistry {
  readonly #byDialect = new Map<SettingsDialect, AnySettings>();

  register<T extends Record<string, unknown>>(settings: DialectSettings<T>): void {
    this.#byDialect.set(settings.dialect, settings as unknown as AnySettings);
  }

  /**
   * The registered settings as a followed view of the store's settings records: another instance's change reaches
   * this one through the change feed (each DialectSettings ignores what is not newer than what it holds).
   */
  followedView(): FollowedView {
    const take = (key: string, value: unknown, generation: number) => {
      if (value !== null) this.#byDialect.get(key as SettingsDialect)?.apply({ key, value: value as never, generation });
    };
    return {
      reset: (records) => {
        for (const r of records.get(KIND_SETTINGS) ?? []) take(r.key, r.value, r.generation);
      },
      apply: (_kind, key, value, generation) => take(key, value, generation),
    };
  }

  get(dialect: string): AnySettings {
    const found = this.#byDialect.get(dialect as SettingsDialect);
    if (!found) throw new DomainError('NOT_FOUND', `No settings for ${dialect}: the dialects are volumes, placement and replicas`);
    return found;
  }
}

/** A dialect's stale window now: its runtime setting where it has one, else the start-up option. */
export function staleAfterSeconds(ctx: BerthContext, dialect: 'volumes' | 'replicas'): number {
  try {
    const value = ctx.settings.get(dialect).values.stats_stale_after_seconds;
    if (typeof value === 'number') return value;
  } catch {
    // This dialect has registered no runtime settings.
  }
  return ctx.config.stats_stale_after_seconds;
}

const DialectParams = z.object({
  dialect: z.enum(['volumes', 'placement', 'replicas']).meta({ example: 'volumes' }),
});

const SettingsAnswer = z.object({
  generation: z.number().int().describe('Changes with every change; send it as If-Match to change only what you read'),
  settings: z.record(z.string(), z.unknown()),
}).meta({
  id: 'SettingsAnswer',
  examples: [{ generation: 7, settings: { max_over_subscription_ratio: 2, over_provisioning_calculation: 'cinder' } }],
});

const HistoryAnswer = z.object({
  history: z.array(z.object({
    at: z.string(),
    by: z.string().nullable(),
    changes: z.record(z.string(), z.object({ from: z.unknown(), to: z.unknown() })),
  })),
}).meta({
  id: 'SettingsHistory',
  examples: [{ history: [{ at: '2026-12-01T09:30:00.000Z', by: 'ops', changes: { max_over_subscription_ratio: { from: 20, to: 2 } } }] }],
});

const IfMatchHeaders = z.object({
  'if-match': z.string().regex(/^(W\/)?"?\d+"?$/, 'must be a generation, e.g. "7"').optional()
    .describe('The generation you read (GET answers it, and its ETag)'),
});

const answer = (s: AnySettings) => ({ generation: s.generation, settings: s.values });
const etag = (s: AnySettings) => `"${s.generation}"`;

export function registerSettingsRoutes(fastify: FastifyInstance, ctx: BerthContext): void {
  const app = zodApp(fastify);
  app.get('/settings/:dialect', {
    schema: {
      tags: ['settings'],
      summary: 'The settings a dialect decides with now',
      params: DialectParams,
      response: { 200: SettingsAnswer, 404: problemResponse('No such dialect') },
    },
  }, async (request, reply) => {
    const settings = ctx.settings.get(request.params.dialect);
    return reply.header('etag', etag(settings)).send(answer(settings));
  });

  app.put('/settings/:dialect', {
    schema: {
      tags: ['settings'],
      summary: 'Change some settings; the next decision uses them, and they survive a restart',
      params: DialectParams,
      headers: IfMatchHeaders,
      body: z.record(z.string(), z.unknown()).meta({ examples: [{ max_over_subscription_ratio: 2 }] })
        .describe('Any subset of the settings, validated as the start-up options are'),
      response: {
        200: SettingsAnswer,
        400: problemResponse('A setting is unknown or its value is not allowed (nothing changed)'),
        404: problemResponse('No such dialect'),
        412: problemResponse('If-Match names a generation that is no longer current (nothing changed)'),
      },
    },
  }, async (request, reply) => {
    const settings = ctx.settings.get(request.params.dialect);
    const ifMatch = request.headers['if-match'];
    const result = await settings.update(request.body, {
      ...(ifMatch !== undefined ? { ifMatch: Number(/\d+/.exec(ifMatch)![0]) } : {}),
      by: request.berthPrincipal?.name ?? null,
    });
    request.log.info({ dialect: settings.dialect, generation: result.generation }, 'settings changed');
    return reply.header('etag', etag(settings)).send(answer(settings));
  });

  app.get('/settings/:dialect/history', {
    schema: {
      tags: ['settings'],
      summary: 'Every change of a dialect\'s settings: when, who, old → new',
      params: DialectParams,
      response: { 200: HistoryAnswer, 404: problemResponse('No such dialect') },
    },
  }, async (request) => ({ history: [...ctx.settings.get(request.params.dialect).history] }));
}
