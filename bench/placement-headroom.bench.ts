// Placement headroom (GET /headroom's computation, in-process) over 10,000 flat compute nodes, then 10,000 and
// 100,000 with a quarter of them having two NUMA children holding the VCPU (those trees offer two candidates, and
// the search takes its multi-provider path): requests that fill every tree
// below max (each tree's count alone), ones truncated at the default max of 100,000 (the ranking replayed: one class
// orders by free capacity, three classes re-score when a claim moves a bound), and the sequential definition at
// max=100 for the cost of one search-and-claim. Goal: well under 100 ms at 10,000 providers; the one full search
// headroom still makes (scheduler.ts) is most of it.
import { headroom, sequentialHeadroom } from '../src/placement/headroom.ts';
import { PlacementModel } from '../src/placement/model.ts';
import { parseAllocationCandidatesQuery, queryPairs } from '../src/placement/query.ts';
import { timeHeadroom } from './stats.ts';

const hex = (n: number, width: number) => n.toString(16).padStart(width, '0');
const uuid = (kind: number, i: number) => `${hex(kind, 8)}-0000-4000-8000-${hex(i, 12)}`;
const inv = (total: number, ratio = 1, reserved = 0) => ({ total, reserved, min_unit: 1, max_unit: total, step_size: 1, allocation_ratio: ratio });

function fleet(n: number, nested: boolean): PlacementModel {
  const m = new PlacementModel();
  for (let i = 0; i < n; i++) {
    const rp = uuid(1, i);
    const numa = nested && i % 4 === 0;
    const vcpu = 32 + (i % 4) * 16;
    m.applyProvider({
      uuid: rp, name: `cn${i}`, parent_provider_uuid: null, generation: 1,
      inventories: {
        ...(numa ? {} : { VCPU: inv(vcpu, 4) }),
        MEMORY_MB: inv(65536 * (1 + (i % 4)), 1.5, 512),
        DISK_GB: inv(1000 + (i % 7) * 500),
      },
      traits: i % 2 === 0 ? ['HW_CPU_X86_AVX2'] : [], aggregates: [],
    });
    if (numa) {
      for (let k = 0; k < 2; k++) {
        m.applyProvider({ uuid: uuid(2 + k, i), name: `cn${i}n${k}`, parent_provider_uuid: rp, generation: 1, inventories: { VCPU: inv(vcpu / 2, 4) }, traits: [], aggregates: [] });
      }
    }
    if (i % 3 === 0) {
      m.applyConsumer(uuid(9, i), {
        uuid: uuid(9, i), project_id: 'p', user_id: 'u', consumer_type: 'INSTANCE', generation: 1,
        allocations: { [rp]: { MEMORY_MB: 16384, DISK_GB: 200 } },
      });
    }
  }
  return m;
}

const REQUESTS: Array<[string, string]> = [
  ['3 classes, large (fills every tree below max)', 'resources=VCPU:16,MEMORY_MB:32768,DISK_GB:400'],
  ['3 classes + AVX2, large', 'resources=VCPU:16,MEMORY_MB:32768,DISK_GB:400&required=HW_CPU_X86_AVX2'],
  ['1 class VCPU:2 (truncated at 100,000)', 'resources=VCPU:2'],
  ['3 classes VCPU:1,MEMORY_MB:2048,DISK_GB:20 (truncated at 100,000)', 'resources=VCPU:1,MEMORY_MB:2048,DISK_GB:20'],
  ['granular VCPU / MEMORY_MB, group_policy=none', 'resources1=VCPU:4&resources2=MEMORY_MB:16384&group_policy=none'],
];

const SEARCH = { randomize: false, nestedAware: true, freeCapacityMultiplier: 1 };
const GOAL_MS = 100;

export async function run(): Promise<void> {
  for (const [n, nested] of [[10_000, false], [10_000, true], [100_000, true]] as const) {
    const model = fleet(n, nested);
    console.log(`${n} compute nodes (${model.providers.size} providers${nested ? ', a quarter with NUMA children' : ''})`);
    // At 10,000: 50 calls after 5 warm-up ones (a running service's steady state; the cold first call apart).
    const runs = n > 10_000 ? 3 : 50;
    for (const [label, query] of REQUESTS) {
      const q = parseAllocationCandidatesQuery(queryPairs(`/headroom?${query}`), 39);
      timeHeadroom(`  ${label}`, runs, () => headroom(model, q, SEARCH, 100_000), n === 10_000 ? GOAL_MS : undefined, n === 10_000 ? 5 : 1);
    }
    if (n === 10_000 && nested) {
      const q = parseAllocationCandidatesQuery(queryPairs('/headroom?resources=VCPU:1,MEMORY_MB:2048,DISK_GB:20'), 39);
      timeHeadroom('  sequential definition, max=100 (one search and claim each)', 3, () => sequentialHeadroom(model, q, SEARCH, 100));
    }
  }
}
