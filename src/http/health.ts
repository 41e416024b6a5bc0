// Liveness and readiness. Ready means the store is open and every domain has loaded its state;
// during shutdown readiness turns false so that load balancers stop sending work.
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { StoreStatus } from '../store/store.ts';
import { BACK_PRESSURE_EXEMPT } from './limits.ts';

const health = (status: string) => z.object({ status: z.string() }).meta({ examples: [{ status }] });

/** What /readyz answers (and berth_ready exports): started, not shutting down, store connected and following. */
export function isReady(state: { ready: boolean }, store: StoreStatus): boolean {
  return state.ready && store.connected && store.following;
}

/**
 * `state.ready`: started and not shutting down; `store()`: the store answers and this instance follows its change
 * feed (always so for the embedded store; with PostgreSQL not during an outage or while catching up).
 */
export function registerHealth(app: FastifyInstance, state: { ready: boolean }, store: () => StoreStatus): void {
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
  }, async (_request, reply) => {
    return isReady(state, store()) ? { status: 'ready' } : reply.code(503).send({ status: 'not ready' });
  });
}
