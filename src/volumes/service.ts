// The volumes service: ingests capability reports, answers get_pools, decides and claims, releases.
// State lives here in memory (authoritative for reads) and is written through to the store in the same synchronous
// step as each decision, before the reply.
import { randomUUID } from 'node:crypto';
import { DomainError, badRequest, notFound } from '../domain-errors.ts';
import type { Decision } from '../pipeline/pipeline.ts';
import { StoreConflictError, type Store, type StoreWrite } from '../store/store.ts';
import { maxOverSubscriptionRatio, type Capacity } from './capacity.ts';
import { boolFromString, compileExtraSpecs, SPECS_MATCH } from './extra-specs.ts';
import { PoolTable, type BackendState, type PoolState, type VolumeRecord, type VolumeRequest } from './model.ts';
import {
  explainOf, rejectionsOf, targetVerdict, volumesPipeline, type Explain, type TargetVerdict, type VolumesPipeline,
} from './scheduler.ts';
import { headroom, type HeadroomAnswer } from './headroom.ts';
import type { BackendReport, HeadroomBody, PoolReport, ScheduleBody } from './schemas.ts';
import { ScratchStore } from './scratch-store.ts';
import type { VolumesSettingsValues } from './settings.ts';

const KIND_BACKEND = 'volumes.backend';
const KIND_POOL = 'volumes.pool';
const KIND_VOLUME = 'volumes.volume';

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

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

export class VolumesService {
  readonly #store: Store;
  /** The runtime settings in force (start-up options until changed over PUT /settings/volumes). */
  #settings: VolumesSettingsValues;
  readonly #now: () => number;
  #pipeline: VolumesPipeline;
  readonly #backends = new Map<string, BackendState>();
  readonly #pools = new Map<string, PoolState>();
  readonly #volumes = new Map<string, VolumeRecord>();
  /** Every pool, backends in report order then pools in report order: Cinder's candidate order. */
  #table = new PoolTable([]);
  #nextOrder = 1;
  #nextSeq = 1;

  constructor(settings: VolumesSettingsValues, store: Store, now: () => number) {
    this.#settings = settings;
    this.#store = store;
    this.#now = now;
    this.#pipeline = volumesPipeline(settings);
    this.#load();
  }

  // ---- loading ------------------------------------------------------------------------------------------------

  #load(): void {
    for (const v of this.#store.load<VolumeRecord>(KIND_VOLUME)) {
      this.#volumes.set(v.key, { ...v.value, created_by: v.value.created_by ?? null });
      if (v.value.report_seq >= this.#nextSeq) this.#nextSeq = v.value.report_seq + 1;
    }
    const poolRecords = new Map(this.#store.load<StoredPool>(KIND_POOL).map((r) => [r.key, r]));
    const backends = this.#store.load<StoredBackend>(KIND_BACKEND).sort((a, b) => a.value.order - b.value.order);
    for (const b of backends) {
      const stored = b.value;
      if (stored.order >= this.#nextOrder) this.#nextOrder = stored.order + 1;
      if (stored.report_seq >= this.#nextSeq) this.#nextSeq = stored.report_seq + 1;
      // The report was validated (and its auto ratio computed) when it was accepted; rebuild the same state.
      const built = this.#buildBackend(b.key, stored.report, stored.reported_at, stored.report_seq, stored.order);
      if (!built.ok) continue;
      for (const pool of built.backend.pools) {
        pool.generation = poolRecords.get(pool.name)?.generation ?? 0;
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
    this.#rebuildCandidates();
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
    const copy = new VolumesService(this.#settings, new ScratchStore(), this.#now);
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

  /** PUT /backends/{host}: validates everything first, then commits, then swaps the in-memory state. */
  applyReport(host: string, report: BackendReport): {
    backend: string;
    pools: Array<{ name: string; generation: number; max_over_subscription_ratio: number }>;
    warnings: string[];
  } {
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
      pool.allocated = this.#allocatedOn(pool.name);
      const ratio = this.#computeRatio(pool, report, pool.allocated);
      if (!ratio.ok) errors.push({ path: `${path}free_capacity_gb`, message: ratio.message });
      pool.capabilities.allocated_capacity_gb = pool.allocated;
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
    const generations = this.#store.commit(writes);
    backend.pools.forEach((pool, i) => {
      pool.generation = generations[i + 1]!;
    });
    this.#nextSeq = seq + 1;
    if (!previous) this.#nextOrder = order + 1;
    this.#backends.set(host, backend);
    this.#rebuildCandidates();
    return {
      backend: host,
      pools: backend.pools.map((p) => ({ name: p.name, generation: p.generation, max_over_subscription_ratio: p.mosr })),
      warnings,
    };
  }

  #allocatedOn(poolName: string): number {
    const existing = this.#pools.get(poolName);
    if (existing) return existing.allocated;
    let sum = 0;
    for (const v of this.#volumes.values()) if (v.pool === poolName) sum += v.size;
    return sum;
  }

  #storedPool(pool: PoolState): StoredPool {
    return { backend: pool.backend, report_seq: pool.reportSeq, allocated_capacity_gb: pool.allocated, consumed_gb: pool.consumed };
  }

  /** DELETE /backends/{host}: forgets the backend and its pools (volumes placed there stay listed). */
  deleteBackend(host: string): void {
    const backend = this.#backends.get(host);
    if (!backend) throw notFound(`No backend ${host}`);
    const writes: StoreWrite[] = [{ kind: KIND_BACKEND, key: host, value: null }];
    for (const pool of backend.pools) writes.push({ kind: KIND_POOL, key: pool.name, value: null });
    this.#store.commit(writes);
    this.#backends.delete(host);
    this.#rebuildCandidates();
  }

  listBackends(): Array<{ backend: string; availability_zone: string; reported_at: string; pools: string[] }> {
    return [...this.#backends.values()].map((b) => ({
      backend: b.host,
      availability_zone: b.availabilityZone,
      reported_at: iso(b.reportedAt),
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
    caps.timestamp = iso(pool.reportedAt);
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
   * POST /volumes/schedule: decide, and unless dry_run claim, in one synchronous step. A store conflict (another
   * writer changed the pool) reloads the pool and decides again, a few times at most. One engine call per attempt:
   * a miss takes its reasons from the same run.
   */
  schedule(body: ScheduleBody, options: ScheduleOptions): VolumeScheduleResult {
    if (body.id !== undefined && this.#volumes.has(body.id)) {
      throw new DomainError('VOLUME_EXISTS', `Volume ${body.id} already exists`);
    }
    const targetIndex = this.#targetIndex(options.explainTarget);
    const req = this.#request(body.size, body.volume_type?.extra_specs, body.availability_zone);
    const table = this.#table;
    for (let attempt = 0; ; attempt++) {
      const decision = this.#pipeline.decide(table, req, options.explain ? { trace: true } : { limit: 1 });
      const seen = { candidates: decision.candidates, passed: decision.passed, rejections: decision.rejections() };
      const explain = options.explain ? explainOf(decision, table) : undefined;
      // Last, after every other read of the decision (the verdict reuses the engine's workspace).
      const verdict = () => (targetIndex === undefined ? {} : { target: targetVerdict(this.#pipeline, table, req, decision, targetIndex) });
      if (decision.chosen < 0) {
        const rejected = rejectionsOf(decision, table);
        return { outcome: 'no_valid_backend', error: this.#noValidBackend(req, decision, rejected, { ...(explain ? { explain } : {}), ...verdict() }), pool: null, ...seen };
      }
      const chosen = table.pools[decision.chosen]!;
      const volume = { ...(body.id !== undefined ? { id: body.id } : {}), size: body.size, pool: chosen.name };
      const answer: ScheduleAnswer = {
        dryRun: options.dryRun, pool: chosen.name, weight: decision.weight, volume, ...(explain ? { explain } : {}), ...verdict(),
      };
      if (options.dryRun) return { outcome: 'dry_run', answer, pool: chosen.name, ...seen };
      const id = body.id ?? randomUUID();
      try {
        this.#claim(chosen, id, body.size, req.thin, options.createdBy ?? null);
        return { outcome: 'placed', answer: { ...answer, volume: { id, ...volume } }, pool: chosen.name, ...seen };
      } catch (err) {
        if (!(err instanceof StoreConflictError)) throw err;
        if (attempt < 2) {
          this.#reloadPool(chosen);
          continue;
        }
        const error = new DomainError('CONFLICT', `Pool ${chosen.name} kept changing under the claim; retry`);
        return { outcome: 'conflict', error, pool: chosen.name, ...seen };
      }
    }
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

  /** Writes the volume and the pool (expecting the generation the decision read), then updates memory. */
  #claim(pool: PoolState, id: string, size: number, thin: boolean, createdBy: string | null): void {
    const volume: VolumeRecord = {
      id, size, pool: pool.name, thin, created_at: iso(this.#now()), created_by: createdBy, report_seq: pool.reportSeq,
    };
    const next: StoredPool = {
      backend: pool.backend, report_seq: pool.reportSeq, allocated_capacity_gb: pool.allocated + size, consumed_gb: pool.consumed + size,
    };
    const generations = this.#store.commit(
      [{ kind: KIND_VOLUME, key: id, value: volume }, { kind: KIND_POOL, key: pool.name, value: next }],
      [{ kind: KIND_VOLUME, key: id, generation: 0 }, { kind: KIND_POOL, key: pool.name, generation: pool.generation }],
    );
    // consume_from_volume: allocated and provisioned += size, free −= size unless infinite/unknown.
    pool.allocated += size;
    pool.consumed += size;
    pool.generation = generations[1]!;
    this.#table.refresh(pool.index);
    this.#volumes.set(id, volume);
  }

  #reloadPool(pool: PoolState): void {
    const record = this.#store.get<StoredPool>(KIND_POOL, pool.name);
    if (!record) return;
    pool.allocated = record.value.allocated_capacity_gb;
    pool.consumed = record.value.report_seq === pool.reportSeq ? record.value.consumed_gb : 0;
    pool.generation = record.generation;
    this.#table.refresh(pool.index);
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
  deleteVolume(id: string): void {
    const v = this.getVolume(id);
    const pool = this.#pools.get(v.pool);
    const writes: StoreWrite[] = [{ kind: KIND_VOLUME, key: id, value: null }];
    let next: StoredPool | undefined;
    if (pool) {
      const consumedHere = v.report_seq === pool.reportSeq;
      next = {
        backend: pool.backend,
        report_seq: pool.reportSeq,
        allocated_capacity_gb: pool.allocated - v.size,
        consumed_gb: consumedHere ? pool.consumed - v.size : pool.consumed,
      };
      writes.push({ kind: KIND_POOL, key: pool.name, value: next });
    }
    const generations = this.#store.commit(writes);
    this.#volumes.delete(id);
    if (pool && next) {
      pool.allocated = next.allocated_capacity_gb;
      pool.consumed = next.consumed_gb;
      pool.generation = generations[1]!;
      this.#table.refresh(pool.index);
    }
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
