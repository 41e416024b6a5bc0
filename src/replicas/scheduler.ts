// Longhorn's ScheduleReplica, called once per missing replica of a volume, each call seeing the earlier ones
// (reference/longhorn.md §3), decided by the engine (src/pipeline): once per request the node filters over the nodes
// and the disk pre-filter over the disk table; then per replica one decision over the disks of the nodes some tier
// lists, with the disk checks and disk anti-affinity as filters, the node/zone tiers as the engine's tiers and the
// balance selection as its selector. Pure: the cluster view, settings, clock reading and existing replicas come in;
// the placements, failure reasons and an optional trace go out. Nothing here mutates the views.
import { Pipeline, type BoundFilter, type Decision, type Rejected, type Tiers } from '../pipeline/pipeline.ts';
import { balanceSelector, type BalanceHow, type BalanceResult } from './balance.ts';
import {
  DISK_CHECKS, DISK_PREFILTERS, DiskAntiAffinity, FAILURE_REASON, NODE_FILTERS, NodeTags, REPLICA_FILTERS,
} from './filters.ts';
import {
  DiskTable, KEPT_ROWS, type DiskPrefilterRequest, type DiskRequest, type DiskView, type NodeRequest, type NodeView, type ReplicaRef,
  type VolumeSpec,
} from './model.ts';
import { effectiveAutoBalance, effectiveSoft, type ReplicaSettings } from './settings.ts';
import { diskUnderPressure } from './space.ts';

/** The node/zone tiers (reference §3.4): new node in new zone, new node, only-evicting node (in an only-evicting zone), used node. */
export type TierName = 'NN' | 'N' | 'E' | 'EZ' | 'U';

const TIER_DESCRIPTIONS: Record<TierName, string> = {
  NN: 'new node in a new zone',
  N: 'new node (zone may already hold a replica)',
  E: 'node whose replicas of this volume are all being evicted',
  EZ: 'node and zone whose replicas of this volume are all being evicted',
  U: 'node that already holds a replica of this volume',
};

/** The tiers as numbers, for the walk over the nodes. */
const TIER_CODES: Record<TierName, number> = { NN: 0, N: 1, E: 2, EZ: 3, U: 4 };

/** What the tier lists read of one replica's decision: where the volume's counted replicas are, and the widenings. */
interface Usage {
  /** Per table node: passes the node tag filter (every tier but U lists only those). */
  readonly tagged: Uint8Array;
  readonly zoneOf: Int32Array;
  /** Per table node, under best-effort auto-balance: a disk under pressure (else null). */
  readonly pressured: Uint8Array | null;
  readonly bestEffort: boolean;
  readonly usedNode: Uint8Array;
  readonly usedZone: Uint8Array;
  readonly nodeOnlyEvicting: Int8Array;
  readonly zoneOnlyEvicting: Int8Array;
}

/** Whether the tier (TIER_CODES) lists table node k. */
function listedBy(code: number, k: number, u: Usage): boolean {
  if (code === TIER_CODES.U) return u.usedNode[k] === 1;
  if (u.tagged[k] === 0) return false;
  switch (code) {
    case TIER_CODES.NN: return u.usedZone[u.zoneOf[k]!] === 0;
    case TIER_CODES.N: return u.usedNode[k] === 0 || u.pressured?.[k] === 1;
    case TIER_CODES.E: return u.nodeOnlyEvicting[k] === 1;
    default: return u.nodeOnlyEvicting[k] === 1 && (u.bestEffort || u.zoneOnlyEvicting[u.zoneOf[k]!] === 1);
  }
}

/** The position in the order (as codes) of the first tier listing table node k, or −1. */
function firstTier(codes: Int8Array, k: number, u: Usage): number {
  for (let t = 0; t < codes.length; t++) if (listedBy(codes[t]!, k, u)) return t;
  return -1;
}

/** Longhorn's tier order for the effective zone/node soft anti-affinity. */
export function tierOrder(zoneSoft: boolean, nodeSoft: boolean): TierName[] {
  if (!zoneSoft) return ['NN', 'EZ'];
  return nodeSoft ? ['NN', 'N', 'U'] : ['NN', 'N', 'E'];
}

/**
 * The tiers as the engine ranks a disk: its node's first tier in the order, and within a tier a disk holding a
 * replica of the volume after the free ones (soft disk anti-affinity: used only when no free disk is left in the
 * tier). The engine keeps the best rank present, which is Longhorn's "first tier that yields a disk candidate".
 * The ranks are written with the replica's candidates (DiskRequest.rank), so the engine's call per disk reads one.
 */
const antiAffinityTiers: Tiers<DiskTable, DiskRequest> = {
  name: 'AntiAffinityTiers',
  prepare: (_table, r) => {
    const { rank } = r;
    return (i) => rank[i]!;
  },
};

/** Schedulable nodes (ListSchedulableNodes), once per request, and the nodes of GET /nodes. */
const schedulablePipeline = new Pipeline<readonly NodeView[], NodeRequest>({ filters: NODE_FILTERS });
/** The node tag filter over the schedulable nodes, once per request. */
const nodeTagPipeline = new Pipeline<readonly NodeView[], NodeRequest>({ filters: [NodeTags] });
/** The disk pre-filter over the schedulable nodes' disks, once per request. */
const prefilterPipeline = new Pipeline<DiskTable, DiskPrefilterRequest>({ filters: DISK_PREFILTERS });
const PLACEMENT_FILTERS = [...DISK_CHECKS, DiskAntiAffinity];
/** One replica's placement. */
const placementPipeline = new Pipeline<DiskTable, DiskRequest>({
  filters: PLACEMENT_FILTERS, tiers: antiAffinityTiers, selector: balanceSelector,
});
/**
 * One replica's placement without a trace, as placementPipeline decides it: the checks in order, each a tight pass
 * over the disks the earlier ones passed (counting its refusals), the last one keeping only the disks of the best
 * rank among those it passes, in candidate order (what the tiers keep), then the balance selection over them. The
 * engine's generic passes, its ranking of every candidate through a call each (twice) and its copies were most of
 * a decision's time. Every check is prepared first (a preparation only computes what its check reads), so the last
 * one that checks anything is known. Returns the chosen disk with the rejections added in the checks' order (as
 * the engine's run counts them), or −1 with nothing added when no disk passes: the caller decides over the engine
 * then, which gives the miss its reasons.
 */
function placeWithoutTrace(table: DiskTable, request: DiskRequest, among: Int32Array, count: number, work: Work,
  rejections: Map<string, number>): number {
  const { kept, refused, bound } = work;
  let last = -1;
  for (let j = 0; j < PLACEMENT_FILTERS.length; j++) {
    const b = (bound[j] = PLACEMENT_FILTERS[j]!.prepare(table, request));
    if (b !== null) last = j;
  }
  refused.fill(0);
  let from: Int32Array = among;
  let n = count;
  for (let j = 0; j < last && n > 0; j++) {
    const b = bound[j];
    if (!b) continue;
    let left = 0;
    if ('row' in b) {
      const row = b.row;
      for (let p = 0; p < n; p++) {
        const i = from[p]!;
        if (row[i] === 0) kept[left++] = i;
      }
    } else {
      for (let p = 0; p < n; p++) {
        const i = from[p]!;
        if (b.check(i) === null) kept[left++] = i;
      }
    }
    refused[j] = n - left;
    from = kept;
    n = left;
  }
  // The last check and the tiers in one pass (the best rank so far; a better one starts the kept disks again).
  const { rank } = request;
  const b = last >= 0 ? bound[last]! : null;
  const row = b && 'row' in b ? b.row : null;
  const check = b && !('row' in b) ? b : null;
  let best = Infinity;
  let left = 0;
  let passed = 0;
  for (let p = 0; p < n; p++) {
    const i = from[p]!;
    if (row ? row[i] !== 0 : check !== null && check.check(i) !== null) continue;
    passed++;
    const r = rank[i]!;
    if (r > best) continue;
    if (r < best) {
      best = r;
      left = 0;
    }
    kept[left++] = i;
  }
  if (last >= 0) refused[last] = n - passed;
  if (left === 0) return -1;
  const position = balanceSelector.prepare(table, request)(kept, left);
  if (position < 0) return -1;
  for (let j = 0; j < PLACEMENT_FILTERS.length; j++) addCount(rejections, PLACEMENT_FILTERS[j]!.name, refused[j]!);
  return kept[position]!;
}

/** Why the scheduler would not take the node as a candidate now (the first node filter that refuses it), or null. */
export function nodeRefusal(node: NodeView, settings: ReplicaSettings, now: number, staleAfterSeconds: number): string | null {
  const decision = schedulablePipeline.decide([node], { settings, now, staleAfterSeconds, nodeSelector: [] }, { limit: 0 });
  const [first] = decision.rejected();
  return first ? decision.reason(first) : null;
}

/**
 * What a decision reads that depends on the nodes and settings only (and the clock, where reports go stale): the
 * schedulable nodes (ListSchedulableNodes) and their rejections, their disk table, the disk pre-filter's verdicts
 * and their rejections, the zones, and the node tag verdicts per node selector. Decided through the engine once; a
 * ScheduleCache keeps it from one request to the next while it still describes the nodes, and `refresh` takes in
 * what claims change meanwhile — the storageScheduled of the disks they are on — deciding the pre-filter again for
 * those disks only (its space condition is the one check here that reads it).
 */
class Cluster {
  readonly nodes: readonly NodeView[];
  readonly settings: ReplicaSettings;
  readonly now: number;
  readonly staleAfterSeconds: number;
  readonly table: DiskTable;
  /** The engine's runs over the nodes and the disk pre-filter, for a trace: valid until those pipelines decide again. */
  readonly runs: { nodes: Decision; prefilter: Decision };
  /** The node filters' rejections by name, in their order. */
  readonly nodeRejections: ReadonlyMap<string, number>;
  /** Per disk: 1 where it passes the disk pre-filter, else 0. */
  readonly candidate: Uint8Array;
  /** Per disk: the pre-filter refusing it (index into DISK_PREFILTERS), or −1. */
  readonly #refusedBy: Int8Array;
  /** Per pre-filter: the disks it refuses. */
  readonly #refusals: Int32Array;
  readonly #prefilters: ReadonlyArray<BoundFilter | null>;
  /** Per table node: how many of its disks passed the pre-filter (none: "disks are unavailable" in its tiers). */
  readonly disksLeft: Int32Array;
  /** Per table node: its zone's number (0 … zones − 1). */
  readonly zoneOf: Int32Array;
  readonly zones: number;
  /** The table nodes of zone z: zoneNodes[zoneFirst[z] … zoneFirst[z + 1] − 1]. */
  readonly zoneFirst: Int32Array;
  readonly zoneNodes: Int32Array;
  /** Indices into `nodes` of the schedulable ones (the table's nodes). */
  readonly #schedulableAt: number[];
  /** Node tag verdicts by selector (a few: see KEPT_ROWS). */
  readonly #tags = new Map<string, { tagged: Uint8Array; rejected: number }>();
  #work: Work | null = null;
  #pressured: { percentage: number; nodes: Uint8Array } | null = null;
  #unused: { tagged: Uint8Array; among: Int32Array; nodesWithoutDisks: number } | null = null;

  constructor(nodes: readonly NodeView[], settings: ReplicaSettings, now: number, staleAfterSeconds: number) {
    this.nodes = nodes.slice();
    this.settings = settings;
    this.now = now;
    this.staleAfterSeconds = staleAfterSeconds;
    const nodeRun = schedulablePipeline.decide(nodes, { settings, now, staleAfterSeconds, nodeSelector: [] }, { limit: 0 });
    this.nodeRejections = nodeRun.rejections();
    const refused = new Uint8Array(nodes.length);
    for (const r of nodeRun.rejected()) refused[r.index] = 1;
    this.#schedulableAt = [];
    for (let i = 0; i < nodes.length; i++) if (refused[i] === 0) this.#schedulableAt.push(i);
    const table = (this.table = new DiskTable(this.#schedulableAt.map((i) => nodes[i]!)));

    const prefilterRun = prefilterPipeline.decide(table, { settings }, { limit: 0 });
    this.runs = { nodes: nodeRun, prefilter: prefilterRun };
    this.#prefilters = DISK_PREFILTERS.map((f) => f.prepare(table, { settings }));
    this.candidate = new Uint8Array(table.length).fill(1);
    this.#refusedBy = new Int8Array(table.length).fill(-1);
    this.#refusals = new Int32Array(DISK_PREFILTERS.length);
    const stage = new Map(DISK_PREFILTERS.map((f, j) => [f.name, j]));
    for (const r of prefilterRun.rejected()) {
      const j = stage.get(r.stage)!;
      this.candidate[r.index] = 0;
      this.#refusedBy[r.index] = j;
      this.#refusals[j]!++;
    }
    this.disksLeft = new Int32Array(table.nodes.length);
    for (let i = 0; i < table.length; i++) this.disksLeft[table.nodeOf[i]!]! += this.candidate[i]!;

    const zones = new Map<string, number>();
    this.zoneOf = new Int32Array(table.nodes.length);
    for (let k = 0; k < table.nodes.length; k++) {
      const zone = table.nodes[k]!.zone;
      let z = zones.get(zone);
      if (z === undefined) zones.set(zone, (z = zones.size));
      this.zoneOf[k] = z;
    }
    this.zones = zones.size;
    // The nodes grouped by zone (counting sort).
    this.zoneFirst = new Int32Array(this.zones + 1);
    for (let k = 0; k < table.nodes.length; k++) this.zoneFirst[this.zoneOf[k]! + 1]!++;
    for (let z = 0; z < this.zones; z++) this.zoneFirst[z + 1]! += this.zoneFirst[z]!;
    this.zoneNodes = new Int32Array(table.nodes.length);
    const next = this.zoneFirst.slice(0, this.zones);
    for (let k = 0; k < table.nodes.length; k++) this.zoneNodes[next[this.zoneOf[k]!]!++] = k;
  }

  /** Whether this is what a decision on these nodes, settings and clock reading would decide (nodes by identity). */
  describes(nodes: readonly NodeView[], settings: ReplicaSettings, now: number, staleAfterSeconds: number): boolean {
    if (settings !== this.settings || staleAfterSeconds !== this.staleAfterSeconds) return false;
    if (staleAfterSeconds > 0 && now !== this.now) return false;
    if (nodes.length !== this.nodes.length) return false;
    for (let i = 0; i < nodes.length; i++) if (nodes[i] !== this.nodes[i]) return false;
    return true;
  }

  /** Takes in these disks' storageScheduled where it changed, with the pre-filter's verdicts on them. */
  refresh(disks: Iterable<readonly [node: string, disk: string]>): void {
    const { candidate, disksLeft, table } = this;
    for (const [node, disk] of disks) {
      const i = table.diskIndex(node, disk);
      if (i < 0 || !table.refresh(i)) continue;
      const was = this.#refusedBy[i]!;
      const now = this.#refusal(i);
      if (now === was) continue;
      if (was >= 0) this.#refusals[was]!--;
      if (now >= 0) this.#refusals[now]!++;
      this.#refusedBy[i] = now;
      candidate[i] = now < 0 ? 1 : 0;
      this.#unused = null;
      disksLeft[table.nodeOf[i]!]! += now < 0 ? 1 : -1;
    }
  }

  /** The first pre-filter refusing disk i (as the engine runs them), or −1. */
  #refusal(i: number): number {
    for (let j = 0; j < this.#prefilters.length; j++) {
      const b = this.#prefilters[j]!;
      if (b !== null && ('row' in b ? b.row[i] !== 0 : b.check(i) !== null)) return j;
    }
    return -1;
  }

  /** The pre-filter's rejections, into `into` by name in the pre-filters' order (as the engine counts them). */
  addPrefilterRejections(into: Map<string, number>): void {
    for (let j = 0; j < DISK_PREFILTERS.length; j++) addCount(into, DISK_PREFILTERS[j]!.name, this.#refusals[j]!);
  }

  /**
   * The node tag filter over the schedulable nodes: per table node 1 where it passes, the rejections, and the
   * engine's run when this selector was decided just now (kept per selector and setting otherwise).
   */
  tags(request: NodeRequest): { tagged: Uint8Array; rejected: number; run: Decision | null } {
    const key = `${request.settings['allow-empty-node-selector-volume']} ${JSON.stringify(request.nodeSelector)}`;
    const kept = this.#tags.get(key);
    if (kept) return { ...kept, run: null };
    const run = nodeTagPipeline.decide(this.nodes, request, { among: this.#schedulableAt, limit: 0 });
    const tagged = new Uint8Array(this.table.nodes.length).fill(1);
    const rejected = run.rejected();
    for (const r of rejected) tagged[this.table.nodeIndex(this.nodes[r.index]!.name)] = 0;
    if (this.#tags.size >= KEPT_ROWS) this.#tags.clear();
    this.#tags.set(key, { tagged, rejected: rejected.length });
    return { tagged, rejected: rejected.length, run };
  }

  /** The buffers of a decision on this cluster, `inPass` zeroed (decisions are synchronous: one at a time). */
  work(): Work {
    this.#work ??= new Work(this.table.length, this.table.nodes.length, this.zones);
    this.#work.inPass.fill(0);
    return this.#work;
  }

  /**
   * A replica's candidates while the volume has no counted replica on a table node: every node the tags let in is
   * in NN (the first tier of every order), no other node in any tier, so the candidates are the pre-filtered disks
   * of the tagged nodes (kept for the last tag verdicts while the pre-filter's verdicts stand).
   */
  unused(tagged: Uint8Array): { among: Int32Array; nodesWithoutDisks: number } {
    if (this.#unused?.tagged !== tagged) {
      const { table, candidate } = this;
      const among: number[] = [];
      let nodesWithoutDisks = 0;
      for (let k = 0; k < table.nodes.length; k++) {
        if (tagged[k] === 0) continue;
        if (this.disksLeft[k] === 0) nodesWithoutDisks++;
        for (let i = table.first[k]!; i < table.first[k + 1]!; i++) if (candidate[i] === 1) among.push(i);
      }
      this.#unused = { tagged, among: Int32Array.from(among), nodesWithoutDisks };
    }
    return this.#unused;
  }

  /** Per table node: 1 where a disk is under replica-auto-balance disk pressure at this percentage. */
  pressured(percentage: number): Uint8Array {
    if (this.#pressured?.percentage !== percentage) {
      const nodes = Uint8Array.from(this.table.nodes, (n) => (percentage > 0 && n.disks.some((d) => diskUnderPressure(d, percentage)) ? 1 : 0));
      this.#pressured = { percentage, nodes };
    }
    return this.#pressured.nodes;
  }
}

/**
 * What a decision works in, per disk, table node and zone; kept with its cluster so that a decision allocates none
 * of it. Each is written before it is read in a decision but `inPass` (zeroed for each) and the usage flags
 * (filled for a decision's first replica, then moved on by its placements).
 */
class Work {
  readonly inPass: Float64Array;
  readonly replicasOnDisk: Int32Array;
  readonly rank: Int8Array;
  /** The replica's candidate disks; those of the best rank that pass the checks (placeWithoutTrace). */
  readonly among: Int32Array;
  readonly kept: Int32Array;
  /** Per placement check: what it was prepared as for the replica, and the disks it refused (placeWithoutTrace). */
  readonly bound: Array<BoundFilter | null> = [];
  readonly refused = new Int32Array(PLACEMENT_FILTERS.length);
  readonly nodeTier: Int8Array;
  /** Per table node and per zone: whether a counted replica is there, and whether all of those are being evicted (−1: none there). */
  readonly usedNode: Uint8Array;
  readonly nodeOnlyEvicting: Int8Array;
  readonly usedZone: Uint8Array;
  readonly zoneOnlyEvicting: Int8Array;

  constructor(disks: number, nodes: number, zones: number) {
    this.inPass = new Float64Array(disks);
    this.replicasOnDisk = new Int32Array(disks);
    this.rank = new Int8Array(disks);
    this.among = new Int32Array(disks);
    this.kept = new Int32Array(disks);
    this.nodeTier = new Int8Array(nodes);
    this.usedNode = new Uint8Array(nodes);
    this.nodeOnlyEvicting = new Int8Array(nodes);
    this.usedZone = new Uint8Array(zones);
    this.zoneOnlyEvicting = new Int8Array(zones);
  }
}

/**
 * A service's last cluster (see Cluster), handed to its next decision when it still describes the nodes. Its owner
 * tells it of every change of a disk's storageScheduled under the same node objects (`changed`: a claim or a
 * release on the disk), which the next decision takes in; anything else comes with new node objects.
 */
export class ScheduleCache {
  #cluster: Cluster | null = null;
  /** The disks changed since the last decision. */
  readonly #changed: Array<readonly [node: string, disk: string]> = [];

  changed(node: string, disk: string): void {
    if (this.#cluster) this.#changed.push([node, disk]);
  }

  cluster(nodes: readonly NodeView[], settings: ReplicaSettings, now: number, staleAfterSeconds: number): Cluster {
    const kept = this.#cluster;
    if (kept?.describes(nodes, settings, now, staleAfterSeconds)) {
      kept.refresh(this.#changed);
    } else {
      this.#cluster = new Cluster(nodes, settings, now, staleAfterSeconds);
    }
    this.#changed.length = 0;
    return this.#cluster!;
  }
}

export interface ScheduleInput {
  /** Every node Berth knows, sorted by name; each node's disks sorted by name. */
  nodes: readonly NodeView[];
  settings: ReplicaSettings;
  volume: VolumeSpec;
  /** Existing replicas of the volume (from the request and Berth's own). */
  replicas: readonly ReplicaRef[];
  now: number;
  staleAfterSeconds: number;
  explain: boolean;
  /** The final choice among the winning tier's disks; default Longhorn v1.11's balance selection (the bench swaps in ≤ v1.10's). */
  select?: (candidates: readonly DiskView[], size: number) => BalanceResult;
  /** explain_target: one node (all its disks) or one disk whose verdict to report, without the whole trace. */
  target?: { node: string; disk?: string };
  /** What the last decision kept (a service's): decisions without a trace reuse it while it describes `nodes`. */
  cache?: ScheduleCache;
}

export interface Placement {
  disk: DiskView;
  tier: TierName;
  how: BalanceHow;
}

export interface Unscheduled {
  /** Distinct reason keys, sorted. */
  reasons: string[];
  /** The keys joined with "; " (Longhorn's JoinReasons), or "replica scheduling failed" when there are none. */
  reason: string;
}

export interface RejectedEntry {
  node: string;
  disk?: string;
  filter: string;
  code: string;
  reason?: string;
  message: string;
}

export interface FilterStep {
  name: string;
  in: number;
  out: number;
  rejected: RejectedEntry[];
}

export interface TierTrace {
  tier: TierName;
  description: string;
  nodes: number;
  nodesWithoutDisks: string[];
  checks: FilterStep[];
  antiAffinity: { in: number; out: number; dropped: Array<{ node: string; disk: string; replicasOfVolume: number }>; soft: boolean };
  candidates: number;
  reasons: string[];
}

export interface ReplicaTrace {
  index: number;
  usedNodes: string[];
  usedZones: string[];
  tiers: TierTrace[];
  balance?: {
    how: BalanceHow;
    nodeStage: BalanceResult['nodeScores'];
    chosenNode: string | null;
    diskStage: BalanceResult['diskScores'];
  };
  result: { node: string; disk: string; tier: TierName } | { reason: string };
}

export interface ScheduleTrace {
  missingReplicas: number;
  effective: { replicaSoftAntiAffinity: boolean; replicaZoneSoftAntiAffinity: boolean; replicaDiskSoftAntiAffinity: boolean; replicaAutoBalanceBestEffort: boolean; tierOrder: TierName[] };
  schedulableNodes: FilterStep[];
  nodeTags: FilterStep;
  diskPrefilter: FilterStep[];
  replicas: ReplicaTrace[];
}

export interface ScheduleResult {
  missing: number;
  placements: Placement[];
  unscheduled: Unscheduled[];
  /** Rejections per filter name, for metrics. */
  rejections: Map<string, number>;
  /** Nodes considered and nodes found schedulable (for the decision log line). */
  candidates: number;
  passed: number;
  trace?: ScheduleTrace;
  /** The verdict on ScheduleInput.target. */
  targetVerdict?: TargetVerdict;
}

/** One filter's verdict on the target: passed, or refused with its code and the sentence with the numbers. */
export type FilterVerdict = { filter: string; passed: true } | { filter: string; passed: false; code: string; reason?: string; message: string };

/** explain_target: what every filter said about one node and its disks, replica by replica, and their scores. */
export interface TargetVerdict {
  node: string;
  /** The node filters, then the node tag filter (which every tier but U applies), up to the first refusal. */
  nodeFilters: FilterVerdict[];
  /** The disk pre-filter per disk of the target, up to each disk's first refusal. */
  diskPrefilter: Array<{ disk: string; filters: FilterVerdict[] }>;
  replicas: Array<{
    index: number;
    /** The first tier in the order that lists the node for this replica, or null (no tier: not considered). */
    tier: TierName | null;
    disks: Array<{
      disk: string;
      /** The disk checks and disk anti-affinity, up to the first refusal; empty when the disk was not considered. */
      filters: FilterVerdict[];
      /** Among the winning tier's disks the balance selection chose from. */
      candidate: boolean;
      chosen: boolean;
      /** Balance scores when the disk was a candidate: its node's in the node stage, its own in the disk stage (null: skipped or not scored). */
      score?: { node: number | null; disk: number | null };
    }>;
    result: { node: string; disk: string; tier: TierName } | { reason: string };
  }>;
}


/** What a refusal says (the 409's detail): the distinct reason keys of every unscheduled replica, sorted and joined. */
export function failureDetail(unscheduled: readonly Unscheduled[]): string {
  return joinReasons(unscheduled.flatMap((u) => u.reasons)).reason;
}

function joinReasons(reasons: Iterable<string>): Unscheduled {
  const sorted = [...new Set(reasons)].sort();
  return { reasons: sorted, reason: sorted.length > 0 ? sorted.join('; ') : FAILURE_REASON.schedulingFailed };
}

/** The first position p < count with nodeOf[among[p]] ≥ k (among is in node order), or count. */
function firstOfNode(among: Int32Array, count: number, nodeOf: Int32Array, k: number): number {
  let lo = 0;
  let hi = count;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (nodeOf[among[mid]!]! < k) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** A failed replica that Longhorn would not reuse (eviction requested; Berth's refs always have node and disk). */
const ignoredFailed = (r: ReplicaRef): boolean => r.failed && r.evictionRequested;

function addCount(into: Map<string, number>, name: string, n: number): void {
  if (n > 0) into.set(name, (into.get(name) ?? 0) + n);
}

function addCounts(into: Map<string, number>, decision: Decision): void {
  for (const [name, n] of decision.rejections()) addCount(into, name, n);
}

/** A rejected candidate as the trace shows it; `name` gives node (and disk) names for the index. */
function entry(decision: Decision, r: Rejected, names: (i: number) => { node: string; disk?: string }): RejectedEntry {
  const reason = REPLICA_FILTERS[r.stage]?.reasonKey ?? null;
  return { ...names(r.index), filter: r.stage, code: r.code, ...(reason ? { reason } : {}), message: decision.reason(r) };
}

/** Each filter stage of a decision with the candidates it rejected, in candidate order. */
function steps(decision: Decision, names: (i: number) => { node: string; disk?: string }): FilterStep[] {
  const byStage = new Map<string, RejectedEntry[]>();
  for (const r of decision.rejected()) {
    let list = byStage.get(r.stage);
    if (!list) byStage.set(r.stage, (list = []));
    list.push(entry(decision, r, names));
  }
  return decision.stages.map((s) => ({ name: s.name, in: s.in, out: s.out, rejected: byStage.get(s.name) ?? [] }));
}

/** What a decision's stages said about candidate i: each stage it passed, then the one that refused it (if any). */
function verdicts(decision: Decision, i: number, rejected: ReadonlyMap<number, Rejected>): FilterVerdict[] {
  const out: FilterVerdict[] = [];
  const refusal = rejected.get(i);
  for (const stage of decision.stages) {
    if (stage.kind !== 'filter') continue;
    if (refusal && refusal.stage === stage.name) {
      const reason = REPLICA_FILTERS[stage.name]?.reasonKey ?? null;
      out.push({ filter: stage.name, passed: false, code: refusal.code, ...(reason ? { reason } : {}), message: decision.reason(refusal) });
      return out;
    }
    out.push({ filter: stage.name, passed: true });
  }
  return out;
}

/** The distinct names (or zones) of the used table nodes, sorted (for the trace). */
function usedNames(nodes: readonly NodeView[], used: Uint8Array, name: (n: NodeView) => string): string[] {
  return [...new Set(nodes.filter((_, k) => used[k] === 1).map(name))].sort();
}

const byIndex = (decision: Decision): Map<number, Rejected> => new Map(decision.rejected().map((r) => [r.index, r]));

export function scheduleVolume(input: ScheduleInput): ScheduleResult {
  const { settings, volume, explain, nodes } = input;
  const nodeSoft = effectiveSoft(volume.replicaSoftAntiAffinity, settings['replica-soft-anti-affinity']);
  const zoneSoft = effectiveSoft(volume.replicaZoneSoftAntiAffinity, settings['replica-zone-soft-anti-affinity']);
  const diskSoft = effectiveSoft(volume.replicaDiskSoftAntiAffinity, settings['replica-disk-soft-anti-affinity']);
  const order = tierOrder(zoneSoft, nodeSoft);
  const bestEffort = effectiveAutoBalance(volume.replicaAutoBalance, settings['replica-auto-balance']) === 'best-effort';
  const rejections = new Map<string, number>();

  // Longhorn replenishes until the usable replicas (not failed, not being evicted) reach numberOfReplicas.
  const refs = input.replicas;
  const usable = refs.filter((r) => !r.failed && !r.evictionRequested).length;
  const missing = Math.max(0, volume.numberOfReplicas - usable);

  // Once per request (or kept from the last one): schedulable nodes, node tags, disk pre-filter. They depend on
  // reported status only. A trace reads the engine's runs themselves, so it decides them afresh.
  const traced = explain || input.target !== undefined;
  const cluster = input.cache && !traced
    ? input.cache.cluster(nodes, settings, input.now, input.staleAfterSeconds)
    : new Cluster(nodes, settings, input.now, input.staleAfterSeconds);
  const { table, candidate, disksLeft, zoneOf } = cluster;
  const schedulable = table.nodes;
  for (const [name, n] of cluster.nodeRejections) addCount(rejections, name, n);
  const nodeName = (i: number) => ({ node: nodes[i]!.name });
  const schedulableNodes = explain ? steps(cluster.runs.nodes, nodeName) : [];

  const nodeRequest: NodeRequest = { settings, now: input.now, staleAfterSeconds: input.staleAfterSeconds, nodeSelector: volume.nodeSelector };
  const tags = cluster.tags(nodeRequest);
  addCount(rejections, NodeTags.name, tags.rejected);
  const nodeTags = explain ? (steps(tags.run!, nodeName)[0] ?? { name: NodeTags.name, in: 0, out: 0, rejected: [] }) : null;
  // Per table node: passes the node tag filter (the tier lists but U are built from these).
  const { tagged } = tags;

  cluster.addPrefilterRejections(rejections);
  const diskName = (i: number) => ({ node: table.disks[i]!.node, disk: table.disks[i]!.name });
  const diskPrefilter = explain ? steps(cluster.runs.prefilter, diskName) : [];

  // explain_target: the target's node (in `nodes` and in the table) and its disks in the table.
  const target = input.target;
  let verdict: TargetVerdict | undefined;
  let targetDisks: number[] = [];
  const targetNode = target ? table.nodeIndex(target.node) : -1;
  if (target) {
    const at = nodes.findIndex((n) => n.name === target.node);
    const k = targetNode;
    const { nodes: nodeRun, prefilter: prefilterRun } = cluster.runs;
    const nodeFilters = at < 0 ? [] : verdicts(nodeRun, at, byIndex(nodeRun));
    if (k >= 0) {
      nodeFilters.push(...verdicts(tags.run!, at, byIndex(tags.run!)));
      for (let i = table.first[k]!; i < table.first[k + 1]!; i++) {
        if (target.disk === undefined || table.disks[i]!.name === target.disk) targetDisks.push(i);
      }
    }
    const prefiltered = byIndex(prefilterRun);
    verdict = {
      node: target.node, nodeFilters,
      diskPrefilter: targetDisks.map((i) => ({ disk: table.disks[i]!.name, filters: verdicts(prefilterRun, i, prefiltered) })),
      replicas: [],
    };
    targetDisks = targetDisks.filter((i) => candidate[i] === 1);
  }

  const trace: ScheduleTrace | undefined = explain
    ? {
      missingReplicas: missing,
      effective: { replicaSoftAntiAffinity: nodeSoft, replicaZoneSoftAntiAffinity: zoneSoft, replicaDiskSoftAntiAffinity: diskSoft, replicaAutoBalanceBestEffort: bestEffort, tierOrder: order },
      schedulableNodes,
      nodeTags: nodeTags!,
      diskPrefilter,
      replicas: [],
    }
    : undefined;

  const placements: Placement[] = [];
  const unscheduled: Unscheduled[] = [];
  const work = cluster.work();
  const { among, usedNode, usedZone, nodeOnlyEvicting, zoneOnlyEvicting } = work;
  const request: DiskRequest = {
    settings, volume, diskSoft,
    inPass: work.inPass,
    placed: [],
    replicasOnDisk: work.replicasOnDisk,
    nodeTier: work.nodeTier,
    rank: work.rank,
    select: input.select,
    scores: traced,
    selection: null,
    space: null,
  };
  // replica-auto-balance best-effort widens two tiers (reference §3.4): a used node with a disk under pressure is
  // also a "new node", and any only-evicting node qualifies for EZ.
  const pressured = bestEffort ? cluster.pressured(settings['replica-auto-balance-disk-pressure-percentage']) : null;

  const usage: Usage = {
    tagged, zoneOf, pressured, bestEffort, usedNode, usedZone, nodeOnlyEvicting, zoneOnlyEvicting,
  };
  const codes = Int8Array.from(order, (tier) => TIER_CODES[tier]);
  const lists = (tier: TierName, k: number): boolean => listedBy(TIER_CODES[tier], k, usage);
  // The zone of the last placement (−1: none since the walk): the one zone whose nodes' tiers it can change.
  let placedZone = -1;
  // The candidates (pre-filtered disks of the nodes some tier lists: PreFilter narrowing) and the listed nodes
  // without any.
  let count = 0;
  let nodesWithoutDisks = 0;
  for (let index = 0; index < missing; index++) {
    if (index === 0) {
      // Who is used: the counted replicas on schedulable nodes; the anti-affinity counts per disk. Later replicas
      // take in their predecessors' placements one by one.
      usedNode.fill(0);
      usedZone.fill(0);
      nodeOnlyEvicting.fill(-1);
      zoneOnlyEvicting.fill(-1);
      request.replicasOnDisk.fill(0);
      let counted = false;
      for (const r of refs) {
        if (ignoredFailed(r)) continue;
        const at = table.diskIndex(r.node, r.disk);
        if (at >= 0) request.replicasOnDisk[at]!++;
        const k = table.nodeIndex(r.node);
        if (k < 0) continue;
        counted = true;
        const z = zoneOf[k]!;
        if (r.evictionRequested) {
          if (nodeOnlyEvicting[k] === -1) nodeOnlyEvicting[k] = 1;
          if (zoneOnlyEvicting[z] === -1) zoneOnlyEvicting[z] = 1;
        } else {
          nodeOnlyEvicting[k] = 0;
          zoneOnlyEvicting[z] = 0;
        }
        usedNode[k] = 1;
        usedZone[z] = 1;
      }
      if (!counted) {
        const unused = cluster.unused(tagged);
        for (let k = 0; k < schedulable.length; k++) request.nodeTier[k] = tagged[k] === 1 ? 0 : -1;
        request.rank.fill(0);
        among.set(unused.among);
        count = unused.among.length;
        nodesWithoutDisks = unused.nodesWithoutDisks;
      } else {
        for (let k = 0; k < schedulable.length; k++) {
          const tier = firstTier(codes, k, usage);
          request.nodeTier[k] = tier;
          if (tier < 0) continue;
          if (disksLeft[k] === 0) nodesWithoutDisks++;
          for (let i = table.first[k]!; i < table.first[k + 1]!; i++) {
            if (candidate[i] === 0) continue;
            among[count++] = i;
            request.rank[i] = 2 * tier + (request.replicasOnDisk[i]! > 0 ? 1 : 0);
          }
        }
      }
    } else if (placedZone >= 0) {
      // Only the nodes of the last placement's zone may be listed by another tier now, and only by a later one or
      // none: the placement takes NN and EZ from its zone and N and E from its node (the U it may give its node
      // comes to a node listed already). A node no tier lists any more takes its disksLeft candidates out of
      // `among` (in node order: they start where the first candidate of a later node would).
      for (let j = cluster.zoneFirst[placedZone]!; j < cluster.zoneFirst[placedZone + 1]!; j++) {
        const k = cluster.zoneNodes[j]!;
        const was = request.nodeTier[k]!;
        const tier = firstTier(codes, k, usage);
        request.nodeTier[k] = tier;
        if (was >= 0 && tier < 0) {
          const m = disksLeft[k]!;
          if (m === 0) {
            nodesWithoutDisks--;
          } else {
            const p = firstOfNode(among, count, table.nodeOf, k);
            among.copyWithin(p, p + m, count);
            count -= m;
          }
        }
        if (tier < 0) continue;
        for (let i = table.first[k]!; i < table.first[k + 1]!; i++) {
          if (candidate[i] === 1) request.rank[i] = 2 * tier + (request.replicasOnDisk[i]! > 0 ? 1 : 0);
        }
      }
      placedZone = -1;
    }
    const nodeWithoutDisks = nodesWithoutDisks > 0;

    const replicaTrace: Pick<ReplicaTrace, 'index' | 'usedNodes' | 'usedZones' | 'tiers'> | undefined = explain
      ? { index, usedNodes: usedNames(schedulable, usedNode, (n) => n.name), usedZones: usedNames(schedulable, usedNode, (n) => n.zone), tiers: [] }
      : undefined;
    if (schedulable.length === 0) {
      const u = joinReasons([FAILURE_REASON.nodesUnavailable]);
      unscheduled.push(u);
      if (replicaTrace) trace!.replicas.push({ ...replicaTrace, result: { reason: u.reason } });
      verdict?.replicas.push({ index, tier: null, disks: [], result: { reason: u.reason } });
      continue;
    }

    request.selection = null;
    let chosen = traced ? -1 : placeWithoutTrace(table, request, among, count, work, rejections);
    // A trace reads the run over every candidate, and so does a miss (its reasons).
    const decision = chosen < 0 ? placementPipeline.decide(table, request, { among: among.subarray(0, count) }) : null;
    if (decision) {
      addCounts(rejections, decision);
      chosen = decision.chosen;
    }
    const winner = chosen >= 0 ? request.nodeTier[table.nodeOf[chosen]!]! : -1;
    if (replicaTrace) replicaTrace.tiers = tierTraces(table, decision!, order, winner, lists, disksLeft, candidate, request);
    const targetReplica = verdict ? targetOf(table, decision!, request, targetNode, targetDisks, order, antiAffinityTiers) : undefined;

    if (decision && chosen < 0) {
      // Every tier was tried: the reasons of every listed node's disks, "disks are unavailable" for a node without any.
      const reasons: string[] = nodeWithoutDisks ? [FAILURE_REASON.disksUnavailable] : [];
      for (const name of decision.rejections().keys()) {
        const key = REPLICA_FILTERS[name]?.reasonKey;
        if (key) reasons.push(key);
      }
      const u = joinReasons(reasons);
      unscheduled.push(u);
      if (replicaTrace) trace!.replicas.push({ ...replicaTrace, result: { reason: u.reason } });
      if (targetReplica) verdict!.replicas.push({ index, ...targetReplica, result: { reason: u.reason } });
      continue;
    }
    const balance = request.selection!;
    const disk = table.disks[chosen]!;
    const tier = order[winner]!;
    placements.push({ disk, tier, how: balance.how });
    // The placement counts from the next replica on, as a replica of the volume does in the walk over the refs.
    const k = table.nodeOf[chosen]!;
    request.replicasOnDisk[chosen]!++;
    usedNode[k] = 1;
    nodeOnlyEvicting[k] = 0;
    placedZone = zoneOf[k]!;
    usedZone[placedZone] = 1;
    zoneOnlyEvicting[placedZone] = 0;
    if (request.inPass[chosen] === 0) request.placed.push(chosen);
    request.inPass[chosen]! += volume.size;
    if (targetReplica) verdict!.replicas.push({ index, ...targetReplica, result: { node: disk.node, disk: disk.name, tier } });
    if (replicaTrace) {
      trace!.replicas.push({
        ...replicaTrace,
        balance: { how: balance.how, nodeStage: balance.nodeScores, chosenNode: balance.chosenNode, diskStage: balance.diskScores },
        result: { node: disk.node, disk: disk.name, tier },
      });
    }
  }

  return {
    missing, placements, unscheduled, rejections,
    candidates: nodes.length, passed: schedulable.length,
    ...(trace ? { trace } : {}),
    ...(verdict ? { targetVerdict: verdict } : {}),
  };
}

/** The target's disks in one replica's decision: their filters, whether they were candidates, their balance scores. */
function targetOf(
  table: DiskTable, decision: Decision, request: DiskRequest, k: number, disks: readonly number[], order: readonly TierName[],
  tiers: Tiers<DiskTable, DiskRequest>,
): Pick<TargetVerdict['replicas'][number], 'tier' | 'disks'> {
  const tierAt = k >= 0 ? request.nodeTier[k]! : -1;
  const rejected = byIndex(decision);
  const rank = tiers.prepare(table, request);
  const best = decision.chosen >= 0 ? rank(decision.chosen) : -1;
  const selection = request.selection;
  return {
    tier: tierAt >= 0 ? order[tierAt]! : null,
    disks: disks.map((i) => {
      const d = table.disks[i]!;
      if (tierAt < 0) return { disk: d.name, filters: [], candidate: false, chosen: false };
      const candidate = !rejected.has(i) && best >= 0 && rank(i) === best;
      const nodeScore = selection?.nodeScores.find((s) => s.node === d.node)?.score ?? null;
      const diskScore = selection?.chosenNode === d.node ? selection.diskScores.find((s) => s.disk === d.name)?.score ?? null : null;
      return {
        disk: d.name, filters: verdicts(decision, i, rejected), candidate, chosen: i === decision.chosen,
        ...(candidate ? { score: { node: nodeScore, disk: diskScore } } : {}),
      };
    }),
  };
}

/**
 * What each tier tried contributed to one replica's decision, read from the decision's rejections: a tier before
 * the winner had no candidate (so every disk of its nodes that passed the checks was dropped by anti-affinity), the
 * winner's candidates are the disks the engine kept. Without a winner every tier was tried.
 */
function tierTraces(
  table: DiskTable, decision: Decision, order: readonly TierName[], winner: number,
  lists: (tier: TierName, k: number) => boolean, disksLeft: Int32Array, candidate: Uint8Array, request: DiskRequest,
): TierTrace[] {
  const rejectedBy = new Map<number, RejectedEntry>();
  const diskName = (i: number) => ({ node: table.disks[i]!.node, disk: table.disks[i]!.name });
  for (const r of decision.rejected()) rejectedBy.set(r.index, entry(decision, r, diskName));
  // Kept disks hold a replica of the volume only when the winner fell back on them (soft anti-affinity).
  const keptOccupied = decision.chosen >= 0 && request.replicasOnDisk[decision.chosen]! > 0;
  const tried = winner >= 0 ? winner + 1 : order.length;
  const out: TierTrace[] = [];
  for (let t = 0; t < tried; t++) {
    const tier = order[t]!;
    const reasons = new Set<string>();
    const nodesWithoutDisks: string[] = [];
    const failed = new Map<string, RejectedEntry[]>(DISK_CHECKS.map((f) => [f.name, []]));
    const dropped: TierTrace['antiAffinity']['dropped'] = [];
    let nodeCount = 0;
    let checked = 0;
    let passed = 0;
    for (let k = 0; k < table.nodes.length; k++) {
      if (!lists(tier, k)) continue;
      nodeCount++;
      if (disksLeft[k] === 0) {
        nodesWithoutDisks.push(table.nodes[k]!.name);
        reasons.add(FAILURE_REASON.disksUnavailable);
        continue;
      }
      for (let i = table.first[k]!; i < table.first[k + 1]!; i++) {
        if (candidate[i] === 0) continue;
        checked++;
        const rejected = rejectedBy.get(i);
        const list = rejected ? failed.get(rejected.filter) : undefined;
        if (rejected && list) {
          list.push(rejected);
          if (rejected.reason) reasons.add(rejected.reason);
          continue;
        }
        passed++;
        const held = request.replicasOnDisk[i]!;
        if (held > 0 && (t !== winner || !keptOccupied)) dropped.push({ ...diskName(i), replicasOfVolume: held });
      }
    }
    const steps: FilterStep[] = [];
    let remaining = checked;
    for (const f of DISK_CHECKS) {
      const rejected = failed.get(f.name)!;
      steps.push({ name: f.name, in: remaining, out: remaining - rejected.length, rejected });
      remaining -= rejected.length;
    }
    const candidates = t === winner ? decision.passed : 0;
    out.push({
      tier, description: TIER_DESCRIPTIONS[tier], nodes: nodeCount, nodesWithoutDisks, checks: steps,
      antiAffinity: { in: passed, out: candidates, dropped, soft: request.diskSoft }, candidates, reasons: [...reasons].sort(),
    });
  }
  return out;
}
