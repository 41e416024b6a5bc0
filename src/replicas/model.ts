// The replica dialect's vocabulary: node and disk reports (Longhorn's node CR, flattened), volumes, replicas, and the
// disk table one decision runs the engine over.
import type { BalanceResult } from './balance.ts';
import type { ReplicaAutoBalance, ReplicaSettings } from './settings.ts';
import { minimalAvailable, provisionedLimit, usableStorage } from './space.ts';

type DiskType = 'filesystem' | 'block';
type DataEngine = 'v1' | 'v2';
export type SoftOverride = 'ignored' | 'enabled' | 'disabled';

/** A disk as reported in PUT /nodes/{name}. Bytes are safe non-negative integers. */
export interface DiskReport {
  path: string;
  type: DiskType;
  tags: string[];
  allowScheduling: boolean;
  evictionRequested: boolean;
  storageMaximum: number;
  storageAvailable: number;
  storageReserved: number;
  /** Space scheduled outside Berth; Berth adds its own replicas to it. */
  storageScheduled: number;
}

export interface NodeReport {
  zone: string;
  region: string;
  tags: string[];
  cordoned: boolean;
  ready: boolean;
  allowScheduling: boolean;
  evictionRequested: boolean;
  disks: Record<string, DiskReport>;
}

/** A disk as the scheduler sees it: the report plus Berth's own scheduled bytes folded into storageScheduled. */
export interface DiskView {
  /** "<node>/<disk>": node names cannot contain "/", so this is unique (Longhorn uses the disk UUID). */
  readonly id: string;
  readonly node: string;
  readonly name: string;
  readonly path: string;
  readonly type: DiskType;
  readonly tags: readonly string[];
  readonly allowScheduling: boolean;
  readonly evictionRequested: boolean;
  readonly storageMaximum: number;
  readonly storageAvailable: number;
  readonly storageReserved: number;
  /** Reported + Berth's replicas on this disk. */
  readonly storageScheduled: number;
}

export interface NodeView {
  readonly name: string;
  readonly zone: string;
  readonly region: string;
  readonly tags: readonly string[];
  readonly cordoned: boolean;
  readonly ready: boolean;
  readonly allowScheduling: boolean;
  readonly evictionRequested: boolean;
  /** Milliseconds since the epoch of the last PUT. */
  readonly reportedAt: number;
  /** Sorted by disk name. */
  readonly disks: readonly DiskView[];
}

export interface VolumeSpec {
  name: string;
  /** Bytes (Longhorn's spec.size). */
  size: number;
  /** Bytes actually written (Longhorn's status.actualSize); 0 for a new volume. */
  actualSize: number;
  numberOfReplicas: number;
  nodeSelector: string[];
  diskSelector: string[];
  dataEngine: DataEngine;
  replicaSoftAntiAffinity: SoftOverride;
  replicaZoneSoftAntiAffinity: SoftOverride;
  replicaDiskSoftAntiAffinity: SoftOverride;
  /** Overrides replica-auto-balance unless `ignored`. */
  /** Empty is Longhorn's "ignored" (its volume webhook fills it in). */
  replicaAutoBalance: ReplicaAutoBalance | 'ignored' | '';
}

/**
 * A replica of the volume that takes part in the decision: existing ones from the request, the ones Berth placed
 * earlier (both already inside the disks' storageScheduled) and the ones placed earlier in the same pass
 * (`inStatus: false`, added to their disk for the space check only, like Longhorn's in-cycle accounting).
 */
export interface ReplicaRef {
  node: string;
  disk: string;
  failed: boolean;
  evictionRequested: boolean;
  size: number;
  inStatus: boolean;
}

/** Where a replica would go: a dry run's answer, which claims nothing and so names nothing. */
export type ProposedReplica = Omit<ReplicaRecord, 'name' | 'createdAt' | 'createdBy'>;

/** A replica Berth placed (hard state, persisted). */
export interface ReplicaRecord {
  name: string;
  volume: string;
  node: string;
  disk: string;
  diskPath: string;
  size: number;
  createdAt: string;
  /** Who claimed it: the token name or JWT subject; null without authentication (or placed before it existed). */
  createdBy: string | null;
}

export const diskId = (node: string, disk: string): string => `${node}/${disk}`;

/** How many verdict rows per request key (node or disk selector, engine) a kept table or cluster holds at most. */
export const KEPT_ROWS = 16;

/**
 * The disks of the schedulable nodes of one request, in node-name then disk-name order: the candidate set the engine
 * addresses by index. The nodes and disks are read, never changed. A table may serve several requests (see
 * scheduler.ts's ScheduleCache): storageScheduled is the one figure of a disk that may change meanwhile (any other
 * change comes with a new node view), and `refresh` takes it in for the disks it is told of.
 */
export class DiskTable {
  readonly nodes: readonly NodeView[];
  readonly disks: readonly DiskView[];
  /** Per disk: the index of its node in `nodes`. */
  readonly nodeOf: Int32Array;
  /** Per node: the index of its first disk (disks of node k are first[k] … first[k + 1] − 1). */
  readonly first: Int32Array;
  /** Per disk: its space figures, as the space checks read them (storageScheduled as of the last refresh). */
  readonly maximum: Float64Array;
  readonly available: Float64Array;
  readonly reserved: Float64Array;
  readonly scheduled: Float64Array;
  /** Per disk: the balance selection's usable figure (status figures only, reference §3.7). */
  readonly usable: Float64Array;
  /**
   * Verdict rows that read only what never changes under a table (a disk's type, tags), by filter and request key;
   * at most KEPT_ROWS of them (requests name their selectors: a table keeps the few in use, not every one seen).
   */
  readonly rows = new Map<string, { row: Uint8Array; rejects: boolean }>();
  #thresholds: { minPct: number; opPct: number; minimal: Float64Array; limit: Float64Array } | null = null;

  /** `nodes` sorted by name, each node's disks by name. */
  constructor(nodes: readonly NodeView[]) {
    this.nodes = nodes;
    let n = 0;
    for (const node of nodes) n += node.disks.length;
    const disks: DiskView[] = new Array(n);
    const first = new Int32Array(nodes.length + 1);
    const nodeOf = new Int32Array(n);
    this.maximum = new Float64Array(n);
    this.available = new Float64Array(n);
    this.reserved = new Float64Array(n);
    this.scheduled = new Float64Array(n);
    this.usable = new Float64Array(n);
    let i = 0;
    for (let k = 0; k < nodes.length; k++) {
      first[k] = i;
      for (const d of nodes[k]!.disks) {
        disks[i] = d;
        nodeOf[i] = k;
        this.maximum[i] = d.storageMaximum;
        this.available[i] = d.storageAvailable;
        this.reserved[i] = d.storageReserved;
        this.#take(i++, d);
      }
    }
    first[nodes.length] = n;
    this.disks = disks;
    this.first = first;
    this.nodeOf = nodeOf;
  }

  /** Per disk: the space checks' thresholds at these percentages (minimalAvailable, provisionedLimit), kept for the last pair. */
  thresholds(minimalAvailablePercentage: number, overProvisioningPercentage: number): { minimal: Float64Array; limit: Float64Array } {
    const kept = this.#thresholds;
    if (kept?.minPct === minimalAvailablePercentage && kept.opPct === overProvisioningPercentage) return kept;
    const minimal = new Float64Array(this.disks.length);
    const limit = new Float64Array(this.disks.length);
    for (let i = 0; i < this.disks.length; i++) {
      minimal[i] = minimalAvailable(this.maximum[i]!, minimalAvailablePercentage);
      limit[i] = provisionedLimit(this.maximum[i]!, this.reserved[i]!, overProvisioningPercentage);
    }
    this.#thresholds = { minPct: minimalAvailablePercentage, opPct: overProvisioningPercentage, minimal, limit };
    return this.#thresholds;
  }

  /** Takes in disk i's storageScheduled; false when it had not changed. */
  refresh(i: number): boolean {
    const d = this.disks[i]!;
    if (d.storageScheduled === this.scheduled[i]) return false;
    this.#take(i, d);
    return true;
  }

  #take(i: number, d: DiskView): void {
    this.scheduled[i] = d.storageScheduled;
    this.usable[i] = usableStorage(d);
  }

  get length(): number {
    return this.disks.length;
  }

  /** The index of the named node (binary search by name), or −1. */
  nodeIndex(name: string): number {
    let lo = 0;
    let hi = this.nodes.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const n = this.nodes[mid]!.name;
      if (n === name) return mid;
      if (n < name) lo = mid + 1;
      else hi = mid - 1;
    }
    return -1;
  }

  /** The index of a disk, or −1 when its node is not in the table or has no such disk. */
  diskIndex(node: string, disk: string): number {
    const k = this.nodeIndex(node);
    if (k < 0) return -1;
    for (let i = this.first[k]!; i < this.first[k + 1]!; i++) if (this.disks[i]!.name === disk) return i;
    return -1;
  }
}

/** What the node filters read: the settings, the clock, the staleness limit and the volume's node selector. */
export interface NodeRequest {
  settings: ReplicaSettings;
  /** Milliseconds since the epoch. */
  now: number;
  /** 0 trusts reports forever. */
  staleAfterSeconds: number;
  nodeSelector: readonly string[];
}

/** What the disk pre-filter reads (it does not depend on the volume). */
export interface DiskPrefilterRequest {
  settings: ReplicaSettings;
}

/** The placement of one replica: the volume, the effective disk anti-affinity and the state of the pass so far. */
export interface DiskRequest {
  settings: ReplicaSettings;
  volume: VolumeSpec;
  /** replica-disk-soft-anti-affinity after the volume's override. */
  diskSoft: boolean;
  /** Per disk: bytes of this volume's replicas placed earlier in the pass (in-cycle accounting, v1.11.1+). */
  inPass: Float64Array;
  /** The disks with bytes in `inPass`, in placement order. */
  placed: number[];
  /** Per disk: the volume's replicas that count for disk anti-affinity. */
  replicasOnDisk: Int32Array;
  /** Per node of the table: the position in the tier order of the first tier that lists it, or −1 (no tier). */
  nodeTier: Int8Array;
  /** Per disk among this replica's candidates: its rank, 2 × its node's tier + 1 when it holds a replica of the volume. */
  rank: Int8Array;
  /** The final choice among the winning tier's disks; default the balance selection (the bench swaps in ≤ v1.10's). */
  select?: ((candidates: readonly DiskView[], size: number) => BalanceResult) | undefined;
  /** Whether the selection names its node and disk scores (a trace or explain_target reads them). */
  scores: boolean;
  /** Left by the selector: the whole result of the last selection (its scores go into the trace). */
  selection: BalanceResult | null;
  /** The space check's verdicts for this request, computed for its first replica and reused for the next ones. */
  space: Uint8Array | null;
}
