// The volumes service: ingests capability reports, answers get_pools, decides and claims, releases.
// State lives here in memory (authoritative for reads) and is written through to the store in the same synchronous
// step as each decision, before the reply.
import { randomUUID } from 'node:crypto';
import type { Config } from '../config.ts';
import { ProblemError, badRequest, notFound } from '../http/problem.ts';
import type { Store, StoreWrite } from '../store/store.ts';
import { StoreConflictError } from '../store/store.ts';
import { maxOverSubscriptionRatio, type Capacity } from './capacity.ts';
import { boolFromString, compileExtraSpecs, satisfiesExtraSpecs } from './extra-specs.ts';
import { configuredFilters, type VolumesFilter } from './filters.ts';
import { refreshFigures, type BackendState, type PoolState, type VolumeRecord, type VolumeRequest } from './model.ts';
import { PoolTable } from './pool-table.ts';
import { Scratch, decideFast, decideTraced, type TracedDecision } from './scheduler.ts';
import type { BackendReport, PoolReport, ScheduleBody } from './schemas.ts';
import { configuredWeighers, type VolumesWeigher } from './weighers.ts';

export const KIND_BACKEND = 'volumes.backend';
export const KIND_POOL = 'volumes.pool';
export const KIND_VOLUME = 'volumes.volume';

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
}

export interface ScheduleOutcome {
  pool: string;
  weight: number;
  volume: { id: string; size: number; pool: string };
  explain?: Explain;
  /** For logs and metrics. */
  candidates: number;
  passed: number;
  rejections: Map<string, number>;
}

export interface Explain {
  weighed: Array<{ pool: string; weight: number; weighers: Record<string, { raw: number; normalized: number }> }>;
  filters: Array<{ name: string; in: number; out: number; rejected: Array<{ pool: string; reason: string }> }>;
}

/** Thrown (as a 409 problem) when no pool fits; carries what logs and metrics need. */
export class NoValidBackendError extends ProblemError {
  readonly candidates: number;
  readonly rejections: Map<string, number>;
  constructor(detail: string, extensions: Record<string, unknown>, candidates: number, rejections: Map<string, number>) {
    super(409, 'no-valid-backend', 'No valid backend', detail, extensions);
    this.candidates = candidates;
    this.rejections = rejections;
  }
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

export class VolumesService {
  readonly #store: Store;
  readonly #config: Config;
  readonly #now: () => number;
  readonly filters: VolumesFilter[];
  readonly weighers: VolumesWeigher[];
  readonly #backends = new Map<string, BackendState>();
  readonly #pools = new Map<string, PoolState>();
  readonly #volumes = new Map<string, VolumeRecord>();
  /** Every pool, backends in report order then pools in report order: Cinder's candidate order. */
  #candidates: PoolState[] = [];
  #table = new PoolTable([]);
  #nextOrder = 1;
  #nextSeq = 1;
  readonly #scratch = new Scratch();

  constructor(config: Config, store: Store, now: () => number) {
    this.#config = config;
    this.#store = store;
    this.#now = now;
    this.filters = configuredFilters(config);
    this.weighers = configuredWeighers(config);
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
        refreshFigures(pool);
      }
    }
    this.#rebuildCandidates();
  }

  #rebuildCandidates(): void {
    this.#pools.clear();
    const list: PoolState[] = [];
    for (const backend of this.#backends.values()) {
      for (const pool of backend.pools) {
        pool.index = list.length;
        list.push(pool);
        this.#pools.set(pool.name, pool);
      }
    }
    this.#candidates = list;
    this.#table = new PoolTable(list);
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
    const availabilityZone = report.availability_zone ?? this.#config.storage_availability_zone;
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
        figures: undefined as never,
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
      configured: this.#config.max_over_subscription_ratio,
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
      refreshFigures(pool);
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

  get candidates(): readonly PoolState[] {
    return this.#candidates;
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

  /** Virtual free capacity for a thin request (what CapacityWeigher weighs); null for infinite/unknown pools. */
  virtualFree(pool: PoolState): number | null {
    const f = pool.figures;
    if (f.thinFactors === null) return null;
    if (this.#config.over_provisioning_calculation === 'standard') return f.standardThinFree;
    return f.thinFactors.virtual_free_capacity;
  }

  /** GET /pools: name / capability filters, volume_type, and with size the full pipeline (best first). */
  listPools(query: {
    name?: string;
    volume_type?: string;
    size?: number;
    availability_zone?: string;
    filters: Record<string, string>;
  }): PoolState[] {
    let volumeType: { extra_specs?: Record<string, string> } = {};
    if (query.volume_type !== undefined) volumeType = parseVolumeTypeParam(query.volume_type);
    let pools: PoolState[] = this.#candidates.slice();
    if (query.name !== undefined) pools = pools.filter((p) => p.name === query.name);
    for (const [key, want] of Object.entries(query.filters)) {
      pools = pools.filter((p) => equalAfterConvert(this.poolDetail(p)[key], want));
    }
    const specs = compileExtraSpecs(volumeType.extra_specs);
    if (query.size === undefined) {
      if (specs.length > 0) pools = pools.filter((p) => satisfiesExtraSpecs(p.capabilities, specs) === null);
      return pools;
    }
    const req = this.#request(query.size, volumeType.extra_specs, query.availability_zone);
    return decideTraced(pools, req, this.filters, this.weighers).ranked.map((w) => w.candidate);
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
   * writer changed the pool) reloads the pool and decides again, a few times at most.
   */
  schedule(body: ScheduleBody, options: ScheduleOptions): ScheduleOutcome {
    const id = body.id ?? randomUUID();
    if (this.#volumes.has(id)) {
      throw new ProblemError(409, 'volume-exists', 'Volume already exists', `Volume ${id} already exists`);
    }
    const req = this.#request(body.size, body.volume_type?.extra_specs, body.availability_zone);
    const candidates = this.#candidates;
    for (let attempt = 0; ; attempt++) {
      let chosen: PoolState | null = null;
      let weight = 0;
      let explain: Explain | undefined;
      let passed = 0;
      let rejections: Map<string, number>;
      if (options.explain) {
        const d = decideTraced(candidates, req, this.filters, this.weighers);
        explain = toExplain(d);
        rejections = countRejections(d);
        passed = d.ranked.length;
        if (d.chosen) {
          chosen = d.chosen.candidate;
          weight = d.chosen.weight;
        } else {
          throw this.#noValidBackend(req, d, explain);
        }
      } else {
        const d = decideFast(this.#table, req, this.filters, this.weighers, this.#scratch);
        rejections = new Map();
        d.rejections.forEach((n, i) => {
          if (n > 0) rejections.set(this.filters[i]!.name, n);
        });
        passed = d.passed;
        if (d.chosen < 0) {
          // Rare path: rebuild the reasons through the traced pipeline.
          const traced = decideTraced(candidates, req, this.filters, this.weighers);
          throw this.#noValidBackend(req, traced, undefined);
        }
        chosen = candidates[d.chosen]!;
        weight = d.weight;
      }
      const volume = { id, size: body.size, pool: chosen.name };
      const outcome: ScheduleOutcome = {
        pool: chosen.name, weight, volume, candidates: candidates.length, passed, rejections,
        ...(explain ? { explain } : {}),
      };
      if (options.dryRun) return outcome;
      try {
        this.#claim(chosen, id, body.size, req.thin, options.createdBy ?? null);
        return outcome;
      } catch (err) {
        if (err instanceof StoreConflictError && attempt < 2) {
          this.#reloadPool(chosen);
          continue;
        }
        if (err instanceof StoreConflictError) {
          throw new ProblemError(409, 'conflict', 'Conflict', `Pool ${chosen.name} kept changing under the claim; retry`);
        }
        throw err;
      }
    }
  }

  #noValidBackend(req: VolumeRequest, d: TracedDecision, explain: Explain | undefined): NoValidBackendError {
    const rejected = d.rejected.map((r) => ({
      pool: r.candidate.name, filter: r.filter, code: r.rejection.code, reason: r.rejection.message,
    }));
    const counts = countRejections(d);
    const summary = [...counts].map(([f, n]) => `${f} rejected ${n}`).join(', ');
    const detail = this.#candidates.length === 0
      ? `No valid backend was found for a ${req.size} GiB volume: no pool has been reported`
      : `No valid backend was found for a ${req.size} GiB volume: ${summary}`;
    return new NoValidBackendError(detail, { rejected, ...(explain ? { explain } : {}) }, this.#candidates.length, counts);
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
    refreshFigures(pool);
    this.#table.update(pool.index);
    this.#volumes.set(id, volume);
  }

  #reloadPool(pool: PoolState): void {
    const record = this.#store.get<StoredPool>(KIND_POOL, pool.name);
    if (!record) return;
    pool.allocated = record.value.allocated_capacity_gb;
    pool.consumed = record.value.report_seq === pool.reportSeq ? record.value.consumed_gb : 0;
    pool.generation = record.generation;
    refreshFigures(pool);
    this.#table.update(pool.index);
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
      refreshFigures(pool);
      this.#table.update(pool.index);
    }
  }

  /** Seconds since each backend's last report (for the stale-stats gauge). */
  reportAges(): Array<{ backend: string; seconds: number }> {
    const now = this.#now();
    return [...this.#backends.values()].map((b) => ({ backend: b.host, seconds: (now - b.reportedAt) / 1000 }));
  }
}

function countRejections(d: Pick<TracedDecision, 'rejected'>): Map<string, number> {
  const counts = new Map<string, number>();
  for (const r of d.rejected) counts.set(r.filter, (counts.get(r.filter) ?? 0) + 1);
  return counts;
}

function toExplain(d: TracedDecision): Explain {
  return {
    weighed: d.ranked.map((w) => ({ pool: w.candidate.name, weight: w.weight, weighers: w.weighers })),
    filters: d.filters.map((f) => ({
      name: f.name,
      in: f.in,
      out: f.out,
      rejected: f.rejected.map((r) => ({ pool: r.candidate.name, reason: r.rejection.message })),
    })),
  };
}

/** The volume_type query parameter: a JSON volume type ({"extra_specs": {...}}) or a bare extra-specs object. */
export function parseVolumeTypeParam(text: string): { extra_specs?: Record<string, string> } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw badRequest('volume_type must be JSON, e.g. {"extra_specs":{"thin_provisioning_support":"<is> True"}}',
      [{ path: 'querystring.volume_type', message: 'not valid JSON' }]);
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

/** host_manager._equal_after_convert: a bool capability against bool_from_string(value), anything else as strings. */
function equalAfterConvert(capability: unknown, value: string): boolean {
  if (capability === undefined || capability === null) return false;
  if (typeof capability === 'boolean') return capability === boolFromString(value);
  if (typeof capability === 'string') return capability === value;
  return typeof capability === 'number' ? String(capability) === value : JSON.stringify(capability) === value;
}
