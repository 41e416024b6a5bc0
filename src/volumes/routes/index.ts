// The volumes dialect's HTTP face: one service, its metrics, and the routes by resource.
import type { BerthContext, DomainPlugin } from '../../http/context.ts';
import { registerVolumesMetrics } from '../metrics.ts';
import { VolumesService } from '../service.ts';
import { volumesSettings } from '../settings.ts';
import { backendRoutes } from './backends.ts';
import { cinderRoutes } from './cinder.ts';
import { poolRoutes } from './pools.ts';
import { simulateRoutes } from './simulate.ts';
import { volumeRoutes } from './volumes.ts';

/** The service of each app (by its context), for read-only views such as the console's fleet. */
export const volumesServices = new WeakMap<BerthContext, VolumesService>();

export const volumesPlugin: DomainPlugin = async (fastify, ctx) => {
  // The stored settings (a change survives a restart) win over the start-up options; a change applies at once.
  const settings = volumesSettings(ctx.config, ctx.store, ctx.now);
  await settings.load();
  const service = await VolumesService.open(settings.values, ctx.store, ctx.now);
  fastify.addHook('onClose', async () => service.close());
  settings.onChange((values) => service.applySettings(values));
  ctx.settings.register(settings);
  volumesServices.set(ctx, service);
  registerVolumesMetrics(ctx.metrics.registry, service);
  backendRoutes(fastify, service);
  poolRoutes(fastify, service);
  volumeRoutes(fastify, service, ctx);
  simulateRoutes(fastify, service, ctx);
  await fastify.register(async (scope) => cinderRoutes(scope, service), { prefix: '/volume' });
};
