// GET /allocation_candidates (handlers/allocation_candidate.py): parse → search (with Nova's isolate step) →
// serialise, plus Berth's decision log line, metrics and explain trace.
import { startDecision } from '../../http/decision-report.ts';
import { explainTargetOf, isTrue, parseAllocationCandidatesQuery, queryPairs } from '../query.ts';
import * as S from '../schemas.ts';
import { AnswerBuffers, CHUNK_BYTES, candidatesChunks, chunkStream } from '../serialize.ts';
import { cacheHeaders, doc, errors, route, type PlacementRoutes } from './common.ts';

/** Answers with more candidates than this stream (about 1 MB and up). */
const STREAM_ABOVE = 2000;

export const allocationCandidateRoutes: PlacementRoutes = (app, { service, ctx, metrics }) => {
  const answers = new AnswerBuffers();
  route(app, {
    method: 'GET', url: '/allocation_candidates', since: 10,
    schema: doc('Allocation candidates (Placement query language at microversion ≤ 1.39; send OpenStack-API-Version: placement 1.39)', {
      querystring: S.AllocationCandidatesQuerySchema,
      response: { 200: S.AllocationCandidatesResponseSchema, 400: errors[400], 404: errors[404] },
    }),
    handler: async (request, reply) => {
      const mv = request.placementMv;
      const report = startDecision(request);
      const pairs = queryPairs(request.url);
      const query = parseAllocationCandidatesQuery(pairs, mv);
      const explain = isTrue(pairs, 'explain');
      const { result, isolated } = service.allocationCandidates(query, mv, explain, explainTargetOf(pairs));
      const requested = new Set(query.groups.flatMap((g) => [...g.resources.keys()]));
      metrics.candidatesReturned.inc(result.candidates.length);
      const trace = explain
        ? {
          ...result.trace,
          total: result.total,
          isolate_aggregates: isolated
            ? isolated.map((a) => ({
              uuid: a.uuid, missing: a.missing,
              reason: `aggregate requires trait(s) ${a.missing.join(', ')} that the request does not require; added as member_of=!in:${a.uuid}`,
            }))
            : 'disabled (enable_isolated_aggregate_filtering=false)',
        }
        : undefined;
      const members = (trace ? `,"explain":${JSON.stringify(trace)}` : '') + (result.target ? `,"target":${JSON.stringify(result.target)}` : '');
      // A large answer (~450 bytes a candidate) streams in chunks: never a copy of the whole in memory, and the
      // first bytes leave before the last are made. A smaller one is one buffer. Both are copied into buffers the
      // route reuses.
      const streamed = result.candidates.length > STREAM_ABOVE;
      // Its buffers come back to the route once its last byte has been handed to the socket ('finish'); an answer
      // whose connection closed before leaves them to the GC.
      const lease = answers.lease();
      reply.raw.once('finish', () => lease.giveBack());
      const chunks = candidatesChunks(service.model, result.candidates, mv, requested, members, streamed ? CHUNK_BYTES : Infinity, lease);
      const body = streamed ? chunkStream(chunks) : chunks.next().value!;
      const best = result.candidates[0];
      report.finish({
        outcome: best ? 'candidates' : 'no_candidates', asked: {},
        // The best candidate's providers, in the order its allocation request lists them.
        targets: best ? [...best.allocations.keys()].map((p) => p.uuid) : [],
        candidates: result.total, passed: result.candidates.length,
        counts: { returned: result.candidates.length, total: result.total },
        ...(trace ? { explain: trace } : {}),
      });
      cacheHeaders(request, reply, ctx.now());
      return reply.type('application/json').send(body as never);
    },
  });
};
