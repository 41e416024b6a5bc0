// GET /headroom (Berth): how many more consumers with this allocation-candidates request fit, each claiming the
// candidate ranked first, as GET /allocation_candidates then PUT /allocations/{new consumer} would. Changes nothing.
import { HEADROOM_MAX_DEFAULT, HEADROOM_MAX_LIMIT } from '../../planning.ts';
import { badRequest } from '../errors.ts';
import { parseAllocationCandidatesQuery, queryPairs, type QueryPairs } from '../query.ts';
import * as S from '../schemas.ts';
import { doc, errors, route, type PlacementRoutes } from './common.ts';

/** `max` (the last one given): an integer 1 … 1,000,000, default 100,000; else a 400 naming it. */
function maxOf(pairs: QueryPairs): number {
  const values = pairs.filter(([k]) => k === 'max');
  if (values.length === 0) return HEADROOM_MAX_DEFAULT;
  const raw = values[values.length - 1]![1];
  const max = /^[0-9]+$/.test(raw) ? Number(raw) : NaN;
  if (!(max >= 1 && max <= HEADROOM_MAX_LIMIT)) {
    throw badRequest(`Invalid query string parameters: 'max' must be an integer from 1 to ${HEADROOM_MAX_LIMIT}. Got: ${raw}`);
  }
  return max;
}

export const headroomRoutes: PlacementRoutes = (app, { service, ctx }) => {
  route(app, {
    method: 'GET', url: '/headroom', since: 10,
    schema: doc('How many more consumers with this allocation-candidates request fit, each claiming the first candidate (Berth; changes nothing)', {
      querystring: S.HeadroomQuerySchema,
      response: { 200: S.HeadroomResponseSchema, 400: errors[400] },
    }),
    handler: async (request) => {
      const pairs = queryPairs(request.url);
      const max = maxOf(pairs);
      const query = parseAllocationCandidatesQuery(pairs.filter(([k]) => k !== 'max'), request.placementMv);
      const answer = service.headroom(query, request.placementMv, max);
      ctx.metrics.headroomRequests.inc({ domain: 'placement', truncated: String(answer.truncated) });
      return answer;
    },
  });
};
