// GET /: Placement's version document (microversion discovery for its clients).
import { MAX_VERSION, MIN_VERSION } from '../microversion.ts';
import * as S from '../schemas.ts';
import { cacheHeaders, doc, route, type PlacementRoutes } from './common.ts';

export const rootRoutes: PlacementRoutes = (app, { ctx }) => {
  route(app, {
    method: 'GET', url: '/',
    schema: doc('Placement version document (microversion discovery for Placement clients)', { response: { 200: S.VersionsSchema } }),
    handler: async (request, reply) => {
      cacheHeaders(request, reply, ctx.now());
      return {
        versions: [{ id: `v${MIN_VERSION}`, max_version: MAX_VERSION, min_version: MIN_VERSION, status: 'CURRENT', links: [{ rel: 'self', href: '' }] }],
      };
    },
  });
};
