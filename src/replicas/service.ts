// The replica dialect's state and use cases: nodes and disks as reported, Berth's own replicas, the settings.
// In memory (indexed for the hot path), followed from the store (src/store/follow.ts): loaded from one snapshot,
// then moved on by every instance's changes, this one's included, one record at a time. Writes commit first and
// reach memory only through the follower; several instances on one database are arbitrated by the expectations.
import { DomainError } from '../domain-errors.ts';
import { isoTime } from '../iso-time.ts';
import { StoreFollower, WRITE_ATTEMPTS } from '../store/follow.ts';
import {
  StoreConflictError, type AsyncStore, type StoredRecord, type StoreExpectation, type StoreSnapshot, type StoreStatus,
  type StoreWrite, type Subscription,
} from '../store/store.ts';
import { nodeReportAgeSeconds } from './filters.ts';
import { diskId, type DiskReport, type DiskView, type NodeReport, type NodeView, type ProposedReplica, type ReplicaRecord, type ReplicaRef, type VolumeSpec } from './model.ts';
import { replicaHeadroom, type Headroom } from './headroom.ts';
import { ScheduleCache, scheduleVolume, type ScheduleResult } from './scheduler.ts';
import { defaultSettings, SETTING_NAMES, settingValueError, type ReplicaSettings } from './settings.ts';
import { checkDiskSpace, describeSpaceCheck } from './space.ts';

const KIND = {
  node: 'replicas.node',
  replica: 'replicas.replica',
  /** Where the settings were kept before they became runtime settings (src/settings.ts): read once as their start. */
  settings: 'replicas.settings',
  /**
   * The name sequence (key SEQUENCE_KEY): the highest number drawn. Claims no longer write it (every claim would
   * lock one row); the volume records carry it, and a release that forgets a volume's record writes it here.
   */
  meta: 'replicas.meta',
  /** Per disk id: Berth's replicas on it (DiskUsage); every claim and release on the disk writes it. */
  usage: 'replicas.disk-usage',
  /** Per volume with replicas: their count and the highest name number drawn (VolumeClaims). */
  volume: 'replicas.volume',
} as const;
/** What the service follows (the legacy settings record is read once, at start-up). */
const KINDS = [KIND.node, KIND.replica, KIND.meta, KIND.usage, KIND.volume];
const SETTINGS_KEY = 'global';
const SEQUENCE_KEY = 'sequence';

/** A disk with Berth's bookkeeping; `storageScheduled` is kept equal to reported + Berth's bytes. */
class DiskState implements DiskView {
  readonly id: string;
  readonly node: string;
  readonly name: string;
  readonly path: string;
  readonly type: DiskReport['type'];
  readonly tags: readonly string[];
  readonly allowScheduling: boolean;
  readonly evictionRequested: boolean;
  readonly storageMaximum: number;
  readonly storageAvailable: number;
  readonly storageReserved: number;
  readonly reportedScheduled: number;
  berthScheduled = 0;
  storageScheduled: number;
  readonly replicas = new Set<string>();

  constructor(node: string, name: string, r: DiskReport) {
    this.id = diskId(node, name);
    this.node = node;
    this.name = name;
    this.path = r.path;
    this.type = r.type;
    this.tags = r.tags;
    this.allowScheduling = r.allowScheduling;
    this.evictionRequested = r.evictionRequested;
    this.storageMaximum = r.storageMaximum;
    this.storageAvailable = r.storageAvailable;
    this.storageReserved = r.storageReserved;
    this.reportedScheduled = r.storageScheduled;
    this.storageScheduled = r.storageScheduled;
  }

  add(replica: ReplicaRecord): void {
    this.replicas.add(replica.name);
    this.berthScheduled += replica.size;
    this.storageScheduled = this.reportedScheduled + this.berthScheduled;
  }

  remove(replica: ReplicaRecord): void {
    if (!this.replicas.delete(replica.name)) return;
    this.berthScheduled -= replica.size;
    this.storageScheduled = this.reportedScheduled + this.berthScheduled;
  }
}

export interface NodeState extends NodeView {
  readonly report: NodeReport;
  readonly disks: readonly DiskState[];
}

function makeNode(name: string, report: NodeReport, reportedAt: number): NodeState {
  const disks = Object.keys(report.disks).sort().map((d) => new DiskState(name, d, report.disks[d]!));
  return {
    name, zone: report.zone, region: report.region, tags: report.tags, cordoned: report.cordoned, ready: report.ready,
    allowScheduling: report.allowScheduling, evictionRequested: report.evictionRequested, reportedAt, disks, report,
  };
}

/** A node record's value. */
interface StoredNode {
  report: NodeReport;
  reportedAt: number;
}

/** A disk usage record's value: the count and bytes of Berth's replicas on the disk. */
interface DiskUsage {
  replicas: number;
  bytes: number;
}

/** A volume record's value. */
interface VolumeClaims {
  replicas: number;
  sequence: number;
}

/** A replica record as stored (records from before createdBy existed have none). */
const storedReplica = (r: ReplicaRecord): ReplicaRecord => ({ ...r, createdBy: r.createdBy ?? null });

/** A replica of the volume given in the request (not placed by Berth, or not known to it). */
export type ExistingReplica = { node: string; disk: string; failed: boolean; evictionRequested: boolean };

interface Condition {
  type: 'Ready' | 'Schedulable';
  status: 'True' | 'False';
  reason: string;
  message: string;
}

/** Outcome of a scheduling request, before it becomes HTTP. */
export interface ScheduleOutcome {
  outcome: 'placed' | 'degraded' | 'nothing_missing' | 'no_valid_target';
  /** Claimed by this request (none with dry_run). */
  replicas: ReplicaRecord[];
  /** Where each new replica goes (with dry_run: would go), in placement order. */
  proposed: ProposedReplica[];
  result: ScheduleResult;
}

export interface ScheduleOptions {
  dryRun: boolean;
  explain: boolean;
  /** explain_target: report only this node's (or disk's) verdict. */
  target?: { node: string; disk?: string } | undefined;
  now: number;
  staleAfterSeconds: number;
  createdBy?: string | null;
}

/** Where the service reads its settings: the runtime settings (DialectSettings), or a simulation's fixed values. */
export interface SettingsView {
  readonly values: Readonly<ReplicaSettings>;
}

/**
 * A store for a simulation: the records in memory, commits applied there with their expectations, nothing written
 * anywhere else. The copy is its only writer, and its follower applies its own commits, so the feed has nothing to
 * deliver.
 */
class ScratchStore implements AsyncStore {
  readonly location = 'simulation (memory)';
  readonly instanceId = 'simulation';
  readonly shared = false;
  readonly #records = new Map<string, Map<string, StoredRecord>>();
  #seq = 0;

  async load<V>(kind: string): Promise<Array<StoredRecord<V>>> {
    return [...(this.#records.get(kind)?.values() ?? [])] as Array<StoredRecord<V>>;
  }

  async get<V>(kind: string, key: string): Promise<StoredRecord<V> | undefined> {
    return this.#records.get(kind)?.get(key) as StoredRecord<V> | undefined;
  }

  async snapshot(kinds: readonly string[]): Promise<StoreSnapshot> {
    const records = new Map<string, StoredRecord[]>();
    for (const kind of kinds) records.set(kind, [...(this.#records.get(kind)?.values() ?? [])]);
    return { seq: this.#seq, records };
  }

  async commit(writes: readonly StoreWrite[], expect: readonly StoreExpectation[] = []): Promise<number[]> {
    for (const e of expect) {
      const actual = this.#records.get(e.kind)?.get(e.key)?.generation ?? 0;
      if (actual !== e.generation) throw new StoreConflictError(e, actual);
    }
    return writes.map((w) => {
      let kind = this.#records.get(w.kind);
      if (!kind) this.#records.set(w.kind, (kind = new Map()));
      this.#seq++;
      if (w.value === null) {
        kind.delete(w.key);
        return 0;
      }
      kind.set(w.key, { key: w.key, value: w.value, generation: this.#seq });
      return this.#seq;
    });
  }

  async sequence(): Promise<number> {
    return this.#seq;
  }

  subscribe(fromSeq: number): Subscription {
    return { position: fromSeq, close: () => undefined };
  }

  async catchUp(): Promise<void> {}

  status(): StoreStatus {
    return { backend: 'sqlite', connected: true, following: true, seq: this.#seq, position: this.#seq };
  }

  async close(): Promise<void> {}
}

/** FNV-1a, 32 bit: a stable, random-looking 8-hex suffix for replica names. */
function fnv1a(text: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h.toString(16).padStart(8, '0');
}

const byName = (a: { name: string }, b: { name: string }) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

/** Where a node named `name` goes in the list sorted by name (binary search). */
function insertionIndex(list: readonly { name: string }[], name: string): number {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (list[mid]!.name < name) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** What a commit writes and expects, and the answer once the store acknowledged it (and memory applied it). */
interface Claim<T> {
  writes: StoreWrite[];
  expect: StoreExpectation[];
  result: () => T;
}

/** A schedule decision: its outcome, the nodes it places on, the last name number its replicas drew. */
interface Decision {
  outcome: ScheduleOutcome;
  nodes: string[];
  sequence: number;
}

/** The replicas of one disk: their names and bytes (Berth's share of the disk's storageScheduled). */
interface DiskHolding {
  names: Set<string>;
  bytes: number;
}

export class ReplicaService {
  readonly #follower: StoreFollower;
  readonly #nodes = new Map<string, NodeState>();
  /** Sorted by name: the scheduler's deterministic iteration order. */
  readonly #nodeList: NodeState[] = [];
  readonly #replicas = new Map<string, ReplicaRecord>();
  readonly #byVolume = new Map<string, Set<string>>();
  /** By disk id, whether or not the disk is in a node report right now (a node's record may arrive after them). */
  readonly #byDisk = new Map<string, DiskHolding>();
  /** The highest name number each volume with replicas drew (its KIND.volume record). */
  readonly #volumeSequence = new Map<string, number>();
  readonly #settings: SettingsView;
  /** What one decision leaves for the next: the schedulable nodes, their disk table, the pre-filter's verdicts. */
  readonly #scheduleCache = new ScheduleCache();
  /** The highest name number drawn (by any instance, as far as this one has seen); only ever grows. */
  #sequence = 0;
  /**
   * Whether claims write the per-disk usage records and commit with expectations: only where other instances
   * write too (they exist to make competing claims collide). The embedded store has one writer, and a store copied
   * from it to PostgreSQL starts without usage records: the first claim on a disk expects "none" and writes it.
   */
  readonly #arbitrated: boolean;

  private constructor(store: AsyncStore, settings: SettingsView) {
    this.#settings = settings;
    this.#arbitrated = store.shared;
    this.#follower = new StoreFollower(store, KINDS, {
      reset: (records) => this.#reset(records),
      apply: (kind, key, value) => this.#apply(kind, key, value),
    });
  }

  /**
   * Loads the dialect's records from the store and follows every instance's changes from there. `settings`: the
   * runtime settings; every decision reads their current values.
   */
  static async open(store: AsyncStore, settings: SettingsView): Promise<ReplicaService> {
    const service = new ReplicaService(store, settings);
    await service.#follower.start();
    return service;
  }

  /** Stops following the store's changes. */
  close(): void {
    this.#follower.close();
  }

  // -- memory: rebuilt from a snapshot, then moved on one record at a time ---------------------------------------

  #reset(records: ReadonlyMap<string, readonly StoredRecord[]>): void {
    this.#nodes.clear();
    this.#nodeList.length = 0;
    this.#replicas.clear();
    this.#byVolume.clear();
    this.#byDisk.clear();
    this.#volumeSequence.clear();
    const meta = records.get(KIND.meta)?.find((r) => r.key === SEQUENCE_KEY);
    this.#sequence = typeof meta?.value === 'number' ? meta.value : 0;
    for (const rec of (records.get(KIND.node) ?? []) as Array<StoredRecord<StoredNode>>) {
      const node = makeNode(rec.key, rec.value.report, rec.value.reportedAt);
      this.#nodes.set(rec.key, node);
      this.#nodeList.push(node);
    }
    this.#nodeList.sort(byName);
    for (const rec of (records.get(KIND.replica) ?? []) as Array<StoredRecord<ReplicaRecord>>) this.#addReplica(storedReplica(rec.value));
    for (const rec of (records.get(KIND.volume) ?? []) as Array<StoredRecord<VolumeClaims>>) {
      this.#volumeSequence.set(rec.key, rec.value.sequence);
      // Claims advance the volumes' records, not the shared one: the highest of them all is the sequence.
      this.#sequence = Math.max(this.#sequence, rec.value.sequence);
    }
  }

  #apply(kind: string, key: string, value: unknown): void {
    switch (kind) {
      case KIND.node:
        if (value === null) this.#dropNode(key);
        else this.#setNode(key, value as StoredNode);
        return;
      case KIND.replica: {
        const old = this.#replicas.get(key);
        if (old) this.#removeReplica(old);
        if (value !== null) this.#addReplica(storedReplica(value as ReplicaRecord));
        return;
      }
      case KIND.volume:
        if (value === null) this.#volumeSequence.delete(key);
        else {
          const { sequence } = value as VolumeClaims;
          this.#volumeSequence.set(key, sequence);
          this.#sequence = Math.max(this.#sequence, sequence);
        }
        return;
      case KIND.meta:
        // Instances write it without arbitration, so an older figure can land last: keep the highest seen.
        if (key === SEQUENCE_KEY && typeof value === 'number') this.#sequence = Math.max(this.#sequence, value);
        return;
      default:
        // KIND.usage: what competing claims on one disk both write, so that the database refuses the second. Its
        // figures equal the disk's replicas, which memory already counts from their records.
        return;
    }
  }

  /** A node as reported, with the replicas Berth holds on its disks. */
  #buildNode(name: string, stored: StoredNode): NodeState {
    const node = makeNode(name, stored.report, stored.reportedAt);
    for (const d of node.disks) for (const r of this.#byDisk.get(d.id)?.names ?? []) d.add(this.#replicas.get(r)!);
    return node;
  }

  #setNode(name: string, stored: StoredNode): void {
    const node = this.#buildNode(name, stored);
    const old = this.#nodes.get(name);
    if (old) this.#nodeList[this.#nodeList.indexOf(old)] = node;
    else this.#nodeList.splice(insertionIndex(this.#nodeList, name), 0, node);
    this.#nodes.set(name, node);
  }

  #dropNode(name: string): void {
    const node = this.#nodes.get(name);
    if (!node) return;
    this.#nodes.delete(name);
    this.#nodeList.splice(this.#nodeList.indexOf(node), 1);
  }

  #disk(node: string, disk: string): DiskState | undefined {
    return this.#nodes.get(node)?.disks.find((d) => d.name === disk);
  }

  #addReplica(r: ReplicaRecord): void {
    this.#replicas.set(r.name, r);
    let names = this.#byVolume.get(r.volume);
    if (!names) this.#byVolume.set(r.volume, (names = new Set()));
    names.add(r.name);
    const id = diskId(r.node, r.disk);
    let holding = this.#byDisk.get(id);
    if (!holding) this.#byDisk.set(id, (holding = { names: new Set(), bytes: 0 }));
    holding.names.add(r.name);
    holding.bytes += r.size;
    this.#disk(r.node, r.disk)?.add(r);
    this.#scheduleCache.changed(r.node, r.disk);
  }

  #removeReplica(r: ReplicaRecord): void {
    this.#replicas.delete(r.name);
    const names = this.#byVolume.get(r.volume)!;
    names.delete(r.name);
    if (names.size === 0) this.#byVolume.delete(r.volume);
    const id = diskId(r.node, r.disk);
    const holding = this.#byDisk.get(id)!;
    holding.names.delete(r.name);
    holding.bytes -= r.size;
    if (holding.names.size === 0) this.#byDisk.delete(id);
    this.#disk(r.node, r.disk)?.remove(r);
    this.#scheduleCache.changed(r.node, r.disk);
  }

  // -- reads ------------------------------------------------------------------------------------------------

  get settings(): ReplicaSettings {
    return { ...this.#settings.values };
  }

  get nodes(): readonly NodeState[] {
    return this.#nodeList;
  }

  node(name: string): NodeState | undefined {
    return this.#nodes.get(name);
  }

  replicas(volume?: string): ReplicaRecord[] {
    if (volume !== undefined) {
      const names = this.#byVolume.get(volume);
      return names ? [...names].sort().map((n) => this.#replicas.get(n)!) : [];
    }
    return [...this.#replicas.values()].sort(byName);
  }

  replica(name: string): ReplicaRecord | undefined {
    return this.#replicas.get(name);
  }

  /** Node conditions as Longhorn's node controller would set them. */
  nodeConditions(node: NodeView): Condition[] {
    const cordonBlocks = node.cordoned && this.#settings.values['disable-scheduling-on-cordoned-node'];
    return [
      node.ready
        ? { type: 'Ready', status: 'True', reason: '', message: 'Node is ready' }
        : { type: 'Ready', status: 'False', reason: 'KubernetesNodeNotReady', message: `Node ${node.name} is not ready` },
      cordonBlocks
        ? { type: 'Schedulable', status: 'False', reason: 'KubernetesNodeCordoned', message: `Node ${node.name} is cordoned` }
        : { type: 'Schedulable', status: 'True', reason: '', message: '' },
    ];
  }

  /** Disk conditions: Ready follows the node; Schedulable = Ready and IsSchedulableToDisk(0, 0). */
  diskConditions(node: NodeView, disk: DiskView): Condition[] {
    if (!node.ready) {
      const message = `Disk ${disk.name} on node ${node.name} is not ready because the node is not ready`;
      return [
        { type: 'Ready', status: 'False', reason: 'DiskNotReady', message },
        { type: 'Schedulable', status: 'False', reason: 'DiskNotReady', message },
      ];
    }
    const settings = this.#settings.values;
    const minPct = settings['storage-minimal-available-percentage'];
    const c = checkDiskSpace(disk, 0, 0, minPct, settings['storage-over-provisioning-percentage']);
    return [
      { type: 'Ready', status: 'True', reason: '', message: 'Disk is ready' },
      c.ok
        ? { type: 'Schedulable', status: 'True', reason: '', message: 'Disk is schedulable' }
        : { type: 'Schedulable', status: 'False', reason: 'DiskPressure', message: describeSpaceCheck(c, disk, minPct) },
    ];
  }

  reportAgeSeconds(node: NodeView, now: number): number {
    return nodeReportAgeSeconds(node, now);
  }

  // -- writes -----------------------------------------------------------------------------------------------
  //
  // Each write decides on memory and commits what it decided with the generations it read, one write of this
  // instance at a time. A conflict means another instance changed one of them: catch up with the feed and decide
  // again, a few times, then 409. In a commit the records memory is derived from come before the usage and volume
  // records that arbitrate: were a feed batch to end inside a commit, memory could then hold the new replicas with
  // the old usage generation (a claim decided on it conflicts), never the new generation with the old replicas.

  /**
   * Runs `decide` (again after each conflict) and commits its claim; resolves with the claim's result once the
   * store acknowledged it. `subject` names what conflicted in the 409.
   */
  #write<T>(subject: string, decide: () => Claim<T>): Promise<T> {
    return this.#follower.write(() => {
      const claim = decide();
      // Without other writers (the embedded store) memory is the store when a decision runs — this instance's
      // writes run one at a time and reach memory before the next decides — so no expectation could fail: the
      // store is not asked to check them (a claim's seven lookups were a sixth of its commit's time).
      const expect = claim.writes.length === 0 || !this.#arbitrated ? [] : claim.expect;
      return { writes: claim.writes, expect, result: () => claim.result() };
    }, () => new DomainError('CONFLICT', `${subject} conflicted ${WRITE_ATTEMPTS} times in the store; retry`));
  }

  #expectation(kind: string, key: string): StoreExpectation {
    return { kind, key, generation: this.#follower.generation(kind, key) };
  }

  /**
   * The disk's usage record after adding and removing these replicas (null: none left, the record goes) and its
   * expectation, into `writes` and `expect`; nothing where the store has no other writer.
   */
  #usage(writes: StoreWrite[], expect: StoreExpectation[], id: string, added: readonly ReplicaRecord[], removed: ReplicaRecord | null): void {
    if (!this.#arbitrated) return;
    const held = this.#byDisk.get(id);
    const replicas = (held?.names.size ?? 0) + added.length - (removed ? 1 : 0);
    const bytes = (held?.bytes ?? 0) + added.reduce((sum, r) => sum + r.size, 0) - (removed?.size ?? 0);
    const value: DiskUsage | null = replicas > 0 ? { replicas, bytes } : null;
    writes.push({ kind: KIND.usage, key: id, value });
    expect.push(this.#expectation(KIND.usage, id));
  }

  /** The expectations that these disks still hold no replica of another instance (none without other writers). */
  #stillEmpty(ids: readonly string[]): StoreExpectation[] {
    return this.#arbitrated ? ids.map((id) => this.#expectation(KIND.usage, id)) : [];
  }

  putNode(name: string, report: NodeReport, now: number): Promise<NodeState> {
    const stored: StoredNode = { report, reportedAt: now };
    return this.#write(`the report of node ${name}`, () => {
      const expect: StoreExpectation[] = [];
      for (const d of this.#nodes.get(name)?.disks ?? []) {
        if (Object.hasOwn(report.disks, d.name)) continue;
        if (d.replicas.size > 0) {
          throw new DomainError('DISK_HAS_REPLICAS',
            `disk ${d.name} on node ${name} holds ${d.replicas.size} replica(s) placed by Berth (${[...d.replicas].sort().slice(0, 5).join(', ')}); ` +
            'delete them before removing the disk from the report');
        }
        // Still empty when the report lands: a claim of another instance on this disk writes its usage record.
        expect.push(...this.#stillEmpty([d.id]));
      }
      return {
        writes: [{ kind: KIND.node, key: name, value: stored }],
        expect,
        // A newer change from another instance may have come through the feed meanwhile; it is what memory shows.
        result: () => this.#nodes.get(name) ?? this.#buildNode(name, stored),
      };
    });
  }

  /** Longhorn refuses to delete a node that still has replicas; so does Berth (its own replicas). */
  deleteNode(name: string): Promise<void> {
    return this.#write(`the deletion of node ${name}`, () => {
      const node = this.#nodes.get(name);
      if (!node) throw new DomainError('NOT_FOUND', `node ${name} not found`);
      const held = node.disks.flatMap((d) => [...d.replicas]).sort();
      if (held.length > 0) {
        throw new DomainError('NODE_HAS_REPLICAS',
          `node ${name} holds ${held.length} replica(s) placed by Berth (${held.slice(0, 5).join(', ')}${held.length > 5 ? ', …' : ''}); delete them first`);
      }
      return {
        writes: [{ kind: KIND.node, key: name, value: null }],
        expect: this.#stillEmpty(node.disks.map((d) => d.id)),
        result: () => undefined,
      };
    });
  }

  deleteReplica(name: string): Promise<ReplicaRecord> {
    return this.#write(`the deletion of replica ${name}`, () => {
      const replica = this.#replicas.get(name);
      if (!replica) throw new DomainError('NOT_FOUND', `replica ${name} not found`);
      const id = diskId(replica.node, replica.disk);
      const left = this.#byVolume.get(replica.volume)!.size - 1;
      const volume: VolumeClaims | null = left > 0 ? { replicas: left, sequence: this.#volumeSequence.get(replica.volume) ?? this.#sequence } : null;
      const writes: StoreWrite[] = [
        { kind: KIND.replica, key: name, value: null },
        { kind: KIND.volume, key: replica.volume, value: volume },
      ];
      const expect = [this.#expectation(KIND.replica, name), this.#expectation(KIND.volume, replica.volume)];
      this.#usage(writes, expect, id, [], replica);
      // The volume's record goes, and with it the numbers its names drew: the shared record keeps them from coming
      // back (unarbitrated; memory keeps the highest figure seen, so one written late by a lagging instance is harmless).
      if (volume === null) writes.push({ kind: KIND.meta, key: SEQUENCE_KEY, value: this.#sequence });
      return { writes, expect, result: () => replica };
    });
  }

  /**
   * A copy of this service for a what-if simulation: the same nodes, replicas and name sequence, the given
   * settings, and a store in memory. What the copy does changes nothing here and writes nothing to the store.
   */
  async fork(settings: ReplicaSettings): Promise<ReplicaService> {
    const scratch = new ScratchStore();
    const writes: StoreWrite[] = [{ kind: KIND.meta, key: SEQUENCE_KEY, value: this.#sequence }];
    for (const n of this.#nodeList) writes.push({ kind: KIND.node, key: n.name, value: { report: n.report, reportedAt: n.reportedAt } });
    for (const r of this.#replicas.values()) writes.push({ kind: KIND.replica, key: r.name, value: r });
    for (const [volume, names] of this.#byVolume) {
      writes.push({ kind: KIND.volume, key: volume, value: { replicas: names.size, sequence: this.#volumeSequence.get(volume) ?? this.#sequence } });
    }
    await scratch.commit(writes);
    return ReplicaService.open(scratch, { values: Object.freeze({ ...settings }) });
  }

  /**
   * How many more new volumes like `volume` (no replicas yet) get every replica placed, one after another, each
   * claimed as POST /replicas/schedule claims it (its replicas' bytes join their disks' storageScheduled, which
   * the next volume's space checks and balance selection see). Decided on a copy of the disks: nothing changes.
   */
  headroom(volume: VolumeSpec, max: number, options: { now: number; staleAfterSeconds: number }): Headroom {
    return replicaHeadroom({ nodes: this.#nodeList, settings: this.#settings.values, volume, max, ...options });
  }

  /**
   * Decides where the volume's missing replicas go and, unless dryRun, claims them: one store commit that expects
   * the records the decision read (see #claim), then memory through the follower. A dry run decides on memory as
   * it is and writes nothing.
   */
  schedule(volume: VolumeSpec, existing: readonly ExistingReplica[], options: ScheduleOptions): Promise<ScheduleOutcome> {
    if (options.dryRun) return Promise.resolve(this.#decide(volume, existing, options).outcome);
    return this.#write(`the claim for volume ${volume.name}`, () => {
      const decision = this.#decide(volume, existing, options);
      return { ...this.#claim(volume, decision), result: () => decision.outcome };
    });
  }

  #decide(volume: VolumeSpec, existing: readonly ExistingReplica[], options: ScheduleOptions): Decision {
    const refs: ReplicaRef[] = existing.map((r) => ({ ...r, size: volume.size, inStatus: true }));
    for (const r of this.replicas(volume.name)) {
      refs.push({ node: r.node, disk: r.disk, failed: false, evictionRequested: false, size: r.size, inStatus: true });
    }
    const settings = this.#settings.values;
    const result = scheduleVolume({
      nodes: this.#nodeList, settings, volume, replicas: refs,
      now: options.now, staleAfterSeconds: options.staleAfterSeconds, explain: options.explain,
      ...(options.target ? { target: options.target } : {}),
      cache: this.#scheduleCache,
    });
    if (result.missing === 0) return { outcome: { outcome: 'nothing_missing', replicas: [], proposed: [], result }, nodes: [], sequence: 0 };
    const placedAll = result.unscheduled.length === 0;
    const accepted = placedAll ||
      (settings['allow-volume-creation-with-degraded-availability'] && result.placements.length > 0);
    if (!accepted) return { outcome: { outcome: 'no_valid_target', replicas: [], proposed: [], result }, nodes: [], sequence: 0 };

    const proposed: ProposedReplica[] = result.placements.map((p) => ({
      volume: volume.name, node: p.disk.node, disk: p.disk.name, diskPath: p.disk.path, size: volume.size,
    }));
    const outcome = placedAll ? 'placed' : 'degraded';
    // A dry run claims nothing, so it draws no names: nothing in its answer may look like a claim.
    if (options.dryRun) return { outcome: { outcome, replicas: [], proposed, result }, nodes: [], sequence: 0 };

    // Drawn above every number this instance saw (the volume's own record included): unique per volume, as claims
    // of the same volume on other instances write that record too, so theirs and this one cannot both commit.
    let sequence = this.#sequence;
    const createdAt = isoTime(options.now);
    const replicas: ReplicaRecord[] = proposed.map((p) => {
      let name: string;
      do name = `${volume.name}-r-${fnv1a(`${volume.name}#${++sequence}`)}`; while (this.#replicas.has(name));
      return { name, ...p, createdAt, createdBy: options.createdBy ?? null };
    });
    const nodes = [...new Set(result.placements.map((p) => p.disk.node))];
    return { outcome: { outcome, replicas, proposed, result }, nodes, sequence };
  }

  /**
   * What a decision commits. Every claim on a disk writes that disk's usage record and every claim of a volume the
   * volume's record, each expecting the generation the decision saw: of two instances placing on the last bytes
   * of one disk (or the missing replicas of one volume), only the first commits. The placement nodes' reports are
   * expected too: a report that changed their space meanwhile makes the claim decide again. No record shared by
   * every claim is written: claims on other disks of other volumes neither conflict nor wait for one another (the
   * name numbers advance in the volume's record; see KIND.meta).
   */
  #claim(volume: VolumeSpec, { outcome, nodes, sequence }: Decision): Omit<Claim<never>, 'result'> {
    const records = outcome.replicas;
    if (records.length === 0) return { writes: [], expect: [] };
    const writes: StoreWrite[] = records.map((r) => ({ kind: KIND.replica, key: r.name, value: r }));
    // Each replica name must be new (generation 0 = must not exist).
    const expect: StoreExpectation[] = records.map((r) => ({ kind: KIND.replica, key: r.name, generation: 0 }));
    const onDisk = new Map<string, ReplicaRecord[]>();
    for (const r of records) {
      const id = diskId(r.node, r.disk);
      const list = onDisk.get(id);
      if (list) list.push(r);
      else onDisk.set(id, [r]);
    }
    for (const [id, added] of onDisk) this.#usage(writes, expect, id, added, null);
    for (const node of nodes) expect.push(this.#expectation(KIND.node, node));
    const claims: VolumeClaims = { replicas: (this.#byVolume.get(volume.name)?.size ?? 0) + records.length, sequence };
    writes.push({ kind: KIND.volume, key: volume.name, value: claims });
    expect.push(this.#expectation(KIND.volume, volume.name));
    return { writes, expect };
  }
}

/**
 * The settings a store kept before they were runtime settings (KIND.settings), over the defaults: the start of the
 * runtime settings, so that an older data directory keeps its values. Refused stored values fall back to defaults.
 */
export async function legacySettings(store: AsyncStore): Promise<ReplicaSettings> {
  const stored = (await store.get<Record<string, unknown>>(KIND.settings, SETTINGS_KEY))?.value ?? {};
  const settings = defaultSettings() as unknown as Record<string, unknown>;
  for (const name of SETTING_NAMES) {
    if (Object.hasOwn(stored, name) && settingValueError(name, stored[name]) === null) settings[name] = stored[name];
  }
  return settings as unknown as ReplicaSettings;
}
