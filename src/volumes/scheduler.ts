// The volumes dialect's wiring of the engine: the configured filters and weighers as one Pipeline over the pool table,
// and the engine's answer in the dialect's words (pool names, Cinder's trace shape).
import type { Config } from '../config.ts';
import { Pipeline, type Decision } from '../pipeline/pipeline.ts';
import { staleStatsFilter, VOLUMES_FILTERS, type VolumesFilter } from './filters.ts';
import type { PoolTable, VolumeRequest } from './model.ts';
import { VOLUMES_WEIGHERS } from './weighers.ts';

export type VolumesPipeline = Pipeline<PoolTable, VolumeRequest>;

type SchedulerConfig = Pick<Config,
  'scheduler_default_filters' | 'scheduler_default_weighers' | 'capacity_weight_multiplier' |
  'allocated_capacity_weight_multiplier' | 'over_provisioning_calculation' | 'stats_stale_after_seconds'>;

/** scheduler_default_filters then scheduler_default_weighers, in the configured order; stale stats first when enabled. */
export function volumesPipeline(config: SchedulerConfig): VolumesPipeline {
  const filters: VolumesFilter[] = [];
  if (config.stats_stale_after_seconds > 0) filters.push(staleStatsFilter(config.stats_stale_after_seconds));
  for (const name of config.scheduler_default_filters) filters.push(VOLUMES_FILTERS[name](config));
  const weighers = config.scheduler_default_weighers.map((name) => VOLUMES_WEIGHERS[name](config));
  return new Pipeline({ filters, weighers });
}

/** explain=true: each filter's verdicts (in order), then the pools that passed, best first. */
export interface Explain {
  filters: Array<{ name: string; in: number; out: number; rejected: Array<{ pool: string; reason: string }> }>;
  weighed: Array<{ pool: string; weight: number; weighers: Record<string, { raw: number; normalized: number }> }>;
}

/** The trace of a decision (read right after it), by pool name: its entries built directly in the answer's shape. */
export function explainOf(decision: Decision, table: PoolTable): Explain {
  const { names } = table;
  const trace = decision.traceAs({
    rejected: (index, _code, reason) => ({ pool: names[index]!, reason }),
    weighed: (index, weight, weighers) => ({ pool: names[index]!, weight, weighers }),
  });
  return {
    filters: trace.filters.map((f) => ({ name: f.name, in: f.in, out: f.out, rejected: f.rejected })),
    weighed: trace.weighed,
  };
}

/** Every pool a decision turned away, with the stage, code and sentence (the 409's reasons), built directly. */
export function rejectionsOf(decision: Decision, table: PoolTable): Array<{ pool: string; filter: string; code: string; reason: string }> {
  const { names } = table;
  const trace = decision.traceAs({
    rejected: (index, code, reason, stage) => ({ pool: names[index]!, filter: stage, code, reason }),
    weighed: () => null,
  });
  return trace.filters.flatMap((f) => f.rejected);
}

/** explain_target=NAME: one pool's verdict — each filter it passed or the one that refused it — and its weights. */
export interface TargetVerdict {
  pool: string;
  /** It passed every filter (and could be weighed). */
  passed: boolean;
  /** In order, up to the stage that refused it: its code and the sentence with the numbers. */
  filters: Array<{ name: string; passed: boolean; code?: string; reason?: string }>;
  /** When it passed: its total weight, its place in the ranking (1: chosen) and each weigher's raw/normalised value. */
  weight?: number;
  rank?: number;
  weighers?: Record<string, { raw: number; normalized: number }>;
}

/**
 * The verdict on candidate `index` of a decision over `among` (default the whole table), from the decision's own
 * records: its rejection if any (no sentence is built for the other pools), else its weights among the pools that
 * passed. Read the decision's other rejections first: this reuses the engine's workspace.
 */
export function targetVerdict(pipeline: VolumesPipeline, table: PoolTable, request: VolumeRequest, decision: Decision,
  index: number, among?: ArrayLike<number>): TargetVerdict {
  const pool = table.pools[index]!.name;
  const rejected = decision.rejected();
  const mine = rejected.find((r) => r.index === index);
  const filters: TargetVerdict['filters'] = [];
  for (const stage of decision.stages) {
    if (mine && stage.name === mine.stage) {
      filters.push({ name: stage.name, passed: false, code: mine.code, reason: decision.reason(mine) });
      return { pool, passed: false, filters };
    }
    if (stage.kind === 'filter') filters.push({ name: stage.name, passed: true });
  }
  const out = new Uint8Array(table.length);
  for (const r of rejected) out[r.index] = 1;
  const candidates = among ?? Array.from({ length: table.length }, (_, i) => i);
  const passing = Int32Array.from(Array.from(candidates).filter((i) => out[i] === 0));
  const weights = pipeline.weightsOf(table, request, passing, index);
  if (weights === null) return { pool, passed: false, filters };
  return { pool, passed: true, filters, weight: weights.weight, rank: weights.rank, weighers: weights.weighers };
}
