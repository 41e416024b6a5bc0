// Nova's isolate_aggregates request filter (nova/scheduler/request_filter.py): every aggregate with at least one
// `trait:X=required` metadata entry whose trait the request does not require becomes a forbidden aggregate of the
// unsuffixed group (`member_of=!in:<sorted uuids>`). Pure.
import type { RequestGroup } from './query.ts';

export interface IsolatedAggregate {
  uuid: string;
  /** The `trait:X=required` entries the request does not satisfy. */
  missing: string[];
}

/** The traits Nova counts as required: the plain required traits of every group (OR-sets of one trait). */
export function requiredTraitsOf(groups: readonly RequestGroup[]): Set<string> {
  const traits = new Set<string>();
  for (const g of groups) for (const set of g.required) if (set.length === 1) traits.add(set[0]!);
  return traits;
}

/** AggregateList.get_non_matching_by_metadata_keys(keys, 'trait:', value='required'), sorted by uuid. */
export function isolatedAggregates(
  metadata: ReadonlyMap<string, Readonly<Record<string, string>>>, requiredTraits: ReadonlySet<string>,
): IsolatedAggregate[] {
  const out: IsolatedAggregate[] = [];
  for (const [uuid, meta] of metadata) {
    const missing = Object.entries(meta)
      .filter(([k, v]) => k.startsWith('trait:') && v === 'required' && !requiredTraits.has(k.slice('trait:'.length)))
      .map(([k]) => k.slice('trait:'.length))
      .sort();
    if (missing.length > 0) out.push({ uuid, missing });
  }
  return out.sort((a, b) => (a.uuid < b.uuid ? -1 : a.uuid > b.uuid ? 1 : 0));
}
