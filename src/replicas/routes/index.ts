// The replica dialect's HTTP face (Longhorn): one service, its metrics, and the routes by resource.
import type { BerthContext, DomainPlugin } from '../../http/context.ts';
import { registerReplicaMetrics } from '../metrics.ts';
import type { DialectSettings } from '../../settings.ts';
import { legacySettings, ReplicaService } from '../service.ts';
import { replicasSettings } from '../settings.ts';
import { headroomRoutes } from './headroom.ts';
import { nodeRoutes } from './nodes.ts';
import { replicaRoutes } from './replicas.ts';
import { scheduleRoutes } from './schedule.ts';
import { settingsRoutes } from './settings.ts';
import { simulateRoutes } from './simulate.ts';

/** The service of each app (by its context), for read-only views such as the console's fleet. */
export const replicasServices = new WeakMap<BerthContext, ReplicaService>();

export const replicasPlugin: DomainPlugin = async (fastify, ctx) => {
  // The stored runtime settings (a change survives a restart) win over the start (the pre-runtime record or defaults).
  const settings = replicasSettings(await legacySettings(ctx.store), ctx.store, ctx.now);
  await settings.load();
  ctx.settings.register(settings as unknown as DialectSettings<never>);
  // Loaded from the store, then following every instance's changes until the app closes.
  const service = await ReplicaService.open(ctx.store, settings);
  fastify.addHook('onClose', async () => service.close());
  replicasServices.set(ctx, service);
  const metrics = registerReplicaMetrics(ctx.metrics.registry, service, ctx.now);
  nodeRoutes(fastify, service, ctx);
  settingsRoutes(fastify, service, settings);
  scheduleRoutes(fastify, service, ctx, metrics);
  headroomRoutes(fastify, service, ctx);
  simulateRoutes(fastify, service, ctx);
  replicaRoutes(fastify, service);
};
