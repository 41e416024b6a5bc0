// The replica dialect's state and use cases: nodes and disks as reported, Berth's own replicas, the settings.
// In memory (authoritative for reads, indexed for the hot path), loaded from the store at start-up and written
// through with one synchronous store commit per change, before the in-memory state changes.
import { DomainError } from '../domain-errors.ts';
import { StoreConflictError, type Store, type StoredRecord, type StoreExpectation, type StoreWrite } from '../store/store.ts';
import { nodeReportAgeSeconds } from './filters.ts';
import { diskId, type DiskReport, type DiskView, type NodeReport, type NodeView, type ProposedReplica, type ReplicaRecord, type ReplicaRef, type VolumeSpec } from './model.ts';
import { failureDetail, scheduleVolume, type ScheduleResult } from './scheduler.ts';
import { defaultSettings, SETTING_NAMES, settingValueError, type ReplicaSettings } from './settings.ts';
import { checkDiskSpace, describeSpaceCheck } from './space.ts';

const KIND = {
  node: 'replicas.node',
  replica: 'replicas.replica',
  /** Where the settings were kept before they became runtime settings (src/settings.ts): read once as their start. */
  settings: 'replicas.settings',
  meta: 'replicas.meta',
} as const;
const SETTINGS_KEY = 'global';
const SEQUENCE_KEY = 'sequence';
/** Decisions tried before a store conflict becomes a 409. */
const CLAIM_ATTEMPTS = 3;

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
 * A store for a simulation: the records in memory, commits applied there (with the name-must-be-new expectation),
 * nothing written anywhere else.
 */
class ScratchStore implements Store {
  readonly location = 'simulation (memory)';
  readonly #records = new Map<string, Map<string, StoredRecord>>();
  #generation = 0;

  load<V>(kind: string): Array<StoredRecord<V>> {
    return [...(this.#records.get(kind)?.values() ?? [])] as Array<StoredRecord<V>>;
  }

  get<V>(kind: string, key: string): StoredRecord<V> | undefined {
    return this.#records.get(kind)?.get(key) as StoredRecord<V> | undefined;
  }

  commit(writes: readonly StoreWrite[], expect: readonly StoreExpectation[] = []): number[] {
    for (const e of expect) {
      const actual = this.get(e.kind, e.key)?.generation ?? 0;
      if (actual !== e.generation) throw new StoreConflictError(e, actual);
    }
    return writes.map((w) => {
      let kind = this.#records.get(w.kind);
      if (!kind) this.#records.set(w.kind, (kind = new Map()));
      if (w.value === null) {
        kind.delete(w.key);
        return 0;
      }
      kind.set(w.key, { key: w.key, value: w.value, generation: ++this.#generation });
      return this.#generation;
    });
  }

  close(): void {}
}

/** How many more volumes fit (POST /replicas/headroom). */
export interface Headroom {
  fits: number;
  /** `max` was reached: more may fit. */
  truncated: boolean;
  /** Why the next volume would not get every replica placed (the refusal's detail); null when truncated. */
  limit: string | null;
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

export class ReplicaService {
  readonly #store: Store;
  readonly #nodes = new Map<string, NodeState>();
  /** Sorted by name: the scheduler's deterministic iteration order. */
  #nodeList: NodeState[] = [];
  readonly #replicas = new Map<string, ReplicaRecord>();
  readonly #byVolume = new Map<string, Set<string>>();
  readonly #settings: SettingsView;
  #sequence = 0;

  /** `settings`: the runtime settings; every decision reads their current values. */
  constructor(store: Store, settings: SettingsView) {
    this.#store = store;
    this.#settings = settings;
    this.#load();
  }

  #load(): void {
    this.#sequence = this.#store.get<number>(KIND.meta, SEQUENCE_KEY)?.value ?? 0;
    for (const rec of this.#store.load<{ report: NodeReport; reportedAt: number }>(KIND.node)) {
      this.#nodes.set(rec.key, makeNode(rec.key, rec.value.report, rec.value.reportedAt));
    }
    this.#nodeList = [...this.#nodes.values()].sort(byName);
    for (const rec of this.#store.load<ReplicaRecord>(KIND.replica)) this.#addReplica({ ...rec.value, createdBy: rec.value.createdBy ?? null });
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

  putNode(name: string, report: NodeReport, now: number): NodeState {
    const old = this.#nodes.get(name);
    if (old) {
      for (const d of old.disks) {
        if (d.replicas.size > 0 && !Object.hasOwn(report.disks, d.name)) {
          throw new DomainError('DISK_HAS_REPLICAS',
            `disk ${d.name} on node ${name} holds ${d.replicas.size} replica(s) placed by Berth (${[...d.replicas].sort().slice(0, 5).join(', ')}); ` +
            'delete them before removing the disk from the report');
        }
      }
    }
    this.#store.commit([{ kind: KIND.node, key: name, value: { report, reportedAt: now } }]);
    const node = makeNode(name, report, now);
    if (old) {
      for (const d of node.disks) {
        const before = old.disks.find((x) => x.name === d.name);
        if (before) for (const r of before.replicas) d.add(this.#replicas.get(r)!);
      }
      this.#nodeList[this.#nodeList.indexOf(old)] = node;
    } else {
      this.#nodeList.push(node);
      this.#nodeList.sort(byName);
    }
    this.#nodes.set(name, node);
    return node;
  }

  /** Longhorn refuses to delete a node that still has replicas; so does Berth (its own replicas). */
  deleteNode(name: string): void {
    const node = this.#nodes.get(name);
    if (!node) throw new DomainError('NOT_FOUND', `node ${name} not found`);
    const held = node.disks.flatMap((d) => [...d.replicas]).sort();
    if (held.length > 0) {
      throw new DomainError('NODE_HAS_REPLICAS',
        `node ${name} holds ${held.length} replica(s) placed by Berth (${held.slice(0, 5).join(', ')}${held.length > 5 ? ', …' : ''}); delete them first`);
    }
    this.#store.commit([{ kind: KIND.node, key: name, value: null }]);
    this.#nodes.delete(name);
    this.#nodeList.splice(this.#nodeList.indexOf(node), 1);
  }

  deleteReplica(name: string): ReplicaRecord {
    const replica = this.#replicas.get(name);
    if (!replica) throw new DomainError('NOT_FOUND', `replica ${name} not found`);
    this.#store.commit([{ kind: KIND.replica, key: name, value: null }]);
    this.#replicas.delete(name);
    const names = this.#byVolume.get(replica.volume)!;
    names.delete(name);
    if (names.size === 0) this.#byVolume.delete(replica.volume);
    this.#disk(replica.node, replica.disk)?.remove(replica);
    return replica;
  }

  #disk(node: string, disk: string): DiskState | undefined {
    return this.#nodes.get(node)?.disks.find((d) => d.name === disk);
  }

  #addReplica(r: ReplicaRecord): void {
    this.#replicas.set(r.name, r);
    let names = this.#byVolume.get(r.volume);
    if (!names) this.#byVolume.set(r.volume, (names = new Set()));
    names.add(r.name);
    this.#disk(r.node, r.disk)?.add(r);
  }

  /**
   * A copy of this service for a what-if simulation: the same nodes, replicas and name sequence, the given
   * settings, and a store in memory. What the copy does changes nothing here and writes nothing to the store.
   */
  fork(settings: ReplicaSettings): ReplicaService {
    const scratch = new ScratchStore();
    const writes: StoreWrite[] = [{ kind: KIND.meta, key: SEQUENCE_KEY, value: this.#sequence }];
    for (const n of this.#nodeList) writes.push({ kind: KIND.node, key: n.name, value: { report: n.report, reportedAt: n.reportedAt } });
    for (const r of this.#replicas.values()) writes.push({ kind: KIND.replica, key: r.name, value: r });
    scratch.commit(writes);
    return new ReplicaService(scratch, { values: Object.freeze({ ...settings }) });
  }

  /**
   * How many more new volumes like `volume` (no replicas yet) get every replica placed, one after another, each
   * claimed as POST /replicas/schedule claims it (its replicas' bytes join their disks' storageScheduled, which
   * the next volume's space checks and balance selection see). Decided on a copy of the disks: nothing changes.
   */
  headroom(volume: VolumeSpec, max: number, options: { now: number; staleAfterSeconds: number }): Headroom {
    type Scratch = { -readonly [K in keyof DiskView]: DiskView[K] };
    const nodes: NodeView[] = this.#nodeList.map((n) => ({ ...n, disks: n.disks.map((d): Scratch => ({ ...d })) }));
    const settings = this.#settings.values;
    for (let fits = 0; fits < max; fits++) {
      const result = scheduleVolume({ nodes, settings, volume, replicas: [], explain: false, ...options });
      if (result.unscheduled.length > 0) return { fits, truncated: false, limit: failureDetail(result.unscheduled) };
      for (const p of result.placements) (p.disk as Scratch).storageScheduled += volume.size;
    }
    return { fits: max, truncated: true, limit: null };
  }

  /**
   * Decides where the volume's missing replicas go and, unless dryRun, claims them: one store commit, then the
   * in-memory state. Synchronous from decision to claim, so concurrent requests cannot both take the last byte.
   */
  schedule(
    volume: VolumeSpec,
    existing: ReadonlyArray<{ node: string; disk: string; failed: boolean; evictionRequested: boolean }>,
    options: ScheduleOptions,
  ): ScheduleOutcome {
    // With the embedded store a claim cannot conflict; a store shared by several instances could already hold a
    // replica name. Then decide again with fresh names, a few times, as DESIGN.md's optimistic claims say.
    for (let attempt = 1; ; attempt++) {
      try {
        return this.#scheduleOnce(volume, existing, options);
      } catch (err) {
        if (!(err instanceof StoreConflictError)) throw err;
        if (attempt >= CLAIM_ATTEMPTS) {
          throw new DomainError('CONFLICT', `the claim for volume ${volume.name} conflicted ${attempt} times in the store; retry`);
        }
      }
    }
  }

  #scheduleOnce(
    volume: VolumeSpec,
    existing: ReadonlyArray<{ node: string; disk: string; failed: boolean; evictionRequested: boolean }>,
    options: ScheduleOptions,
  ): ScheduleOutcome {
    const refs: ReplicaRef[] = existing.map((r) => ({ ...r, size: volume.size, inStatus: true }));
    for (const r of this.replicas(volume.name)) {
      refs.push({ node: r.node, disk: r.disk, failed: false, evictionRequested: false, size: r.size, inStatus: true });
    }
    const settings = this.#settings.values;
    const result = scheduleVolume({
      nodes: this.#nodeList, settings, volume, replicas: refs,
      now: options.now, staleAfterSeconds: options.staleAfterSeconds, explain: options.explain,
      ...(options.target ? { target: options.target } : {}),
    });
    if (result.missing === 0) return { outcome: 'nothing_missing', replicas: [], proposed: [], result };
    const placedAll = result.unscheduled.length === 0;
    const accepted = placedAll ||
      (settings['allow-volume-creation-with-degraded-availability'] && result.placements.length > 0);
    if (!accepted) return { outcome: 'no_valid_target', replicas: [], proposed: [], result };

    const proposed: ProposedReplica[] = result.placements.map((p) => ({
      volume: volume.name, node: p.disk.node, disk: p.disk.name, diskPath: p.disk.path, size: volume.size,
    }));
    const outcome = placedAll ? 'placed' : 'degraded';
    // A dry run claims nothing, so it draws no names: nothing in its answer may look like a claim.
    if (options.dryRun) return { outcome, replicas: [], proposed, result };

    let sequence = this.#sequence;
    const createdAt = new Date(options.now).toISOString();
    const records: ReplicaRecord[] = proposed.map((p) => {
      let name: string;
      do name = `${volume.name}-r-${fnv1a(`${volume.name}#${++sequence}`)}`; while (this.#replicas.has(name));
      return { name, ...p, createdAt, createdBy: options.createdBy ?? null };
    });

    const writes: StoreWrite[] = records.map((r) => ({ kind: KIND.replica, key: r.name, value: r }));
    writes.push({ kind: KIND.meta, key: SEQUENCE_KEY, value: sequence });
    try {
      // Each replica name must be new: the claim's expectation (generation 0 = must not exist).
      this.#store.commit(writes, records.map((r) => ({ kind: KIND.replica, key: r.name, generation: 0 })));
    } catch (err) {
      // The names are spent either way; the next attempt draws new ones.
      if (err instanceof StoreConflictError) this.#sequence = sequence;
      throw err;
    }
    this.#sequence = sequence;
    for (const r of records) this.#addReplica(r);
    return { outcome, replicas: records, proposed, result };
  }
}

/**
 * The settings a store kept before they were runtime settings (KIND.settings), over the defaults: the start of the
 * runtime settings, so that an older data directory keeps its values. Refused stored values fall back to defaults.
 */
export function legacySettings(store: Store): ReplicaSettings {
  const stored = store.get<Record<string, unknown>>(KIND.settings, SETTINGS_KEY)?.value ?? {};
  const settings = defaultSettings() as unknown as Record<string, unknown>;
  for (const name of SETTING_NAMES) {
    if (Object.hasOwn(stored, name) && settingValueError(name, stored[name]) === null) settings[name] = stored[name];
  }
  return settings as unknown as ReplicaSettings;
}
