// What every domain plugin receives: configuration, the store and the app's metrics.
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { Config } from '../config.ts';
import type { AsyncStore } from '../store/store.ts';
import type { DecisionLog } from './decision-log.ts';
import type { Deferred } from './deferred.ts';
import type { Metrics } from './metrics.ts';
import type { SettingsRegistry } from './settings-routes.ts';

export interface BerthContext {
  config: Config;
  /** The store (embedded SQLite or PostgreSQL): commits, snapshots and the change feed. */
  store: AsyncStore;
  /** Each dialect's runtime settings (GET/PUT /settings/{dialect}). */
  settings: SettingsRegistry;
  metrics: Metrics;
  /** Milliseconds since the epoch; injectable so that tests control staleness. */
  now: () => number;
  /** The latest decisions (the console reads them): record(entry) once per decision. */
  decisions: DecisionLog;
  /** Bookkeeping that waits until the next request has been taken (flush before reading what it writes). */
  deferred: Deferred;
}

declare module 'fastify' {
  interface FastifyInstance {
    berth: BerthContext;
  }
}

/** A domain's routes, registered as an encapsulated plugin with the Berth context. */
export type DomainPlugin = (app: FastifyInstance, ctx: BerthContext) => Promise<void>;

/** The instance routes are declared on, with zod type inference for bodies, queries and params. */
export function zodApp(app: FastifyInstance) {
  return app.withTypeProvider<ZodTypeProvider>();
}
