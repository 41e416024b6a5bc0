// GET /: Placement's version document (microversion discovery for its clients).
import { MAX_VERSION, MIN_VERSION } from '../microversion.ts';
import * as S from '../schemas.ts';
import { doc, withZod, type PlacementRoutes } from './common.ts';

export const rootRoutes: PlacementRoutes = (app) => {
  withZod(app).get('/', {
    schema: doc('Placement version document (microversion discovery for Placement clients)', { response: { 200: S.AnyObjectSchema } }),
  }, async () => ({
    versions: [{ id: 'v1.0', min_version: MIN_VERSION, max_version: MAX_VERSION, status: 'CURRENT', links: [{ href: '', rel: 'self' }] }],
  }));
};
