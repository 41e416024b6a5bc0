// POST /replicas/headroom: how many more new volumes like one get every replica placed, one after another, each
// claimed as POST /replicas/schedule claims it — without deciding each volume from scratch.
//
// Why an incremental walk is exact: for a new volume only the disks' storageScheduled changes from one volume to the
// next. The node filters, node tags, disk pre-filter (its space condition at size 0 holds forever once a replica's
// size + scheduled ≤ limit held), type, tags and the actual-space condition judge what claims do not change; so the
// state is, per disk, its scheduled bytes, and per node the usable total and the best disk over its disks that still
// have room. Each replica of a volume goes to the first tier with a candidate — new zone (NN), new node (N), used
// node (U) — and the balance selection's node stage there needs only the set's extremes, sum and count (its score
// (max − min)/mean moves with one node's value only through them), which two segment trees answer in O(log n) with
// the used zones or nodes left out. Mostly it needs less: in the NN tier a node whose total no other node of the set
// has wins when it takes the size, and with every total below the size the set's disk with the most usable wins;
// per-zone heaps answer both, and the trees catch up only for a replica that needs them. The disk stage runs on the
// chosen node's few disks, the U tier (a handful of used nodes) through the balance selection itself, and a node's
// one disk with the most usable wins its disk stage. One replica per volume has a closed form: every disk with room
// is a candidate until it is full, so the count is the sum over disks of the volumes each has room for.
// The refusal's sentence comes from the scheduler itself, once, on the state the walk reached.
// Pure: the nodes, settings, clock and volume in, numbers and the scheduler's own sentences out.
import { DEGENERATE_SCORE, scoresInto, selectByBalance, type BalanceDisk } from './balance.ts';
import { DiskTable, type DiskView, type NodeView, type VolumeSpec } from './model.ts';
import { failureDetail, nodeRefusal, scheduleVolume, tierOrder } from './scheduler.ts';
import { effectiveAutoBalance, effectiveSoft, type ReplicaSettings } from './settings.ts';
import { diskUnderPressure, provisionedLimit, selectorsInTags, spaceFailure } from './space.ts';

/** How many more volumes fit (POST /replicas/headroom). */
export interface Headroom {
  fits: number;
  /** `max` was reached: more may fit. */
  truncated: boolean;
  /** Why the next volume would not get every replica placed (the refusal's detail); null when truncated. */
  limit: string | null;
}

export interface HeadroomInput {
  /** Every node, sorted by name, each node's disks by name (as the scheduler takes them). */
  nodes: readonly NodeView[];
  settings: ReplicaSettings;
  /** A new volume: no replicas yet. */
  volume: VolumeSpec;
  max: number;
  now: number;
  staleAfterSeconds: number;
  /** Told each counted volume's disks, in placement order (the property test compares the walk's with the reference's). */
  placed?: (disks: readonly string[]) => void;
}

type Scratch = { -readonly [K in keyof DiskView]: DiskView[K] };

/** The nodes with copies of their disks, whose storageScheduled a walk may change. */
function scratchNodes(nodes: readonly NodeView[]): NodeView[] {
  return nodes.map((n) => ({ ...n, disks: n.disks.map((d): Scratch => ({ ...d })) }));
}

/** The reference: the scheduler decides each volume on a copy, and its placements join their disks. */
export function sequentialHeadroom(input: HeadroomInput, start = 0): Headroom {
  const { settings, volume, max, now, staleAfterSeconds } = input;
  const nodes = start === 0 ? scratchNodes(input.nodes) : input.nodes;
  for (let fits = start; fits < max; fits++) {
    const result = scheduleVolume({ nodes, settings, volume, replicas: [], explain: false, now, staleAfterSeconds });
    if (result.unscheduled.length > 0) return { fits, truncated: false, limit: failureDetail(result.unscheduled) };
    for (const p of result.placements) (p.disk as Scratch).storageScheduled += volume.size;
    input.placed?.(result.placements.map((p) => p.disk.id));
  }
  return { fits: max, truncated: true, limit: null };
}

/** Headroom: the closed form or the incremental walk where they apply, else the reference. */
export function replicaHeadroom(input: HeadroomInput): Headroom {
  return incrementalHeadroom(input) ?? sequentialHeadroom(input);
}

/**
 * Node totals at or above this make the balance scores' float division able to tie distinct integer numerators;
 * beyond it the walk's exact-integer ranking is no proof, and the reference decides.
 */
const EXACT_TOTAL = 2 ** 52;

/** The fast path scans every zone's heap top per replica: worth it for a few zones, not for a zone per node. */
const FAST_ZONES = 32;

/**
 * The incremental walk (or the closed form for one replica), or null where it does not apply: best-effort
 * auto-balance with a node under disk pressure (a used node then counts as new), or node totals beyond EXACT_TOTAL.
 */
export function incrementalHeadroom(input: HeadroomInput): Headroom | null {
  const { settings, volume, max } = input;
  const walked = walkedState(input);
  if (walked === null) return null;
  const { nodes, state } = walked;

  /**
   * The scheduler's own refusal on the state reached after `fits` volumes (were it to place one after all, it goes
   * on from there; it is not told `placed`, so the property test sees the walk's placements alone).
   */
  const { placed: _told, ...untold } = input;
  const refusal = (fits: number): Headroom => {
    state.writeBack();
    return sequentialHeadroom({ ...untold, nodes }, fits);
  };

  if (volume.numberOfReplicas === 1) {
    const fits = state.closedForm(max);
    return fits > max ? { fits: max, truncated: true, limit: null } : refusal(fits);
  }
  // Room for max volumes, however they are placed: the count needs no walk (unless the placements are asked for).
  if (!input.placed && surelyPlacedOn(state, settings, volume) >= max) return { fits: max, truncated: true, limit: null };
  const walk = new Walk(state, settings, volume);
  for (let fits = 0; fits < max; fits++) {
    if (!walk.placeVolume()) return refusal(fits);
    input.placed?.(Array.from(walk.disks, (i) => state.table.disks[i]!.id));
  }
  return { fits: max, truncated: true, limit: null };
}

/** The walk's state on scratch copies of the nodes, or null where the walk does not apply (incrementalHeadroom). */
function walkedState(input: HeadroomInput): { nodes: NodeView[]; state: DiskState } | null {
  const { settings, volume } = input;
  if (volume.numberOfReplicas < 1) return null;
  const nodes = scratchNodes(input.nodes);
  const schedulable = nodes.filter((n) => nodeRefusal(n, settings, input.now, input.staleAfterSeconds) === null);
  const bestEffort = effectiveAutoBalance(volume.replicaAutoBalance, settings['replica-auto-balance']) === 'best-effort';
  const pressure = settings['replica-auto-balance-disk-pressure-percentage'];
  if (bestEffort && pressure > 0 && schedulable.some((n) => n.disks.some((d) => diskUnderPressure(d, pressure)))) return null;
  const state = new DiskState(new DiskTable(schedulable), settings, volume);
  return state.largestTotal >= EXACT_TOTAL ? null : { nodes, state };
}

/**
 * How many such volumes surely get every replica placed, whatever the order (DiskState.surelyPlaced); 0 without
 * hard anti-affinity or where the walk does not apply.
 */
export function surelyPlaced(input: HeadroomInput): number {
  const walked = walkedState(input);
  return walked === null ? 0 : surelyPlacedOn(walked.state, input.settings, input.volume);
}

function surelyPlacedOn(state: DiskState, settings: ReplicaSettings, volume: VolumeSpec): number {
  const unit = hardUnit(settings, volume);
  return unit === null ? 0 : state.surelyPlaced(volume.numberOfReplicas, unit);
}

/** What hard anti-affinity keeps a volume's replicas apart on: its zones, else its nodes, else its disks. */
type HardUnit = 'zone' | 'node' | 'disk';

function hardUnit(settings: ReplicaSettings, volume: VolumeSpec): HardUnit | null {
  if (!effectiveSoft(volume.replicaZoneSoftAntiAffinity, settings['replica-zone-soft-anti-affinity'])) return 'zone';
  if (!effectiveSoft(volume.replicaSoftAntiAffinity, settings['replica-soft-anti-affinity'])) return 'node';
  if (!effectiveSoft(volume.replicaDiskSoftAntiAffinity, settings['replica-disk-soft-anti-affinity'])) return 'disk';
  return null;
}

/** Per disk of the schedulable nodes (DiskTable order): what the walk changes and what it never does. */
class DiskState {
  readonly table: DiskTable;
  readonly size: number;
  /** Passes the pre-filter, type, tags and actual-space condition: the checks claims do not change. */
  readonly eligible: Uint8Array;
  readonly scheduled: Float64Array;
  readonly limit: Float64Array;
  /** storageAvailable − storageReserved: usable is this minus scheduled, clamped at 0. */
  readonly room: Float64Array;
  /** Per table node: passes the node tag filter (every tier but U lists only these). */
  readonly tagged: Uint8Array;
  /** The largest usable total a node can have (usable only shrinks). */
  readonly largestTotal: number;

  constructor(table: DiskTable, settings: ReplicaSettings, volume: VolumeSpec) {
    this.table = table;
    this.size = volume.size;
    const n = table.length;
    this.eligible = new Uint8Array(n);
    this.scheduled = new Float64Array(n);
    this.limit = new Float64Array(n);
    this.room = new Float64Array(n);
    const minPct = settings['storage-minimal-available-percentage'];
    const opPct = settings['storage-over-provisioning-percentage'];
    const want = volume.dataEngine === 'v2' ? 'block' : 'filesystem';
    const allowEmptyDisk = settings['allow-empty-disk-selector-volume'];
    for (let i = 0; i < n; i++) {
      const d = table.disks[i]!;
      const prefiltered = d.allowScheduling && !d.evictionRequested && spaceFailure(d, 0, 0, 0, minPct, opPct) === null;
      const failure = spaceFailure(d, 0, volume.size, volume.actualSize, minPct, opPct);
      this.eligible[i] = prefiltered && d.type === want && selectorsInTags(d.tags, volume.diskSelector, allowEmptyDisk) &&
        (failure === null || failure === 'scheduling_space') ? 1 : 0;
      this.scheduled[i] = d.storageScheduled;
      this.limit[i] = provisionedLimit(d.storageMaximum, d.storageReserved, opPct);
      this.room[i] = d.storageAvailable - d.storageReserved;
    }
    const allowEmptyNode = settings['allow-empty-node-selector-volume'];
    this.tagged = Uint8Array.from(table.nodes, (node) => (selectorsInTags(node.tags, volume.nodeSelector, allowEmptyNode) ? 1 : 0));
    let largest = 0;
    for (let k = 0; k < table.nodes.length; k++) {
      let total = 0;
      for (let i = table.first[k]!; i < table.first[k + 1]!; i++) total += this.usable(i);
      largest = Math.max(largest, total);
    }
    this.largestTotal = largest;
  }

  /** The balance selection's usable figure (status: this volume's own replicas not subtracted). */
  usable(i: number): number {
    return Math.max(this.room[i]! - this.scheduled[i]!, 0);
  }

  /** Whether disk i takes a replica with `extra` bytes already placed on it in this volume's pass. */
  fits(i: number, extra = 0): boolean {
    return this.eligible[i] === 1 && this.size + this.scheduled[i]! + extra <= this.limit[i]!;
  }

  /** How many more replicas disk i takes, one after another (0 when it is no candidate or its node is not tagged). */
  slots(i: number): number {
    const { size } = this;
    if (this.eligible[i] === 0 || this.tagged[this.table.nodeOf[i]!] === 0) return 0;
    const left = this.limit[i]! - this.scheduled[i]!;
    if (left < size) return 0;
    // The c-th replica needs size + scheduled + (c − 1) × size ≤ limit; the float quotient corrected to the integer.
    let count = Math.floor(left / size);
    while (count * size > left) count--;
    while ((count + 1) * size <= left) count++;
    return count;
  }

  /** One replica per volume: how many volumes the disks with room take in all (stops counting above max). */
  closedForm(max: number): number {
    const { table, size } = this;
    let total = 0;
    for (let k = 0; k < table.nodes.length && total <= max; k++) {
      for (let i = table.first[k]!; i < table.first[k + 1]!; i++) {
        const count = this.slots(i);
        this.scheduled[i]! += count * size;
        total += count;
      }
    }
    return total;
  }

  /**
   * How many volumes of `replicas` replicas surely get every one placed, in whatever order the scheduler chooses, when
   * hard anti-affinity keeps a volume's replicas on distinct units (zones, nodes or disks). Each replica takes one
   * slot of a disk, and a replica is refused only when every unit but the volume's own (at most replicas − 1) is out
   * of slots: so before any refusal, replicas × volumes + replicas − 1 slots went, at least all the slots but the
   * replicas − 1 largest units' ones.
   */
  surelyPlaced(replicas: number, unit: HardUnit): number {
    const { table } = this;
    const zones = new Map<string, number>();
    const unitOfNode = Int32Array.from(table.nodes, (node, k) => {
      if (unit === 'node') return k;
      let z = zones.get(node.zone);
      if (z === undefined) zones.set(node.zone, (z = zones.size));
      return z;
    });
    const unitSlots = new Float64Array(table.length);
    let all = 0;
    for (let i = 0; i < table.length; i++) {
      const slots = this.slots(i);
      unitSlots[unit === 'disk' ? i : unitOfNode[table.nodeOf[i]!]!]! += slots;
      all += slots;
    }
    // The replicas − 1 largest units, kept in descending order.
    const largest = new Float64Array(replicas - 1);
    for (const slots of unitSlots) {
      let j = largest.length - 1;
      if (j < 0 || slots <= largest[j]!) continue;
      for (; j > 0 && largest[j - 1]! < slots; j--) largest[j] = largest[j - 1]!;
      largest[j] = slots;
    }
    for (const slots of largest) all -= slots;
    return Math.max(0, Math.floor(all / replicas));
  }

  /** Writes the walk's scheduled bytes into the (scratch) disk views, for the scheduler's own final decision. */
  writeBack(): void {
    for (let i = 0; i < this.table.length; i++) (this.table.disks[i] as Scratch).storageScheduled = this.scheduled[i]!;
  }
}

/**
 * Aggregates over a set of nodes in struct-of-arrays form: what the node stage of the balance selection needs (the
 * two largest and two smallest usable totals, the first node holding the largest and the smallest, the sum, the
 * count) and what its fallback needs (the first disk with the most usable). Ties go to the lower index (name order),
 * as the selection's strict comparisons in candidate order do; combining is commutative.
 */
class NodeAggregates {
  readonly max1: Float64Array;
  readonly max2: Float64Array;
  readonly min1: Float64Array;
  readonly min2: Float64Array;
  readonly sum: Float64Array;
  readonly count: Float64Array;
  readonly maxAt: Int32Array;
  readonly minAt: Int32Array;
  readonly diskMax: Float64Array;
  readonly diskAt: Int32Array;

  constructor(n: number) {
    this.max1 = new Float64Array(n).fill(-Infinity);
    this.max2 = new Float64Array(n).fill(-Infinity);
    this.min1 = new Float64Array(n).fill(Infinity);
    this.min2 = new Float64Array(n).fill(Infinity);
    this.sum = new Float64Array(n);
    this.count = new Float64Array(n);
    this.maxAt = new Int32Array(n).fill(-1);
    this.minAt = new Int32Array(n).fill(-1);
    this.diskMax = new Float64Array(n).fill(-Infinity);
    this.diskAt = new Int32Array(n).fill(-1);
  }

  clear(a: number): void {
    this.max1[a] = -Infinity; this.max2[a] = -Infinity; this.min1[a] = Infinity; this.min2[a] = Infinity;
    this.sum[a] = 0; this.count[a] = 0; this.maxAt[a] = -1; this.minAt[a] = -1; this.diskMax[a] = -Infinity; this.diskAt[a] = -1;
  }

  /** Slot a holds node k alone with usable total v and best disk (usable, index). */
  single(a: number, k: number, v: number, diskMax: number, diskAt: number): void {
    this.max1[a] = v; this.max2[a] = -Infinity; this.min1[a] = v; this.min2[a] = Infinity;
    this.sum[a] = v; this.count[a] = 1; this.maxAt[a] = k; this.minAt[a] = k; this.diskMax[a] = diskMax; this.diskAt[a] = diskAt;
  }

  /** Slot `into` = combine(slot `into` of `into`'s arrays, slot b of `from`). */
  merge(into: number, from: NodeAggregates, b: number): void {
    if (from.count[b] === 0) return;
    if (this.count[into] === 0) {
      this.copy(into, from, b);
      return;
    }
    const aMax = this.max1[into]!, bMax = from.max1[b]!;
    if (bMax > aMax || (bMax === aMax && from.maxAt[b]! < this.maxAt[into]!)) {
      this.max2[into] = Math.max(from.max2[b]!, aMax);
      this.max1[into] = bMax;
      this.maxAt[into] = from.maxAt[b]!;
    } else this.max2[into] = Math.max(this.max2[into]!, bMax);
    const aMin = this.min1[into]!, bMin = from.min1[b]!;
    if (bMin < aMin || (bMin === aMin && from.minAt[b]! < this.minAt[into]!)) {
      this.min2[into] = Math.min(from.min2[b]!, aMin);
      this.min1[into] = bMin;
      this.minAt[into] = from.minAt[b]!;
    } else this.min2[into] = Math.min(this.min2[into]!, bMin);
    this.sum[into]! += from.sum[b]!;
    this.count[into]! += from.count[b]!;
    const aDisk = this.diskMax[into]!, bDisk = from.diskMax[b]!;
    if (bDisk > aDisk || (bDisk === aDisk && from.diskAt[b]! < this.diskAt[into]!)) {
      this.diskMax[into] = bDisk;
      this.diskAt[into] = from.diskAt[b]!;
    }
  }

  copy(into: number, from: NodeAggregates, b: number): void {
    this.max1[into] = from.max1[b]!; this.max2[into] = from.max2[b]!; this.min1[into] = from.min1[b]!; this.min2[into] = from.min2[b]!;
    this.sum[into] = from.sum[b]!; this.count[into] = from.count[b]!; this.maxAt[into] = from.maxAt[b]!; this.minAt[into] = from.minAt[b]!;
    this.diskMax[into] = from.diskMax[b]!; this.diskAt[into] = from.diskAt[b]!;
  }
}

/**
 * The walk: per table node its current usable total over its disks with room, in two segment trees — the
 * aggregates with the leaves in zone-then-name order (a zone is one range, so "every zone but the used ones" is a
 * few ranges), and the plain totals in name order (the first node at or above a threshold) — and in per-zone heaps
 * for the fast path (#placeFast).
 */
class Walk {
  readonly #state: DiskState;
  readonly #order: readonly string[];
  readonly #diskSoft: boolean;
  /** Per table node: its zone's index, and its leaf in the zone-ordered tree. */
  readonly #zoneOf: Int32Array;
  readonly #leafOf: Int32Array;
  /** Per zone index: its leaves [zoneStart, zoneStart of the next). */
  readonly #zoneStart: Int32Array;
  readonly #width: number;
  readonly #tree: NodeAggregates;
  /** Name-ordered maximum of the totals of the nodes in the set (−∞ outside it). */
  readonly #maxTree: Float64Array;
  /** The query's accumulator (slot 0). */
  readonly #acc = new NodeAggregates(1);
  /** This volume's replicas so far: their disks (table indices, the first #placed), nodes and zones (marked too). */
  readonly disks: Int32Array;
  #placed = 0;
  readonly #nodes: Int32Array;
  #nodeCount = 0;
  readonly #nodeUsed: Uint8Array;
  readonly #zones: Int32Array;
  #zoneCount = 0;
  readonly #zoneUsed: Uint8Array;
  /** Per table node: its usable total over its disks with room (0 outside the set). */
  readonly #totals: Float64Array;
  readonly #replicas: number;
  /** Scratch: the used ranges, and the ranges left (lo, hi pairs). */
  readonly #cut: number[] = [];
  readonly #ranges: number[] = [];
  /**
   * Per table node: its disk with the most usable among those with room (−1: none, or not tagged), that usable, and
   * the next most among the others (−∞: none).
   */
  readonly #diskAt: Int32Array;
  readonly #diskMax: Float64Array;
  readonly #diskNext: Float64Array;
  /** The disk stage's scratch: the chosen node's disks with room, their usable figures and scores. */
  readonly #stageAt: Int32Array;
  readonly #stageUsable: Float64Array;
  readonly #stageScore: Float64Array;
  /**
   * The fast path's state: per zone its nodes in the set ranked by total (then name), and by their best disk's
   * usable (then that disk's index; built when first needed).
   */
  readonly #fast: boolean;
  readonly #byTotal: ZoneHeaps;
  /**
   * This volume's best zones (replicas + 1 of them, by their top node, best first, #rankCount of them), and how many
   * of its replicas so far went to the top of the next of these (the best zones left are then the next two).
   */
  readonly #rank: Int32Array;
  #rankCount = 0;
  #inOrder = 0;
  #byDisk: ZoneHeaps | null = null;
  /** Nodes changed since the trees were last brought up to date (the fast path does not need them). */
  readonly #dirty: Int32Array;
  readonly #isDirty: Uint8Array;
  #dirtyCount = 0;

  constructor(state: DiskState, settings: ReplicaSettings, volume: VolumeSpec) {
    this.#state = state;
    this.#replicas = volume.numberOfReplicas;
    this.disks = new Int32Array(this.#replicas);
    this.#rank = new Int32Array(this.#replicas + 1);
    this.#nodes = new Int32Array(this.#replicas);
    this.#zones = new Int32Array(this.#replicas);
    this.#totals = new Float64Array(state.table.nodes.length);
    const nodeSoft = effectiveSoft(volume.replicaSoftAntiAffinity, settings['replica-soft-anti-affinity']);
    const zoneSoft = effectiveSoft(volume.replicaZoneSoftAntiAffinity, settings['replica-zone-soft-anti-affinity']);
    this.#diskSoft = effectiveSoft(volume.replicaDiskSoftAntiAffinity, settings['replica-disk-soft-anti-affinity']);
    // E and EZ list only nodes whose replicas of the volume are being evicted: never for a new volume.
    this.#order = tierOrder(zoneSoft, nodeSoft).filter((t) => t !== 'E' && t !== 'EZ');
    const nodes = state.table.nodes;
    const zones = [...new Set(nodes.map((n) => n.zone))].sort();
    const zoneIndex = new Map(zones.map((z, i) => [z, i]));
    this.#nodeUsed = new Uint8Array(nodes.length);
    this.#zoneUsed = new Uint8Array(zones.length);
    this.#zoneOf = Int32Array.from(nodes, (n) => zoneIndex.get(n.zone)!);
    const byZone = nodes.map((_, k) => k).sort((a, b) => this.#zoneOf[a]! - this.#zoneOf[b]! || a - b);
    this.#leafOf = new Int32Array(nodes.length);
    byZone.forEach((k, leaf) => (this.#leafOf[k] = leaf));
    this.#zoneStart = new Int32Array(zones.length + 1).fill(nodes.length);
    for (let leaf = nodes.length - 1; leaf >= 0; leaf--) this.#zoneStart[this.#zoneOf[byZone[leaf]!]!] = leaf;
    let width = 1;
    while (width < nodes.length) width *= 2;
    this.#width = width;
    this.#tree = new NodeAggregates(2 * width);
    this.#maxTree = new Float64Array(2 * width).fill(-Infinity);
    this.#diskAt = new Int32Array(nodes.length);
    this.#diskMax = new Float64Array(nodes.length);
    this.#diskNext = new Float64Array(nodes.length);
    let widest = 0;
    for (let k = 0; k < nodes.length; k++) widest = Math.max(widest, state.table.first[k + 1]! - state.table.first[k]!);
    this.#stageAt = new Int32Array(widest);
    this.#stageUsable = new Float64Array(widest);
    this.#stageScore = new Float64Array(widest);
    this.#dirty = new Int32Array(nodes.length);
    this.#isDirty = new Uint8Array(nodes.length);
    for (let k = 0; k < nodes.length; k++) {
      this.#measure(k);
      this.#setLeaf(k);
    }
    for (let a = width - 1; a >= 1; a--) this.#pull(a);
    this.#fast = this.#order[0] === 'NN' && zones.length <= FAST_ZONES && state.size > 0;
    this.#byTotal = new ZoneHeaps(this.#totals, Int32Array.from(nodes, (_, k) => k), this.#zoneStart);
    for (let k = 0; k < nodes.length; k++) if (this.#diskAt[k]! >= 0) this.#byTotal.insert(this.#zoneOf[k]!, k);
  }

  /** Places every replica of one more volume and claims them; false when one finds no disk. */
  placeVolume(): boolean {
    for (let j = 0; j < this.#nodeCount; j++) this.#nodeUsed[this.#nodes[j]!] = 0;
    for (let j = 0; j < this.#zoneCount; j++) this.#zoneUsed[this.#zones[j]!] = 0;
    this.#placed = this.#nodeCount = this.#zoneCount = 0;
    for (let r = 0; r < this.#replicas; r++) {
      let disk = this.#fast ? this.#placeFast(r) : -1;
      if (disk < 0) {
        this.#flush();
        disk = this.#placeReplica();
      }
      if (disk < 0) return false;
      const k = this.#state.table.nodeOf[disk]!;
      this.disks[this.#placed++] = disk;
      if (this.#nodeUsed[k] === 0) {
        this.#nodeUsed[k] = 1;
        this.#nodes[this.#nodeCount++] = k;
      }
      const z = this.#zoneOf[k]!;
      if (this.#zoneUsed[z] === 0) {
        this.#zoneUsed[z] = 1;
        this.#zones[this.#zoneCount++] = z;
      }
    }
    const { scheduled, size } = this.#state;
    for (let r = 0; r < this.#placed; r++) scheduled[this.disks[r]!]! += size;
    for (let j = 0; j < this.#nodeCount; j++) this.#changed(this.#nodes[j]!);
    return true;
  }

  /**
   * The NN tier's choice where its node stage provably picks the set's node with the largest total A: no other node
   * of the set has A's total (max2 < A), and A − size > 0 (so A takes the size and the mean is positive). Then A's
   * numerator (#select) is below any other node's: max(max2, A − size) − min1 < A − min1 when A − size ≥ min1, and
   * max2 − (A − size) < A − (v − size) for every other v ≤ A otherwise (no other v − size reaches min1 then).
   * And where A < size, no node takes the size: the set's disk with the most usable (#select's fallback).
   * Else −1: the trees decide.
   */
  #placeFast(r: number): number {
    const byTotal = this.#byTotal;
    const used = this.#zoneUsed;
    let best = -1;
    let second = -1;
    let bestZone = -1;
    if (r === 0) this.#rankZones();
    if (this.#inOrder === r) {
      // The used zones are the best r: the best zone left and the runner-up zone are the next two.
      if (r < this.#rankCount) best = byTotal.top(bestZone = this.#rank[r]!);
      if (r + 1 < this.#rankCount) second = byTotal.top(this.#rank[r + 1]!);
    } else {
      for (let z = 0; z < byTotal.zones; z++) {
        if (byTotal.size[z] === 0 || used[z] === 1) continue;
        const top = byTotal.top(z);
        if (best < 0 || byTotal.better(top, best)) {
          second = best;
          best = top;
          bestZone = z;
        } else if (second < 0 || byTotal.better(top, second)) second = top;
      }
    }
    if (best < 0) return -1;
    const total = this.#totals;
    const top = total[best]!;
    const size = this.#state.size;
    if (top < size) {
      const byDisk = this.#byDisk ?? this.#rankDisks();
      let most = -1;
      for (let z = 0; z < byDisk.zones; z++) {
        if (byDisk.size[z] === 0 || used[z] === 1) continue;
        const k = byDisk.top(z);
        if (most < 0 || byDisk.better(k, most)) most = k;
      }
      return this.#diskAt[most]!;
    }
    // The runner-up is another zone's top or a child of the best one's.
    second = byTotal.runnerUp(bestZone, second);
    if ((second >= 0 && total[second]! === top) || !(top - size > 0)) return -1;
    if (this.#inOrder === r) this.#inOrder = r + 1;
    // The disk stage's set is the node's disks with room. One with more usable than every other wins it: by the same
    // argument when it takes the size, as the most usable when no disk takes it or the only one does.
    if (this.#diskNext[best]! < this.#diskMax[best]!) return this.#diskAt[best]!;
    return this.#diskStage(best);
  }

  /** #rank: the best zones by their top node (a few: an insertion into the list kept). */
  #rankZones(): void {
    const byTotal = this.#byTotal;
    const rank = this.#rank;
    let n = 0;
    for (let z = 0; z < byTotal.zones; z++) {
      if (byTotal.size[z] === 0) continue;
      const top = byTotal.top(z);
      if (n === rank.length && !byTotal.better(top, byTotal.top(rank[n - 1]!))) continue;
      let j = n < rank.length ? n++ : n - 1;
      for (; j > 0 && byTotal.better(top, byTotal.top(rank[j - 1]!)); j--) rank[j] = rank[j - 1]!;
      rank[j] = z;
    }
    this.#rankCount = n;
    this.#inOrder = 0;
  }

  #rankDisks(): ZoneHeaps {
    const byDisk = new ZoneHeaps(this.#diskMax, this.#diskAt, this.#zoneStart);
    for (let k = 0; k < this.#diskAt.length; k++) if (this.#byTotal.holds(k)) byDisk.insert(this.#zoneOf[k]!, k);
    this.#byDisk = byDisk;
    return byDisk;
  }

  /** Node k's disks took replicas: its figures, its place in its zone's heaps, and the trees later. */
  #changed(k: number): void {
    this.#measure(k);
    const z = this.#zoneOf[k]!;
    if (this.#byTotal.holds(k)) {
      // Totals and best disks only fall (in rank too), and nodes only leave the set.
      if (this.#diskAt[k]! >= 0) {
        this.#byTotal.lowered(z, k);
        this.#byDisk?.lowered(z, k);
      } else {
        this.#byTotal.remove(z, k);
        this.#byDisk?.remove(z, k);
      }
    }
    if (this.#isDirty[k] === 0) {
      this.#isDirty[k] = 1;
      this.#dirty[this.#dirtyCount++] = k;
    }
  }

  /** The trees take the changed nodes' figures. */
  #flush(): void {
    for (let j = 0; j < this.#dirtyCount; j++) {
      const k = this.#dirty[j]!;
      this.#isDirty[k] = 0;
      this.#update(k);
    }
    this.#dirtyCount = 0;
  }

  /** The disk the next replica of the volume goes to, or −1. */
  #placeReplica(): number {
    for (const tier of this.#order) {
      if (tier === 'U') return this.#placeOnUsed();
      const ranges = tier === 'NN' ? this.#excludingZones() : this.#excludingNodes();
      this.#query(ranges);
      if (this.#acc.count[0]! > 0) return this.#select(tier);
    }
    return -1;
  }

  /** Leaf ranges [lo, hi) of every zone but the used ones. */
  #excludingZones(): number[] {
    const cut = this.#cut;
    cut.length = 0;
    for (let j = 0; j < this.#zoneCount; j++) cut.push(this.#zoneStart[this.#zones[j]!]!, this.#zoneStart[this.#zones[j]! + 1]!);
    return this.#gaps();
  }

  /** Leaf ranges of every node but the used ones. */
  #excludingNodes(): number[] {
    const cut = this.#cut;
    cut.length = 0;
    for (let j = 0; j < this.#nodeCount; j++) cut.push(this.#leafOf[this.#nodes[j]!]!, this.#leafOf[this.#nodes[j]!]! + 1);
    return this.#gaps();
  }

  /** The complement of the disjoint ranges in #cut (a few: one per replica), into #ranges. */
  #gaps(): number[] {
    const cut = this.#cut;
    // Insertion sort of the (lo, hi) pairs by lo.
    for (let i = 2; i < cut.length; i += 2) {
      const lo = cut[i]!, hi = cut[i + 1]!;
      let j = i - 2;
      for (; j >= 0 && cut[j]! > lo; j -= 2) {
        cut[j + 2] = cut[j]!;
        cut[j + 3] = cut[j + 1]!;
      }
      cut[j + 2] = lo;
      cut[j + 3] = hi;
    }
    const out = this.#ranges;
    out.length = 0;
    let from = 0;
    for (let i = 0; i < cut.length; i += 2) {
      if (cut[i]! > from) out.push(from, cut[i]!);
      from = Math.max(from, cut[i + 1]!);
    }
    const n = this.#state.table.nodes.length;
    if (from < n) out.push(from, n);
    return out;
  }

  /** The accumulator = the aggregates over the given leaf ranges. */
  #query(ranges: readonly number[]): void {
    const acc = this.#acc;
    const tree = this.#tree;
    // Nothing left out (every first replica): the root.
    if (ranges.length === 2 && ranges[0] === 0 && ranges[1] === this.#state.table.nodes.length) {
      acc.copy(0, tree, 1);
      return;
    }
    acc.clear(0);
    for (let r = 0; r < ranges.length; r += 2) {
      let lo = ranges[r]! + this.#width;
      let hi = ranges[r + 1]! + this.#width;
      while (lo < hi) {
        if (lo & 1) acc.merge(0, tree, lo++);
        if (hi & 1) acc.merge(0, tree, --hi);
        lo >>= 1;
        hi >>= 1;
      }
    }
  }

  /**
   * The balance selection over the set in the accumulator. Node stage: node i's score is (max − min)/mean of the
   * totals with i's reduced by the size; the mean is common, the numerator an exact integer (totals < EXACT_TOTAL),
   * so the lowest numerator wins, then the lower index. A node other than the two extremes has the numerator
   * max1 − min(min1, v − size), least for every node at or above min(min1 + size, max2): the first of those.
   */
  #select(tier: string): number {
    const acc = this.#acc;
    const size = this.#state.size;
    const total = this.#totals;
    const max1 = acc.max1[0]!, max2 = acc.max2[0]!, min1 = acc.min1[0]!, min2 = acc.min2[0]!;
    const maxAt = acc.maxAt[0]!, minAt = acc.minAt[0]!;
    let best = -1;
    let bestScore = Infinity;
    if (acc.sum[0]! - size > 0) {
      const vMax = total[maxAt]!;
      if (vMax >= size) {
        best = maxAt;
        bestScore = Math.max(max2, vMax - size) - Math.min(maxAt === minAt ? min2 : min1, vMax - size);
      }
      const vMin = total[minAt]!;
      if (minAt !== maxAt && vMin >= size) {
        const numerator = max1 - Math.min(min2, vMin - size);
        if (numerator < bestScore || (numerator === bestScore && minAt < best)) {
          best = minAt;
          bestScore = numerator;
        }
      }
      const others = acc.count[0]! - (maxAt === minAt ? 1 : 2);
      if (others > 0 && max2 >= size) {
        const numerator = max1 - Math.min(min1, max2 - size);
        if (numerator <= bestScore) {
          // An equal numerator wins only from a lower index.
          const below = numerator < bestScore ? this.#state.table.nodes.length : best;
          const k = this.#firstAtLeast(1, 0, this.#width, Math.min(min1 + size, max2), below, tier === 'NN', maxAt, minAt);
          if (k >= 0) best = k;
        }
      }
    }
    // No node takes the size (or the mean is ≤ 0): the disk with the most usable among all candidates.
    if (best < 0) return acc.diskAt[0]!;
    return this.#diskStage(best);
  }

  /** The disk stage within node k: its disks with room, scored as the selection scores them. */
  #diskStage(k: number): number {
    const { table } = this.#state;
    const at = this.#stageAt, usable = this.#stageUsable, score = this.#stageScore;
    let m = 0;
    for (let i = table.first[k]!; i < table.first[k + 1]!; i++) {
      if (!this.#state.fits(i)) continue;
      at[m] = i;
      usable[m++] = this.#state.usable(i);
    }
    scoresInto(usable, m, this.#state.size, score);
    let bestDisk = -1;
    let best = DEGENERATE_SCORE;
    let fitting = false;
    for (let j = 0; j < m; j++) {
      const s = score[j]!;
      if (s < best) { best = s; bestDisk = j; }
      if (!Number.isNaN(s)) fitting = true;
    }
    if (bestDisk >= 0) return at[bestDisk]!;
    // Every score degenerate: the first disk with the most usable, among those that take the size if any do.
    let most = -1;
    for (let j = 0; j < m; j++) {
      if (fitting && Number.isNaN(score[j]!)) continue;
      if (most < 0 || usable[j]! > usable[most]!) most = j;
    }
    return at[most]!;
  }

  /**
   * The U tier: the used nodes' disks with room (this volume's bytes placed on them counted), a disk holding one of
   * its replicas after the free ones (or not at all under hard disk anti-affinity), through the balance selection.
   */
  #placeOnUsed(): number {
    const { table } = this.#state;
    const free: number[] = [];
    const held: number[] = [];
    for (const k of this.#nodes.slice(0, this.#nodeCount).sort()) {
      for (let i = table.first[k]!; i < table.first[k + 1]!; i++) {
        let onDisk = 0;
        for (let r = 0; r < this.#placed; r++) if (this.disks[r] === i) onDisk++;
        if (!this.#state.fits(i, onDisk * this.#state.size)) continue;
        if (onDisk === 0) free.push(i);
        else if (this.#diskSoft) held.push(i);
      }
    }
    const among = free.length > 0 ? free : held;
    if (among.length === 0) return -1;
    const candidates: BalanceDisk[] = among.map((i) => ({ node: table.disks[i]!.node, disk: table.disks[i]!.name, usable: this.#state.usable(i) }));
    return among[selectByBalance(candidates, this.#state.size).chosen]!;
  }

  /** Node k's usable total over its disks with room, and the best two of those disks (none when not tagged). */
  #measure(k: number): void {
    const { table } = this.#state;
    let total = 0;
    let diskMax = -Infinity;
    let diskNext = -Infinity;
    let diskAt = -1;
    if (this.#state.tagged[k] === 1) {
      for (let i = table.first[k]!; i < table.first[k + 1]!; i++) {
        if (!this.#state.fits(i)) continue;
        const u = this.#state.usable(i);
        total += u;
        if (u > diskMax) {
          diskNext = diskMax;
          diskMax = u;
          diskAt = i;
        } else if (u > diskNext) diskNext = u;
      }
    }
    this.#totals[k] = total;
    this.#diskMax[k] = diskMax;
    this.#diskNext[k] = diskNext;
    this.#diskAt[k] = diskAt;
  }

  /** Node k's leaves from its measured figures. */
  #setLeaf(k: number): void {
    const leaf = this.#width + this.#leafOf[k]!;
    const plain = this.#width + k;
    const diskAt = this.#diskAt[k]!;
    if (diskAt < 0) {
      this.#tree.clear(leaf);
      this.#maxTree[plain] = -Infinity;
    } else {
      this.#tree.single(leaf, k, this.#totals[k]!, this.#diskMax[k]!, diskAt);
      this.#maxTree[plain] = this.#totals[k]!;
    }
  }

  #pull(a: number): void {
    this.#tree.copy(a, this.#tree, 2 * a);
    this.#tree.merge(a, this.#tree, 2 * a + 1);
    this.#maxTree[a] = Math.max(this.#maxTree[2 * a]!, this.#maxTree[2 * a + 1]!);
  }

  /** Node k's leaves and their ancestors, from its measured figures. */
  #update(k: number): void {
    this.#setLeaf(k);
    for (let a = (this.#width + this.#leafOf[k]!) >> 1; a >= 1; a >>= 1) {
      this.#tree.copy(a, this.#tree, 2 * a);
      this.#tree.merge(a, this.#tree, 2 * a + 1);
    }
    for (let a = (this.#width + k) >> 1; a >= 1; a >>= 1) this.#maxTree[a] = Math.max(this.#maxTree[2 * a]!, this.#maxTree[2 * a + 1]!);
  }

  /**
   * The first node in [lo, hi) (tree node a) and below `below`, name order, with a total ≥ t that is in the tier's
   * set (its zone unused for NN, itself unused for N) and is neither extreme; or −1.
   */
  #firstAtLeast(a: number, lo: number, hi: number, t: number, below: number, byZone: boolean, maxAt: number, minAt: number): number {
    if (lo >= below || this.#maxTree[a]! < t) return -1;
    if (hi - lo === 1) {
      const excluded = lo === maxAt || lo === minAt || (byZone ? this.#zoneUsed[this.#zoneOf[lo]!] === 1 : this.#nodeUsed[lo] === 1);
      return excluded ? -1 : lo;
    }
    const mid = (lo + hi) >> 1;
    const left = this.#firstAtLeast(2 * a, lo, mid, t, below, byZone, maxAt, minAt);
    return left >= 0 ? left : this.#firstAtLeast(2 * a + 1, mid, hi, t, below, byZone, maxAt, minAt);
  }
}

/**
 * Per zone a max-heap of nodes by key (then the lower tie, both arrays read live), in the slots [start[z],
 * start[z] + size[z]) of one array: keys may only fall, so a changed node sifts down or leaves.
 */
export class ZoneHeaps {
  readonly #key: Float64Array;
  readonly #tie: Int32Array;
  readonly #start: Int32Array;
  readonly #heap: Int32Array;
  readonly #slot: Int32Array;
  readonly size: Int32Array;
  readonly zones: number;

  /** `start`: per zone the first of its slots, one more entry for the end. */
  constructor(key: Float64Array, tie: Int32Array, start: Int32Array) {
    this.#key = key;
    this.#tie = tie;
    this.#start = start;
    this.zones = start.length - 1;
    this.#heap = new Int32Array(key.length);
    this.#slot = new Int32Array(key.length).fill(-1);
    this.size = new Int32Array(this.zones);
  }

  better(a: number, b: number): boolean {
    const ka = this.#key[a]!, kb = this.#key[b]!;
    return ka > kb || (ka === kb && this.#tie[a]! < this.#tie[b]!);
  }

  top(z: number): number {
    return this.#heap[this.#start[z]!]!;
  }

  /** The better of `other` (−1: none) and the two children of zone z's top. */
  runnerUp(z: number, other: number): number {
    const base = this.#start[z]!;
    for (let c = base + 1; c <= base + 2 && c < base + this.size[z]!; c++) {
      if (other < 0 || this.better(this.#heap[c]!, other)) other = this.#heap[c]!;
    }
    return other;
  }

  holds(k: number): boolean {
    return this.#slot[k]! >= 0;
  }

  insert(z: number, k: number): void {
    const at = this.#start[z]! + this.size[z]!++;
    this.#heap[at] = k;
    this.#slot[k] = at;
    this.#up(z, at);
  }

  /** Node k's key fell. */
  lowered(z: number, k: number): void {
    this.#down(z, this.#slot[k]!);
  }

  remove(z: number, k: number): void {
    const at = this.#slot[k]!;
    const last = this.#start[z]! + --this.size[z]!;
    this.#slot[k] = -1;
    if (at === last) return;
    // The last slot's node fills the gap, and may belong above it or below.
    const moved = this.#heap[last]!;
    this.#heap[at] = moved;
    this.#slot[moved] = at;
    this.#up(z, at);
    this.#down(z, this.#slot[moved]!);
  }

  // Both sifts carry the node along a hole instead of swapping at each level.
  #up(z: number, at: number): void {
    const heap = this.#heap, key = this.#key, tie = this.#tie;
    const base = this.#start[z]!;
    const k = heap[at]!, kk = key[k]!, kt = tie[k]!;
    while (at > base) {
      const parent = base + ((at - base - 1) >> 1);
      const p = heap[parent]!, pk = key[p]!;
      if (!(kk > pk || (kk === pk && kt < tie[p]!))) break;
      heap[at] = p;
      this.#slot[p] = at;
      at = parent;
    }
    heap[at] = k;
    this.#slot[k] = at;
  }

  #down(z: number, at: number): void {
    const heap = this.#heap, key = this.#key, tie = this.#tie;
    const base = this.#start[z]!;
    const end = base + this.size[z]!;
    const k = heap[at]!, kk = key[k]!, kt = tie[k]!;
    for (;;) {
      let child = base + 2 * (at - base) + 1;
      if (child >= end) break;
      if (child + 1 < end && this.better(heap[child + 1]!, heap[child]!)) child++;
      const c = heap[child]!, ck = key[c]!;
      if (!(ck > kk || (ck === kk && tie[c]! < kt))) break;
      heap[at] = c;
      this.#slot[c] = at;
      at = child;
    }
    heap[at] = k;
    this.#slot[k] = at;
  }
}
