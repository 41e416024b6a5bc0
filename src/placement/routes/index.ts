// The Placement-compatible API (Placement 8, microversion ≤ 1.39) plus Nova's aggregate metadata, as an
// encapsulated Fastify plugin: one module per resource, like Placement's handlers.
import type { BerthContext, DomainPlugin } from '../../http/context.ts';
import { registerPlacementMetrics } from '../metrics.ts';
import { placementSettings } from '../settings.ts';
import { PlacementService } from '../service.ts';
import { aggregateRoutes } from './aggregates.ts';
import { allocationCandidateRoutes } from './allocation-candidates.ts';
import { allocationRoutes } from './allocations.ts';
import type { PlacementRoutes, RouteDeps } from './common.ts';
import { headroomRoutes } from './headroom.ts';
import { inventoryRoutes } from './inventories.ts';
import { registerFallbacks, registerPlacementHttp, trackRoutes } from './plugin.ts';

export { placementClientError } from './plugin.ts';
import { resourceClassRoutes } from './resource-classes.ts';
import { reshaperRoutes } from './reshaper.ts';
import { resourceProviderRoutes } from './resource-providers.ts';
import { rootRoutes } from './root.ts';
import { traitRoutes } from './traits.ts';
import { usageRoutes } from './usages.ts';

const ROUTES: readonly PlacementRoutes[] = [
  rootRoutes, resourceProviderRoutes, inventoryRoutes, traitRoutes, resourceClassRoutes, aggregateRoutes,
  allocationRoutes, usageRoutes, allocationCandidateRoutes, headroomRoutes, reshaperRoutes,
];

/** The service of each app (by its context), for in-process loading in the bench. */
export const placementServices = new WeakMap<BerthContext, PlacementService>();

export const placementPlugin: DomainPlugin = async (app, ctx) => {
  const settings = placementSettings(ctx.config, ctx.store, ctx.now);
  await settings.load();
  ctx.settings.register(settings);
  const service = await PlacementService.open(ctx.store, settings);
  app.addHook('onClose', () => service.close());
  placementServices.set(ctx, service);
  const deps: RouteDeps = { service, ctx, metrics: registerPlacementMetrics(ctx.metrics.registry, service.model) };

  const declared = trackRoutes(app);
  registerPlacementHttp(app);
  for (const routes of ROUTES) routes(app, deps);
  registerFallbacks(app, declared);
};
