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
  #space: StatusSpace | null = null;
  /** At least every storageScheduled the table held (statusSpace's exactness bound). */
  #maxScheduled = 0;

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
    if (d.storageScheduled > this.#maxScheduled) this.#maxScheduled = d.storageScheduled;
    this.#space?.changed.push(i);
  }

  /**
   * The space check's verdicts on the status figures (`fails(i)`: 1 refuses disk i) for a volume of `size` bytes,
   * `key` naming what else they read (actual size, percentages). Kept from one call to the next: with the same key
   * only `size` and the disks refreshed meanwhile can change a verdict, and `size` only on disks whose scheduling
   * room (provisioned limit − storageScheduled, `limit[i]` − scheduled) lies between the two sizes — found in the
   * disks sorted by that room, and decided again by `fails` itself. The figures are integers below 2^53, so the
   * room is exact; a sum that could reach 2^53 decides every disk again. The row is the kept one: read it, copy it
   * to change it.
   */
  statusSpace(key: string, size: number, limit: Float64Array, fails: (i: number) => number): Uint8Array {
    const n = this.disks.length;
    const kept = this.#space;
    if (kept?.key !== key || kept.limit !== limit || !(size + this.#maxScheduled < 2 ** 53)) {
      const row = new Uint8Array(n);
      for (let i = 0; i < n; i++) row[i] = fails(i);
      this.#space = { key, limit, size, row, changed: [], sorted: null };
      return row;
    }
    const { row, changed } = kept;
    if (!kept.sorted) {
      // The second call with this key: from now on the disks are kept in order of their room.
      let max = 0;
      for (let i = 0; i < n; i++) max = Math.max(max, limit[i]!);
      if (!(max < 2 ** 53)) {
        for (let i = 0; i < n; i++) row[i] = fails(i);
        changed.length = 0;
        kept.size = size;
        return row;
      }
      const room = new Float64Array(n);
      for (let i = 0; i < n; i++) room[i] = limit[i]! - this.scheduled[i]!;
      const order = Int32Array.from({ length: n }, (_, i) => i).sort((a, b) => room[a]! - room[b]! || a - b);
      const position = new Int32Array(n);
      for (let p = 0; p < n; p++) position[order[p]!] = p;
      kept.sorted = { room, order, position };
    }
    const { room, order, position } = kept.sorted;
    for (const i of changed) {
      // Its room changed: move it to its place in the order, then decide it again.
      const r = limit[i]! - this.scheduled[i]!;
      room[i] = r;
      let p = position[i]!;
      while (p > 0 && room[order[p - 1]!]! > r) {
        order[p] = order[p - 1]!;
        position[order[p]!] = p--;
      }
      while (p < n - 1 && room[order[p + 1]!]! < r) {
        order[p] = order[p + 1]!;
        position[order[p]!] = p++;
      }
      order[p] = i;
      position[i] = p;
      row[i] = fails(i);
    }
    changed.length = 0;
    if (size !== kept.size) {
      // size > room refuses: the verdicts change where lo ≤ room < hi.
      const lo = Math.min(size, kept.size);
      const hi = Math.max(size, kept.size);
      for (let p = firstAtLeast(order, room, lo); p < n && room[order[p]!]! < hi; p++) row[order[p]!] = fails(order[p]!);
      kept.size = size;
    }
    return row;
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

/** DiskTable.statusSpace's kept verdicts, and the disks in order of their scheduling room once asked twice. */
interface StatusSpace {
  key: string;
  limit: Float64Array;
  size: number;
  row: Uint8Array;
  /** Disks refreshed since the last call. */
  changed: number[];
  /** Per disk its room; the disks by room (ties by index) and each one's position there. */
  sorted: { room: Float64Array; order: Int32Array; position: Int32Array } | null;
}

/** The first position p in `order` (sorted by room) with room[order[p]] ≥ value, or order.length. */
function firstAtLeast(order: Int32Array, room: Float64Array, value: number): number {
  let lo = 0;
  let hi = order.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (room[order[mid]!]! < value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
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
