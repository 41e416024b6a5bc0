// The volumes service: ingests capability reports, answers get_pools, decides and claims, releases.
// State lives here in memory (what reads answer from), following the store through one StoreFollower: every write
// is durable before the reply, and memory changes only when a record change is applied (this instance's own
// commits as soon as the store has them in place, every other instance's through the change feed, alike). Pool
// figures are derived from the records (allocated and consumed from the volumes), so they come out the same
// whichever way a change arrives.
import { DomainError, badRequest, notFound } from '../domain-errors.ts';
import type { Decision } from '../pipeline/pipeline.ts';
import { StoreFollower, WRITE_ATTEMPTS, type FollowedView } from '../store/follow.ts';
import {
  StoreConflictError, type AsyncStore, type StagedCommit, type StoredRecord, type StoreExpectation, type StoreWrite,
} from '../store/store.ts';
import { isoTime } from '../iso-time.ts';
import { uuidV7 } from '../uuid-v7.ts';
import { maxOverSubscriptionRatio, type Capacity } from './capacity.ts';
import { boolFromString, compileExtraSpecs, SPECS_MATCH } from './extra-specs.ts';
import { PoolTable, type BackendState, type PoolState, type VolumeRecord, type VolumeRequest } from './model.ts';
import {
  explainOf, rejectionsOf, targetVerdict, volumesPipeline, type Explain, type TargetVerdict, type VolumesPipeline,
} from './scheduler.ts';
import { BestFirst, type BestDecision } from './best-first.ts';
import { headroom, type HeadroomAnswer } from './headroom.ts';
import type { BackendReport, HeadroomBody, PoolReport, ScheduleBody } from './schemas.ts';
import { ScratchFollower } from './scratch-follower.ts';
import type { VolumesSettingsValues } from './settings.ts';

const KIND_BACKEND = 'volumes.backend';
const KIND_POOL = 'volumes.pool';
const KIND_VOLUME = 'volumes.volume';
const KINDS = [KIND_BACKEND, KIND_POOL, KIND_VOLUME];

/** What the service commits through: the store's follower, or a simulation's scratch one. */
export type VolumesWriter = Pick<StoreFollower, 'generation' | 'stage' | 'exclusive' | 'catchUp' | 'write'>;

interface StoredBackend {
  order: number;
  reported_at: number;
  report_seq: number;
  report: BackendReport;
}

interface StoredPool {
  backend: string;
  report_seq: number;
  allocated_capacity_gb: number;
  consumed_gb: number;
}

/** Cinder expands storage_protocol to its variants for matching (cinder/common/constants.py). */
const PROTOCOL_VARIANTS: Record<string, string[]> = {
  iscsi: ['iSCSI', 'iscsi'],
  fc: ['FC', 'fibre_channel'],
  fibre_channel: ['FC', 'fibre_channel'],
  nfs: ['NFS', 'nfs'],
  'nvme-of': ['NVMe-oF', 'NVMeOF', 'nvmeof'],
  nvmeof: ['NVMe-oF', 'NVMeOF', 'nvmeof'],
};

/** Backend-level fields Cinder's _append_backend_info copies into every pool. */
const BACKEND_INFO_KEYS = ['volume_backend_name', 'vendor_name', 'driver_version', 'storage_protocol'] as const;
/** Pool-level capacity fields (also at the top level of a legacy report). */
const POOL_FIELDS = [
  'total_capacity_gb', 'free_capacity_gb', 'provisioned_capacity_gb', 'reserved_percentage',
  'max_over_subscription_ratio', 'thin_provisioning_support', 'thick_provisioning_support',
  'pure_automatic_max_oversubscription_ratio', 'auto_calc_max_oversubscription_ratio',
  'total_used_capacity_gb', 'cinder_used_capacity_gb',
] as const;

/** The answer of PUT /backends/{host}. */
export interface ReportAnswer {
  backend: string;
  pools: Array<{ name: string; generation: number; max_over_subscription_ratio: number }>;
  warnings: string[];
}

export interface ScheduleOptions {
  dryRun: boolean;
  explain: boolean;
  /** Recorded on the claim (the caller's token name or JWT subject). */
  createdBy?: string | null;
  /** explain_target: this pool's verdict only (404 when no pool has the name). */
  explainTarget?: string;
}

/** The answer of POST /volumes/schedule. A dry run says so and names no volume id the client did not give. */
export interface ScheduleAnswer {
  dryRun: boolean;
  pool: string;
  weight: number;
  volume: { id?: string; size: number; pool: string };
  explain?: Explain;
  target?: TargetVerdict;
}

/** What a scheduling request came to: the answer or the refusal, and what the decision saw (logs, metrics). */
export interface VolumeScheduleResult {
  outcome: 'placed' | 'dry_run' | 'no_valid_backend' | 'conflict';
  answer?: ScheduleAnswer;
  error?: DomainError;
  pool: string | null;
  candidates: number;
  passed: number;
  rejections: Map<string, number>;
}

/** One decision's outcome: the final answer, or the pool to claim on. */
type Decided = VolumeScheduleResult | {
  claim: { pool: PoolState; answer: ScheduleAnswer; seen: Pick<VolumeScheduleResult, 'candidates' | 'passed' | 'rejections'>; thin: boolean };
};

function volumeOf(stored: VolumeRecord): VolumeRecord {
  return { ...stored, created_by: stored.created_by ?? null };
}

/** Cinder's candidate order: backends by report order; a tie (two instances' first reports at once) by host. */
function backendBefore(a: { order: number; host: string }, b: { order: number; host: string }): number {
  return a.order - b.order || Buffer.compare(Buffer.from(a.host), Buffer.from(b.host));
}

export class VolumesService {
  readonly #writer: VolumesWriter;
  #close: () => void = () => undefined;
  /** The runtime settings in force (start-up options until changed over PUT /settings/volumes). */
  #settings: VolumesSettingsValues;
  readonly #now: () => number;
  #pipeline: VolumesPipeline;
  /** The same decisions without a pass over every pool, when the pipeline is one it covers (else null). */
  #bestFirst: BestFirst | null;
  /** In Cinder's candidate order (see backendBefore). */
  #backends = new Map<string, BackendState>();
  readonly #pools = new Map<string, PoolState>();
  readonly #volumes = new Map<string, VolumeRecord>();
  /** Every pool, backends in report order then pools in report order: Cinder's candidate order. */
  #table = new PoolTable([]);
  #nextOrder = 1;
  #nextSeq = 1;
  /**
   * Whether a claim also writes its pool's record, expecting the generation it read: only where other instances write
   * too (of two claims on one pool, the record makes one conflict). The embedded store has one writer, whose claims
   * are decided one at a time on memory: there a claim writes its volume alone (the pool's figures are derived from
   * the volumes in any case), which halves its share of the commit. Releases and reports write the record always.
   */
  readonly #arbitrated: boolean;
  /** What the follower (or a simulation's scratch writer) moves memory on with. */
  readonly #view: FollowedView = {
    reset: (records) => this.#reset(records),
    apply: (kind, key, value, generation) => this.#apply(kind, key, value, generation),
  };

  private constructor(settings: VolumesSettingsValues, now: () => number, arbitrated: boolean,
    writerOf: (view: FollowedView) => VolumesWriter) {
    this.#settings = settings;
    this.#arbitrated = arbitrated;
    this.#now = now;
    this.#pipeline = volumesPipeline(settings);
    this.#bestFirst = BestFirst.of(this.#pipeline, settings.over_provisioning_calculation);
    this.#writer = writerOf(this.#view);
  }

  /** The service loaded from the store and following it (every instance's writes) until close(). */
  static async open(settings: VolumesSettingsValues, store: AsyncStore, now: () => number): Promise<VolumesService> {
    let follower!: StoreFollower;
    const service = new VolumesService(settings, now, store.shared, (view) => (follower = new StoreFollower(store, KINDS, view)));
    await follower.start();
    service.#close = () => follower.close();
    return service;
  }

  /** Stops following the store (the app is closing). */
  close(): void {
    this.#close();
  }

  // ---- loading and following ----------------------------------------------------------------------------------

  /** The whole state from a snapshot (at start-up, and when the feed was pruned past this instance). */
  #reset(records: ReadonlyMap<string, readonly StoredRecord[]>): void {
    this.#backends = new Map();
    this.#volumes.clear();
    this.#nextOrder = 1;
    this.#nextSeq = 1;
    const poolGenerations = new Map((records.get(KIND_POOL) ?? []).map((r) => [r.key, r.generation]));
    for (const v of (records.get(KIND_VOLUME) ?? []) as ReadonlyArray<StoredRecord<VolumeRecord>>) {
      this.#volumes.set(v.key, volumeOf(v.value));
      this.#seqSeen(v.value.report_seq);
      // A pool's generation is the newest of its record and the volumes placed on it (see #arbitrated).
      if (v.generation > (poolGenerations.get(v.value.pool) ?? 0)) poolGenerations.set(v.value.pool, v.generation);
    }
    // Records come in key order, and the sort is stable: the order of backendBefore.
    const backends = [...(records.get(KIND_BACKEND) ?? []) as ReadonlyArray<StoredRecord<StoredBackend>>]
      .sort((a, b) => a.value.order - b.value.order);
    for (const b of backends) {
      const stored = b.value;
      this.#orderSeen(stored.order);
      this.#seqSeen(stored.report_seq);
      // The report was validated (and its auto ratio computed) when it was accepted; rebuild the same state.
      const built = this.#buildBackend(b.key, stored.report, stored.reported_at, stored.report_seq, stored.order);
      if (!built.ok) continue;
      for (const pool of built.backend.pools) {
        pool.generation = poolGenerations.get(pool.name) ?? 0;
      }
      this.#backends.set(b.key, built.backend);
    }
    // allocated and consumed come from the volumes that still exist.
    const byName = new Map<string, PoolState>();
    for (const backend of this.#backends.values()) for (const pool of backend.pools) byName.set(pool.name, pool);
    for (const vol of this.#volumes.values()) {
      const pool = byName.get(vol.pool);
      if (!pool) continue;
      pool.allocated += vol.size;
      if (vol.report_seq === pool.reportSeq) pool.consumed += vol.size;
    }
    // The auto ratio and provisioned fallback were computed at report time from the allocated figure of that moment.
    for (const backend of this.#backends.values()) {
      for (const pool of backend.pools) {
        const allocatedAtReport = pool.allocated - pool.consumed;
        this.#computeRatio(pool, backend.report, allocatedAtReport);
        pool.capabilities.allocated_capacity_gb = allocatedAtReport;
      }
    }
    this.#rebuildCandidates(true);
  }

  #orderSeen(order: number): void {
    if (order >= this.#nextOrder) this.#nextOrder = order + 1;
  }

  #seqSeen(reportSeq: number): void {
    if (reportSeq >= this.#nextSeq) this.#nextSeq = reportSeq + 1;
  }

  /** One record's new value (null: deleted), whoever committed it. Proportional to the record: a claim is O(1). */
  #apply(kind: string, key: string, value: unknown, generation: number): void {
    if (kind === KIND_VOLUME) {
      this.#applyVolume(key, value as VolumeRecord | null, generation);
    } else if (kind === KIND_POOL) {
      // The pool record arbitrates claims; its figures are derived from the volumes, only its generation is news.
      const pool = this.#pools.get(key);
      if (pool) pool.generation = value === null ? 0 : Math.max(pool.generation, generation);
    } else if (kind === KIND_BACKEND) {
      this.#applyBackend(key, value as StoredBackend | null);
    }
  }

  /**
   * consume_from_volume (and its release): the pool's allocated, and consumed if placed since its report; a new
   * volume's generation is its pool's too (a release writes the pool record).
   */
  #applyVolume(id: string, stored: VolumeRecord | null, generation: number): void {
    const previous = this.#volumes.get(id);
    if (previous) {
      this.#volumes.delete(id);
      this.#consume(previous, -1);
    }
    if (stored === null) return;
    const volume = volumeOf(stored);
    this.#volumes.set(id, volume);
    this.#seqSeen(volume.report_seq);
    const pool = this.#consume(volume, 1);
    if (pool && generation > pool.generation) pool.generation = generation;
  }

  /** The volume's size on its pool's figures (sign −1: taken off); the pool, if it still exists. */
  #consume(volume: VolumeRecord, sign: 1 | -1): PoolState | undefined {
    const pool = this.#pools.get(volume.pool);
    if (!pool) return undefined;
    pool.allocated += sign * volume.size;
    if (volume.report_seq === pool.reportSeq) pool.consumed += sign * volume.size;
    this.#table.refresh(pool.index);
    return pool;
  }

  /** A backend's new report (or its removal): its pools rebuilt, their figures carried over, the table rebuilt. */
  #applyBackend(host: string, stored: StoredBackend | null): void {
    const previous = this.#backends.get(host);
    const built = stored === null
      ? undefined
      : this.#buildBackend(host, stored.report, stored.reported_at, stored.report_seq, stored.order);
    if (stored !== null) {
      this.#orderSeen(stored.order);
      this.#seqSeen(stored.report_seq);
    }
    // As at load: a stored report that does not build is left out.
    if (!built?.ok) {
      if (!previous) return;
      this.#backends.delete(host);
      this.#rebuildCandidates();
      return;
    }
    const backend = built.backend;
    for (const pool of backend.pools) {
      const sums = this.#volumesOn(pool);
      pool.allocated = sums.allocated;
      pool.consumed = sums.consumed;
      const allocatedAtReport = pool.allocated - pool.consumed;
      this.#computeRatio(pool, backend.report, allocatedAtReport);
      pool.capabilities.allocated_capacity_gb = allocatedAtReport;
      // The pool records of this report come next (same commit): until then, the generation memory holds.
      pool.generation = this.#writer.generation(KIND_POOL, pool.name);
    }
    const last = [...this.#backends.values()].at(-1);
    if (previous || !last || backendBefore(last, backend) < 0) {
      this.#backends.set(host, backend); // a re-report keeps its place
    } else {
      const entries: Array<[string, BackendState]> = [...this.#backends, [host, backend]];
      this.#backends = new Map(entries.sort(([, a], [, b]) => backendBefore(a, b)));
    }
    this.#rebuildCandidates();
  }

  /** The sizes of the volumes on this pool, and of those placed since its report (carried over when it exists). */
  #volumesOn(pool: PoolState): { allocated: number; consumed: number } {
    const existing = this.#pools.get(pool.name);
    if (existing) return { allocated: existing.allocated, consumed: existing.reportSeq === pool.reportSeq ? existing.consumed : 0 };
    let allocated = 0;
    let consumed = 0;
    for (const v of this.#volumes.values()) {
      if (v.pool !== pool.name) continue;
      allocated += v.size;
      if (v.report_seq === pool.reportSeq) consumed += v.size;
    }
    return { allocated, consumed };
  }

  /**
   * New runtime settings: the next decision uses them. A changed ratio is recomputed for every pool as at its report
   * (from the allocated figure of that moment, as a restart rebuilds it); a changed default zone moves the backends
   * that report none; then every row of the table is recomputed.
   */
  applySettings(settings: VolumesSettingsValues): void {
    const previous = this.#settings;
    this.#settings = settings;
    this.#pipeline = volumesPipeline(settings);
    this.#bestFirst = BestFirst.of(this.#pipeline, settings.over_provisioning_calculation);
    for (const backend of this.#backends.values()) {
      if (backend.report.availability_zone === undefined) {
        backend.availabilityZone = settings.storage_availability_zone;
        for (const pool of backend.pools) pool.availabilityZone = settings.storage_availability_zone;
      }
      if (previous.max_over_subscription_ratio !== settings.max_over_subscription_ratio) {
        // A pool whose 'auto' ratio cannot be computed (Cinder would raise at its next report) keeps its ratio.
        for (const pool of backend.pools) this.#computeRatio(pool, backend.report, pool.allocated - pool.consumed);
      }
    }
    this.#rebuildCandidates(true);
  }

  get settings(): VolumesSettingsValues {
    return this.#settings;
  }

  /**
   * A copy of this state under these settings, for a simulation: it schedules, claims and releases as this service
   * does, into a store that keeps nothing. This service, its pools and their generations are not touched.
   */
  simulation(settings: VolumesSettingsValues): VolumesService {
    const copy = new VolumesService(this.#settings, this.#now, false, (view) => new ScratchFollower(view));
    for (const [host, backend] of this.#backends) {
      copy.#backends.set(host, { ...backend, pools: backend.pools.map((pool) => ({ ...pool })) });
    }
    for (const [id, volume] of this.#volumes) copy.#volumes.set(id, volume);
    copy.#nextOrder = this.#nextOrder;
    copy.#nextSeq = this.#nextSeq;
    copy.applySettings(settings);
    return copy;
  }

  /** Each pool's figures now (a simulation's final state). */
  poolFigures(): Array<{
    pool: string; allocated_capacity_gb: number; free_capacity_gb: Capacity; provisioned_capacity_gb: number;
    virtual_free_capacity_gb: number | null; max_over_subscription_ratio: number;
  }> {
    return this.#table.pools.map((p) => ({
      pool: p.name, allocated_capacity_gb: p.allocated, free_capacity_gb: p.free, provisioned_capacity_gb: p.provisioned,
      virtual_free_capacity_gb: this.virtualFree(p), max_over_subscription_ratio: p.mosr,
    }));
  }

  /** The table of every pool; `recompute`: every row from the pools' state (else unchanged pools keep their rows). */
  #rebuildCandidates(recompute = false): void {
    this.#pools.clear();
    const list: PoolState[] = [];
    for (const backend of this.#backends.values()) {
      for (const pool of backend.pools) {
        list.push(pool);
        this.#pools.set(pool.name, pool);
      }
    }
    this.#table = recompute ? new PoolTable(list) : new PoolTable(list, this.#table);
  }

  // ---- ingest -------------------------------------------------------------------------------------------------

  /** The pools of a report as Cinder sees them: `pools`, or the legacy top-level single pool. */
  #poolReports(report: BackendReport): PoolReport[] {
    if (report.pools) return report.pools;
    const legacy: Record<string, unknown> = { pool_name: report.volume_backend_name ?? '_pool0' };
    for (const key of POOL_FIELDS) if (report[key] !== undefined) legacy[key] = report[key];
    return [legacy as PoolReport];
  }

  /**
   * Builds backend and pool state from a validated report. Fails (with the field) where Cinder would raise while
   * ingesting: the 'auto' ratio dividing by zero.
   */
  #buildBackend(
    host: string,
    report: BackendReport,
    reportedAt: number,
    reportSeq: number,
    order: number,
  ): { ok: true; backend: BackendState } | { ok: false; errors: Array<{ path: string; message: string }> } {
    const availabilityZone = report.availability_zone ?? this.#settings.storage_availability_zone;
    const backend: BackendState = { host, order, report, reportedAt, reportSeq, availabilityZone, pools: [] };
    const backendInfo: Record<string, unknown> = {};
    for (const key of BACKEND_INFO_KEYS) if (report[key] !== undefined) backendInfo[key] = report[key];
    if (typeof report.storage_protocol === 'string') {
      backendInfo.storage_protocol = PROTOCOL_VARIANTS[report.storage_protocol.toLowerCase()] ?? report.storage_protocol;
    }
    const errors: Array<{ path: string; message: string }> = [];
    if (!report.pools) {
      for (const field of ['total_capacity_gb', 'free_capacity_gb'] as const) {
        if (report[field] === undefined) {
          errors.push({ path: field, message: 'Required: a report without pools is a legacy single pool and needs its capacity' });
        }
      }
      if (errors.length > 0) return { ok: false, errors };
    }
    const seen = new Set<string>();
    this.#poolReports(report).forEach((p, index) => {
      const path = report.pools ? `pools.${index}` : '';
      const name = `${host}#${p.pool_name}`;
      if (seen.has(p.pool_name)) {
        errors.push({ path: `${path}.pool_name`.replace(/^\./, ''), message: `duplicate pool_name ${p.pool_name}` });
        return;
      }
      seen.add(p.pool_name);
      const reported: Record<string, unknown> = { ...p };
      delete reported.allocated_capacity_gb;
      const pool: PoolState = {
        name,
        backend: host,
        poolName: p.pool_name,
        index: -1,
        capabilities: {},
        reported,
        availabilityZone,
        reportedAt,
        reportSeq,
        total: p.total_capacity_gb as Capacity,
        reportedFree: p.free_capacity_gb as Capacity,
        reportedProvisioned: p.provisioned_capacity_gb,
        reservedPercentage: p.reserved_percentage ?? 0,
        thinSupport: p.thin_provisioning_support ?? false,
        thickSupport: p.thick_provisioning_support ?? false,
        mosr: 1,
        mosrAuto: false,
        allocated: 0,
        consumed: 0,
        generation: 0,
        free: p.free_capacity_gb as Capacity,
        provisioned: 0,
      };
      pool.capabilities = { ...reported, ...backendInfo, pool_name: p.pool_name, allocated_capacity_gb: 0 };
      backend.pools.push(pool);
    });
    if (errors.length > 0) return { ok: false, errors };
    return { ok: true, backend };
  }

  /** utils.calculate_max_over_subscription_ratio at report time (provisioned falls back to allocated). */
  #computeRatio(pool: PoolState, report: BackendReport, allocated: number): { ok: true } | { ok: false; message: string } {
    const p = pool.reported as PoolReport;
    const vendorAuto = p.pure_automatic_max_oversubscription_ratio === true || p.auto_calc_max_oversubscription_ratio === true ||
      report.pure_automatic_max_oversubscription_ratio === true || report.auto_calc_max_oversubscription_ratio === true;
    const result = maxOverSubscriptionRatio({
      thinSupport: pool.thinSupport,
      total: pool.total,
      free: pool.reportedFree,
      provisioned: pool.reportedProvisioned ?? allocated,
      reported: vendorAuto ? 'auto' : p.max_over_subscription_ratio,
      configured: this.#settings.max_over_subscription_ratio,
    });
    if (!result.ok) return result;
    pool.mosr = result.ratio;
    pool.mosrAuto = result.auto;
    return { ok: true };
  }

  /**
   * PUT /backends/{host}: validates everything first, then commits the backend and its pools (expecting the
   * generations memory read: the pool records' allocated figures come from memory), and memory follows the commit.
   */
  applyReport(host: string, report: BackendReport): Promise<ReportAnswer> {
    return this.#writer.write(() => {
      const { writes, expect, answer } = this.#reportCommit(host, report);
      return {
        writes, expect, result: (generations) => {
          answer.pools.forEach((pool, i) => {
            pool.generation = generations[i + 1]!;
          });
          return answer;
        },
      };
    }, () => new DomainError('CONFLICT', `Backend ${host} kept changing under the report; retry`));
  }

  /** The writes of a report and what they expect, decided on memory (which this does not change). */
  #reportCommit(host: string, report: BackendReport): { writes: StoreWrite[]; expect: StoreExpectation[]; answer: ReportAnswer } {
    const warnings: string[] = [];
    const previous = this.#backends.get(host);
    const order = previous?.order ?? this.#nextOrder;
    const seq = this.#nextSeq;
    const reportedAt = this.#now();
    const built = this.#buildBackend(host, report, reportedAt, seq, order);
    if (!built.ok) throw badRequest(built.errors.map((e) => `${e.path}: ${e.message}`).join('; '), built.errors);
    const backend = built.backend;
    const errors: Array<{ path: string; message: string }> = [];
    backend.pools.forEach((pool, index) => {
      const path = report.pools ? `pools.${index}.` : '';
      if ((report.pools ? report.pools[index]?.allocated_capacity_gb : report.allocated_capacity_gb) !== undefined) {
        warnings.push(`${path}allocated_capacity_gb is ignored: Berth computes it from the volumes it placed ` +
          `(drivers must not report it)`);
      }
      pool.allocated = this.#volumesOn(pool).allocated;
      const ratio = this.#computeRatio(pool, report, pool.allocated);
      if (!ratio.ok) errors.push({ path: `${path}free_capacity_gb`, message: ratio.message });
    });
    if (errors.length > 0) throw badRequest(errors.map((e) => `${e.path}: ${e.message}`).join('; '), errors);

    const writes: StoreWrite[] = [
      { kind: KIND_BACKEND, key: host, value: { order, reported_at: reportedAt, report_seq: seq, report } satisfies StoredBackend },
    ];
    for (const pool of backend.pools) {
      writes.push({ kind: KIND_POOL, key: pool.name, value: this.#storedPool(pool) });
    }
    const kept = new Set(backend.pools.map((p) => p.name));
    for (const old of previous?.pools ?? []) {
      if (!kept.has(old.name)) writes.push({ kind: KIND_POOL, key: old.name, value: null });
    }
    return {
      writes,
      expect: this.#expectations(writes),
      answer: {
        backend: host,
        pools: backend.pools.map((p) => ({ name: p.name, generation: 0, max_over_subscription_ratio: p.mosr })),
        warnings,
      },
    };
  }

  /** Each written record at the generation memory holds (0: must not exist): another instance's change conflicts. */
  #expectations(writes: readonly StoreWrite[]): StoreExpectation[] {
    return writes.map((w) => ({ kind: w.kind, key: w.key, generation: this.#writer.generation(w.kind, w.key) }));
  }

  #storedPool(pool: PoolState): StoredPool {
    return { backend: pool.backend, report_seq: pool.reportSeq, allocated_capacity_gb: pool.allocated, consumed_gb: pool.consumed };
  }

  /** DELETE /backends/{host}: forgets the backend and its pools (volumes placed there stay listed). */
  deleteBackend(host: string): Promise<void> {
    return this.#writer.write(() => {
      const backend = this.#backends.get(host);
      if (!backend) throw notFound(`No backend ${host}`);
      const writes: StoreWrite[] = [{ kind: KIND_BACKEND, key: host, value: null }];
      for (const pool of backend.pools) writes.push({ kind: KIND_POOL, key: pool.name, value: null });
      return { writes, expect: this.#expectations(writes), result: () => undefined };
    }, () => new DomainError('CONFLICT', `Backend ${host} kept changing under the removal; retry`));
  }

  listBackends(): Array<{ backend: string; availability_zone: string; reported_at: string; pools: string[] }> {
    return [...this.#backends.values()].map((b) => ({
      backend: b.host,
      availability_zone: b.availabilityZone,
      reported_at: isoTime(b.reportedAt),
      pools: b.pools.map((p) => p.name),
    }));
  }

  // ---- reads --------------------------------------------------------------------------------------------------

  /** Every pool in Cinder's candidate order. */
  get candidates(): readonly PoolState[] {
    return this.#table.pools;
  }

  get backends(): ReadonlyMap<string, BackendState> {
    return this.#backends;
  }

  pool(name: string): PoolState | undefined {
    return this.#pools.get(name);
  }

  /** Cinder's detail view: the reported capabilities plus backend info, with Berth's own figures. */
  poolDetail(pool: PoolState): Record<string, unknown> {
    const backend = this.#backends.get(pool.backend)!;
    const caps: Record<string, unknown> = { ...pool.reported };
    for (const key of BACKEND_INFO_KEYS) if (backend.report[key] !== undefined) caps[key] = backend.report[key];
    caps.pool_name = pool.poolName;
    caps.timestamp = isoTime(pool.reportedAt);
    caps.allocated_capacity_gb = pool.allocated;
    caps.max_over_subscription_ratio = pool.mosr;
    caps.availability_zone = pool.availabilityZone;
    caps.generation = pool.generation;
    caps.current = {
      free_capacity_gb: pool.free,
      provisioned_capacity_gb: pool.provisioned,
      virtual_free_capacity_gb: this.virtualFree(pool),
    };
    return caps;
  }

  /** get_pools' view of these pools: names, and with detail their capabilities. */
  poolViews(pools: readonly PoolState[], detail: boolean): Array<{ name: string; capabilities?: Record<string, unknown> }> {
    return pools.map((p) => (detail ? { name: p.name, capabilities: this.poolDetail(p) } : { name: p.name }));
  }

  /** Virtual free capacity for a thin request (what CapacityWeigher weighs); null for infinite/unknown pools. */
  virtualFree(pool: PoolState): number | null {
    return this.#table.figures.thinVirtualFreeOf(pool.index, this.#settings.over_provisioning_calculation);
  }

  /**
   * GET /pools: name and capability filters, volume_type (its capability specs), and with a size the decision itself:
   * the pools that would accept such a volume now, best first.
   */
  listPools(query: {
    name?: string;
    volume_type?: string;
    size?: number;
    availability_zone?: string;
    explain_target?: string;
    filters: Record<string, string>;
  }): PoolState[] & { target?: TargetVerdict } {
    const targetIndex = this.#targetIndex(query.explain_target);
    if (targetIndex !== undefined && query.size === undefined) {
      throw badRequest('explain_target needs size: it explains the decision for a volume of that size',
        [{ path: 'querystring.explain_target', message: 'needs size' }]);
    }
    const volumeType = query.volume_type === undefined ? {} : parseVolumeTypeParam(query.volume_type);
    const table = this.#table;
    let pools: PoolState[] = table.pools.slice();
    if (query.name !== undefined) pools = pools.filter((p) => p.name === query.name);
    for (const [key, want] of Object.entries(query.filters)) {
      pools = pools.filter((p) => equalAfterConvert(this.poolDetail(p)[key], want));
    }
    if (query.size === undefined) {
      const specs = compileExtraSpecs(volumeType.extra_specs);
      if (specs.length === 0) return pools;
      const row = table.capabilityRow(specs);
      return pools.filter((p) => row[p.index] === SPECS_MATCH);
    }
    const req = this.#request(query.size, volumeType.extra_specs, query.availability_zone);
    const among = pools.map((p) => p.index);
    const decision = this.#pipeline.decide(table, req, { among });
    const ranked = Array.from(decision.ranked, (i) => table.pools[i]!);
    if (targetIndex === undefined) return ranked;
    if (!among.includes(targetIndex)) {
      throw badRequest(`explain_target ${query.explain_target} is not among the pools this query selects`,
        [{ path: 'querystring.explain_target', message: 'not among the selected pools' }]);
    }
    return Object.assign(ranked, { target: targetVerdict(this.#pipeline, table, req, decision, targetIndex, among) });
  }

  /** The row of the pool explain_target names, or a 404 naming it. */
  #targetIndex(name: string | undefined): number | undefined {
    if (name === undefined) return undefined;
    const pool = this.#pools.get(name);
    if (!pool) throw notFound(`explain_target: no pool ${name}`);
    return pool.index;
  }

  #request(size: number, extraSpecs: Record<string, string> | undefined, availabilityZone: string | undefined): VolumeRequest {
    return {
      size,
      // A request is thin unless provisioning:type is exactly 'thick' (capacity_filter.py:109-114).
      thin: extraSpecs?.['provisioning:type'] !== 'thick',
      availabilityZone,
      specs: compileExtraSpecs(extraSpecs),
      now: this.#now(),
    };
  }

  // ---- decisions ----------------------------------------------------------------------------------------------

  /**
   * POST /volumes/schedule: decide, and unless dry_run claim. The claim commits the volume and, where instances share
   * the store, the pool record, expecting the pool's generation the decision read: every claim on the pool writes that
   * record, so of two instances taking the same capacity one conflicts, catches up with the feed and decides again (a
   * few times at most, then 409). One engine call per attempt: a miss takes its reasons from the same run.
   */
  async schedule(body: ScheduleBody, options: ScheduleOptions): Promise<VolumeScheduleResult> {
    // A dry run writes nothing: it needs no turn among the writes.
    if (options.dryRun) return this.#decide(body, options) as VolumeScheduleResult;
    // The turn ends once the claim is staged (the next decision sees it); the answer waits until it is durable.
    const done = await this.#writer.exclusive(async (): Promise<{ result: VolumeScheduleResult; durable?: Promise<void> }> => {
      for (let attempt = 1; ; attempt++) {
        const decided = this.#decide(body, options);
        if (!('claim' in decided)) return { result: decided };
        const { pool, answer, seen, thin } = decided.claim;
        const id = body.id ?? uuidV7(this.#now());
        try {
          const { durable } = await this.#claim(pool, id, body.size, thin, options.createdBy ?? null);
          // The answer is this decision's own: it now names the volume's id, first.
          answer.volume = { id, size: answer.volume.size, pool: answer.volume.pool };
          const result: VolumeScheduleResult = {
            outcome: 'placed', answer, pool: pool.name, candidates: seen.candidates, passed: seen.passed, rejections: seen.rejections,
          };
          return { result, durable };
        } catch (err) {
          if (!(err instanceof StoreConflictError)) throw err;
          if (attempt >= WRITE_ATTEMPTS) {
            const error = new DomainError('CONFLICT', `Pool ${pool.name} kept changing under the claim; retry`);
            return { result: { outcome: 'conflict', error, pool: pool.name, ...seen } };
          }
          await this.#writer.catchUp();
        }
      }
    });
    if (done.durable) await done.durable;
    return done.result;
  }

  /** One decision on memory as it is now: the final answer, or the pool to claim on (unless a dry run). */
  #decide(body: ScheduleBody, options: ScheduleOptions): Decided {
    if (body.id !== undefined && this.#volumes.has(body.id)) {
      throw new DomainError('VOLUME_EXISTS', `Volume ${body.id} already exists`);
    }
    const targetIndex = this.#targetIndex(options.explainTarget);
    const req = this.#request(body.size, body.volume_type?.extra_specs, body.availability_zone);
    const table = this.#table;
    // Only the winner is wanted: best-first when it covers the pipeline (null on a miss: the full run gives the reasons).
    const best = options.explain || targetIndex !== undefined ? null : this.#bestFirst?.decide(table, req) ?? null;
    if (best !== null) return this.#chosen(body, options, req, best, {});
    const decision = this.#pipeline.decide(table, req, options.explain ? {} : { limit: 1 });
    const explain = options.explain ? explainOf(decision, table) : undefined;
    // Last, after every other read of the decision (the verdict reuses the engine's workspace).
    const verdict = () => (targetIndex === undefined ? {} : { target: targetVerdict(this.#pipeline, table, req, decision, targetIndex) });
    if (decision.chosen < 0) {
      const seen = { candidates: decision.candidates, passed: decision.passed, rejections: decision.rejections() };
      const rejected = rejectionsOf(decision, table);
      return { outcome: 'no_valid_backend', error: this.#noValidBackend(req, decision, rejected, { ...(explain ? { explain } : {}), ...verdict() }), pool: null, ...seen };
    }
    return this.#chosen(body, options, req, decision, { ...(explain ? { explain } : {}), ...verdict() });
  }

  /** The answer for the pool a decision chose (a dry run's), or the claim to make on it. */
  #chosen(body: ScheduleBody, options: ScheduleOptions, req: VolumeRequest, decision: BestDecision,
    extra: { explain?: Explain; target?: TargetVerdict }): Decided {
    const seen = { candidates: decision.candidates, passed: decision.passed, rejections: decision.rejections() };
    const chosen = this.#table.pools[decision.chosen]!;
    const volume = body.id !== undefined ? { id: body.id, size: body.size, pool: chosen.name } : { size: body.size, pool: chosen.name };
    const answer: ScheduleAnswer = { dryRun: options.dryRun, pool: chosen.name, weight: decision.weight, volume, ...extra };
    if (options.dryRun) return { outcome: 'dry_run', answer, pool: chosen.name, ...seen };
    return { claim: { pool: chosen, answer, seen, thin: req.thin } };
  }

  /** POST /volumes/headroom: how many more such volumes fit, one after another, changing nothing. */
  headroom(body: HeadroomBody): HeadroomAnswer {
    const request = this.#request(body.size, body.volume_type?.extra_specs, body.availability_zone);
    return headroom({
      table: this.#table, pipeline: this.#pipeline, request, calculation: this.#settings.over_provisioning_calculation, max: body.max,
    });
  }

  #noValidBackend(req: VolumeRequest, decision: Decision, rejected: ReturnType<typeof rejectionsOf>,
    extra: { explain?: Explain; target?: TargetVerdict }): DomainError {
    const summary = [...decision.rejections()].map(([f, n]) => `${f} rejected ${n}`).join(', ');
    const detail = this.#table.length === 0
      ? `No valid backend was found for a ${req.size} GiB volume: no pool has been reported`
      : `No valid backend was found for a ${req.size} GiB volume: ${summary}`;
    return new DomainError('NO_VALID_BACKEND', detail, { rejected, ...extra });
  }

  /**
   * Stages the volume and, where instances share the store, the pool record (expecting the generations the decision
   * read); memory follows. Resolves once staged, with the promise of their durability.
   */
  async #claim(pool: PoolState, id: string, size: number, thin: boolean, createdBy: string | null): Promise<StagedCommit> {
    const volume: VolumeRecord = {
      id, size, pool: pool.name, thin, created_at: isoTime(this.#now()), created_by: createdBy, report_seq: pool.reportSeq,
    };
    const writes: StoreWrite[] = [{ kind: KIND_VOLUME, key: id, value: volume }];
    if (this.#arbitrated) {
      const next: StoredPool = {
        backend: pool.backend, report_seq: pool.reportSeq, allocated_capacity_gb: pool.allocated + size, consumed_gb: pool.consumed + size,
      };
      writes.push({ kind: KIND_POOL, key: pool.name, value: next });
    }
    return this.#writer.stage(writes, this.#expectations(writes));
  }

  listVolumes(): VolumeRecord[] {
    return [...this.#volumes.values()];
  }

  getVolume(id: string): VolumeRecord {
    const v = this.#volumes.get(id);
    if (!v) throw notFound(`No volume ${id}`);
    return v;
  }

  /** DELETE /volumes/{id}: releases allocated (and what it consumed if the pool has not reported since). */
  deleteVolume(id: string): Promise<void> {
    return this.#writer.write(() => {
      const v = this.getVolume(id);
      const pool = this.#pools.get(v.pool);
      const writes: StoreWrite[] = [{ kind: KIND_VOLUME, key: id, value: null }];
      if (pool) {
        const consumedHere = v.report_seq === pool.reportSeq;
        const next: StoredPool = {
          backend: pool.backend,
          report_seq: pool.reportSeq,
          allocated_capacity_gb: pool.allocated - v.size,
          consumed_gb: consumedHere ? pool.consumed - v.size : pool.consumed,
        };
        writes.push({ kind: KIND_POOL, key: pool.name, value: next });
      }
      return { writes, expect: this.#expectations(writes), result: () => undefined };
    }, () => new DomainError('CONFLICT', `Pool ${this.#volumes.get(id)?.pool ?? id} kept changing under the release; retry`));
  }

  /** Seconds since each backend's last report (for the stale-stats gauge). */
  reportAges(): Array<{ backend: string; seconds: number }> {
    const now = this.#now();
    return [...this.#backends.values()].map((b) => ({ backend: b.host, seconds: (now - b.reportedAt) / 1000 }));
  }
}

const VOLUME_TYPE_EXAMPLE = '{"extra_specs":{"thin_provisioning_support":"<is> True"}}';

/**
 * The volume_type query parameter: a JSON volume type ({"extra_specs": {...}}) or a bare extra-specs object, or the
 * Python dict cinderclient sends for `--filters volume_type={key:value,…}` ({'key': 'value', …}).
 */
function parseVolumeTypeParam(text: string): { extra_specs?: Record<string, string> } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = parsePythonStringDict(text);
    if (parsed === undefined) {
      throw badRequest(`volume_type must be JSON, e.g. ${VOLUME_TYPE_EXAMPLE}`, [{ path: 'querystring.volume_type', message: 'not valid JSON' }]);
    }
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw badRequest('volume_type must be a JSON object', [{ path: 'querystring.volume_type', message: 'must be an object' }]);
  }
  const obj = parsed as Record<string, unknown>;
  const specs = 'extra_specs' in obj ? obj.extra_specs : obj;
  if (specs === null || typeof specs !== 'object' || Array.isArray(specs)) {
    throw badRequest('volume_type.extra_specs must be an object', [{ path: 'querystring.volume_type.extra_specs', message: 'must be an object' }]);
  }
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(specs as Record<string, unknown>)) {
    if (k === 'name' && !('extra_specs' in obj)) continue;
    if (typeof v !== 'string') {
      throw badRequest(`volume_type extra spec ${k} must be a string`, [{ path: `querystring.volume_type.extra_specs.${k}`, message: 'must be a string' }]);
    }
    out[k] = v;
  }
  return { extra_specs: out };
}

const PY_ESCAPES: Record<string, string> = { '\\': '\\', "'": "'", '"': '"', n: '\n', t: '\t', r: '\r' };

/** Python's repr of a dict of str → str ({'a': 'b', "c'd": 'e'}), or undefined when the text is not one. */
function parsePythonStringDict(text: string): Record<string, string> | undefined {
  let i = 0;
  const space = () => {
    while (i < text.length && /\s/.test(text[i]!)) i++;
  };
  const str = (): string | undefined => {
    const quote = text[i];
    if (quote !== "'" && quote !== '"') return undefined;
    let out = '';
    for (i++; i < text.length; i++) {
      const c = text[i]!;
      if (c === quote) {
        i++;
        return out;
      }
      if (c === '\\') {
        const next = text[++i];
        if (next === undefined || !(next in PY_ESCAPES)) return undefined;
        out += PY_ESCAPES[next];
      } else {
        out += c;
      }
    }
    return undefined;
  };
  const dict: Record<string, string> = {};
  space();
  if (text[i++] !== '{') return undefined;
  space();
  if (text[i] === '}') {
    i++;
  } else {
    for (;;) {
      space();
      const key = str();
      space();
      if (key === undefined || text[i++] !== ':') return undefined;
      space();
      const value = str();
      if (value === undefined) return undefined;
      dict[key] = value;
      space();
      const sep = text[i++];
      if (sep === '}') break;
      if (sep !== ',') return undefined;
    }
  }
  space();
  return i === text.length ? dict : undefined;
}

/** host_manager._equal_after_convert: a bool capability against bool_from_string(value), anything else as strings. */
function equalAfterConvert(capability: unknown, value: string): boolean {
  if (capability === undefined || capability === null) return false;
  if (typeof capability === 'boolean') return capability === boolFromString(value);
  if (typeof capability === 'string') return capability === value;
  return typeof capability === 'number' ? String(capability) === value : JSON.stringify(capability) === value;
}
