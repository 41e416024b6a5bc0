// The ranking of allocation candidates (Berth's; Placement's own order is a Python set's): one weigher per requested
// resource class, the free capacity the candidate's providers have of it (most free first with a positive
// multiplier), normalised by the engine and summed. The registry names them. Pure.
import type { Weigher } from '../pipeline/pipeline.ts';
import type { MergeRequest, MergedCandidates } from './filters.ts';

type PlacementWeigher = Weigher<MergedCandidates, MergeRequest>;

/** FreeCapacity:<class>: free capacity of that class on the providers supplying it, before this request. */
function freeCapacityWeigher(rc: string, multiplier: number): PlacementWeigher {
  return {
    name: `FreeCapacity:${rc}`,
    multiplier,
    prepare(set) {
      return {
        weigh(at, count, out) {
          set.freeInto(rc, at, count, out);
          return null;
        },
      };
    },
  };
}

/** The weighers by name: each is built per requested class with its multiplier. */
export const PLACEMENT_WEIGHERS = {
  FreeCapacity: freeCapacityWeigher,
} as const;
