// Liveness and readiness. Ready means the store is open and every domain has loaded its state;
// during shutdown readiness turns false so that load balancers stop sending work.
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { BACK_PRESSURE_EXEMPT } from './limits.ts';

const health = (status: string) => z.object({ status: z.string() }).meta({ examples: [{ status }] });

export function registerHealth(app: FastifyInstance, state: { ready: boolean }): void {
  app.get('/healthz', {
    // Probes must answer even when Berth sheds load, or an orchestrator would restart a busy but healthy process.
    config: BACK_PRESSURE_EXEMPT,
    schema: { tags: ['operations'], summary: 'Liveness: the process answers', response: { 200: health('ok') } },
  }, async () => ({ status: 'ok' }));
  app.get('/readyz', {
    config: BACK_PRESSURE_EXEMPT,
    schema: {
      tags: ['operations'],
      summary: 'Readiness: the store is loaded and Berth takes work',
      response: { 200: health('ready'), 503: health('not ready') },
    },
  }, async (_request, reply) => (state.ready ? { status: 'ready' } : reply.code(503).send({ status: 'not ready' })));
}
