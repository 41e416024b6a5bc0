// Builds the Berth Fastify instance from a configuration and a store. No environment reads, no listen:
// tests and main.ts both call buildApp.
import Fastify, { LogController, type FastifyInstance, type FastifyServerOptions } from 'fastify';
import { serializerCompiler, validatorCompiler } from 'fastify-type-provider-zod';
import type { Config } from './config.ts';
import { registerAudit } from './http/audit.ts';
import { LOG_SERIALIZERS, registerAuth } from './http/auth.ts';
import { registerConsole } from './http/console.ts';
import type { BerthContext, DomainPlugin } from './http/context.ts';
import { DecisionLog } from './http/decision-log.ts';
import { Deferred } from './http/deferred.ts';
import { isDecisionRoute, registerDecisionReports } from './http/decision-report.ts';
import { isReady, registerHealth } from './http/health.ts';
import { registerBackPressure, sampleEventLoopDelay, type EventLoopDelay } from './http/limits.ts';
import { Metrics, registerMetrics, registerRuntimeMetrics } from './http/metrics.ts';
import { registerOpenApi } from './http/openapi.ts';
import { clientErrorHandler, frameworkErrorHandler, registerProblemHandlers } from './http/problem.ts';
import { registerRequestId, requestIdOf } from './http/request-id.ts';
import { registerRouteOptions } from './http/route-options.ts';
import { registerSettingsRoutes, SettingsRegistry, staleAfterSeconds } from './http/settings-routes.ts';
import { instrumentStore } from './http/store-metrics.ts';
import { KIND_SETTINGS } from './settings.ts';
import { StoreFollower } from './store/follow.ts';
import type { AsyncStore } from './store/store.ts';
import { placementClientError, placementPlugin } from './placement/routes/index.ts';
import { replicasPlugin } from './replicas/routes/index.ts';
import { volumesPlugin } from './volumes/routes/index.ts';

/** The dialects, each a folder under src/ with its own routes plugin. */
const DOMAINS: ReadonlyArray<{ name: string; plugin: DomainPlugin }> = [
  { name: 'volumes', plugin: volumesPlugin },
  { name: 'placement', plugin: placementPlugin },
  { name: 'replicas', plugin: replicasPlugin },
];

export interface BuildAppOptions {
  config: Config;
  /** The store (embedded SQLite or PostgreSQL); the caller opens and closes it. */
  store: AsyncStore;
  /** Fastify's logger option: false (default) or pino options. */
  logger?: FastifyServerOptions['logger'];
  /** Collect process metrics (default true). */
  processMetrics?: boolean;
  /** The clock (default Date.now). */
  now?: () => number;
  /** The built console's directory (default dist/console). */
  consoleDir?: string;
  /** Serve HTTPS with this key and certificate chain (PEM). */
  https?: { key: Buffer; cert: Buffer };
  /** The event-loop delay back-pressure reads, in ms (default: this process's, sampled). */
  eventLoopDelay?: EventLoopDelay;
}

/** Tokens never reach a log line, whatever a later change logs (LOG_SERIALIZERS). */
function withRedaction(logger: FastifyServerOptions['logger']): FastifyServerOptions['logger'] {
  if (!logger) return false;
  const options = logger === true ? {} : logger;
  return { ...options, serializers: { ...options.serializers, ...LOG_SERIALIZERS } };
}

export async function buildApp(options: BuildAppOptions): Promise<FastifyInstance> {
  const { config, store } = options;
  const app = Fastify({
    logger: withRedaction(options.logger),
    // A decision route's one log line is its decision (decision-report.ts), not Fastify's two request lines.
    logController: new LogController({ disableRequestLogging: isDecisionRoute }),
    ...(options.https ? { https: options.https } : {}),
    bodyLimit: config.body_limit,
    // Headers must arrive within request_timeout_ms (408); a connection silent for twice that is closed
    // (Node's request timeout does not cover a body that stalls after the headers).
    requestTimeout: config.request_timeout_ms,
    connectionTimeout: config.request_timeout_ms * 2,
    // Node checks request timeouts on this interval (30 s by default, too coarse for short timeouts).
    http: { connectionsCheckingInterval: Math.min(30_000, Math.max(100, Math.floor(config.request_timeout_ms / 4) || 30_000)) },
    // Placement names (traits, resource classes) reach 255 characters in paths; longer ones get a 400, not a 404.
    routerOptions: { maxParamLength: 1024 },
    frameworkErrors: frameworkErrorHandler,
    // Placement answers a malformed Content-Length in its own shape; everything else is problem+json.
    clientErrorHandler: (err, socket) => {
      if (!placementClientError(err, socket)) clientErrorHandler(err, socket);
    },
    // The caller's X-Request-Id (or x-openstack-request-id) when safe, else req-<uuid>; read and checked by
    // requestIdOf, not taken verbatim from a header.
    requestIdHeader: false,
    genReqId: requestIdOf,
  });
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);

  const metrics = new Metrics({ processMetrics: options.processMetrics });
  const now = options.now ?? Date.now;
  // Measured: commit latency, failures by reason.
  const measured = instrumentStore(store, metrics);
  const ctx: BerthContext = {
    config, store: measured, metrics, now, decisions: new DecisionLog(undefined, now),
    settings: new SettingsRegistry(),
    deferred: new Deferred((err) => app.log.error({ err }, 'deferred bookkeeping failed')),
  };
  app.decorate('berth', ctx);
  // What the last answers deferred is written down before the app is gone.
  app.addHook('onClose', async () => ctx.deferred.flush());

  registerRouteOptions(app);
  registerRequestId(app);
  registerProblemHandlers(app);
  // Sampled even with load shedding off: berth_event_loop_lag_seconds exports it.
  let delay = options.eventLoopDelay;
  if (!delay) {
    // Sampling much faster than 100 ms can see no loop turn at all, which would read as infinite delay.
    const sampler = sampleEventLoopDelay(Math.min(1000, Math.max(100, config.max_event_loop_delay_ms || 1000)));
    app.addHook('onClose', async () => sampler.stop());
    delay = sampler.read;
  }
  if (config.max_event_loop_delay_ms > 0) {
    registerBackPressure(app, { maxDelayMs: config.max_event_loop_delay_ms, delay });
  }
  // Before every route: each route takes its rule from the role table as it is declared.
  await registerAuth(app, ctx);
  registerAudit(app);
  await registerOpenApi(app);
  registerMetrics(app, metrics, ctx.deferred);
  const readiness = { ready: false };
  registerHealth(app, readiness, () => measured.status());
  registerRuntimeMetrics(metrics, {
    store: () => measured.status().backend,
    feed: () => measured.status(),
    ready: () => isReady(readiness, measured.status()),
    eventLoopDelay: delay,
    staleAfterSeconds: { volumes: () => staleAfterSeconds(ctx, 'volumes'), replicas: () => staleAfterSeconds(ctx, 'replicas') },
  });
  // Before the domains: the hook must reach their scheduling routes.
  registerDecisionReports(app, ctx);

  for (const domain of DOMAINS) {
    await app.register(async (scope) => domain.plugin(scope, ctx), { name: domain.name } as never);
  }
  // GET/PUT /settings/{dialect}: each dialect registered its settings into ctx.settings above.
  registerSettingsRoutes(app, ctx);
  // Settings another instance changes apply here too, at once (not only at the next start).
  const settingsFollower = new StoreFollower(measured, [KIND_SETTINGS], ctx.settings.followedView());
  await settingsFollower.start();
  app.addHook('onClose', async () => settingsFollower.close());
  registerConsole(app, ctx, { assetsDir: options.consoleDir });

  app.addHook('onReady', async () => {
    readiness.ready = true;
  });
  app.addHook('preClose', async () => {
    readiness.ready = false;
  });
  return app;
}
