// Builds the Berth Fastify instance from a configuration and a store. No environment reads, no listen:
// tests and main.ts both call buildApp.
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import { serializerCompiler, validatorCompiler } from 'fastify-type-provider-zod';
import type { Config } from './config.ts';
import type { BerthContext, DomainPlugin } from './http/context.ts';
import { registerHealth } from './http/health.ts';
import { Metrics, registerMetrics } from './http/metrics.ts';
import { registerOpenApi } from './http/openapi.ts';
import { frameworkErrorHandler, registerProblemHandlers } from './http/problem.ts';
import type { Store } from './store/store.ts';
import { volumesPlugin } from './volumes/routes.ts';

/** The dialects, each a folder under src/ with its own routes plugin. */
const DOMAINS: ReadonlyArray<{ name: string; plugin: DomainPlugin }> = [
  { name: 'volumes', plugin: volumesPlugin },
];

export interface BuildAppOptions {
  config: Config;
  store: Store;
  /** Fastify's logger option: false (default) or pino options. */
  logger?: FastifyServerOptions['logger'];
  /** Collect process metrics (default true). */
  processMetrics?: boolean;
  /** The clock (default Date.now). */
  now?: () => number;
}

export async function buildApp(options: BuildAppOptions): Promise<FastifyInstance> {
  const { config, store } = options;
  const app = Fastify({
    logger: options.logger ?? false,
    bodyLimit: config.body_limit,
    frameworkErrors: frameworkErrorHandler,
  });
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);

  const metrics = new Metrics({ processMetrics: options.processMetrics });
  const ctx: BerthContext = { config, store, metrics, now: options.now ?? Date.now };
  app.decorate('berth', ctx);

  registerProblemHandlers(app);
  await registerOpenApi(app);
  registerMetrics(app, metrics);
  const readiness = { ready: false };
  registerHealth(app, readiness);

  for (const domain of DOMAINS) {
    await app.register(async (scope) => domain.plugin(scope, ctx), { name: domain.name } as never);
  }

  app.addHook('onReady', async () => {
    readiness.ready = true;
  });
  app.addHook('preClose', async () => {
    readiness.ready = false;
  });
  return app;
}
