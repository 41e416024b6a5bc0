// One log line and the metrics of every scheduling decision, from one timer: what was asked, what was chosen, the
// outcome, how many candidates and how long. Dialects start it before deciding and finish it with the outcome.
import type { FastifyBaseLogger } from 'fastify';
import type { Domain, Metrics } from './metrics.ts';

export interface DecisionSummary {
  /** "placed", "dry_run", "no_valid_backend", "conflict", … */
  outcome: string;
  /** What was asked, as log fields (e.g. { volume, size }). */
  asked: Record<string, unknown>;
  /** What was chosen (a pool, nodes/disks, providers), or null. */
  target: unknown;
  /** Candidates considered and candidates that passed every filter. */
  candidates: number;
  passed: number;
  /** Rejections per filter name. */
  rejections?: ReadonlyMap<string, number>;
}

export interface DecisionReport {
  finish(summary: DecisionSummary): void;
}

export function startDecision(log: FastifyBaseLogger, metrics: Metrics, domain: Domain): DecisionReport {
  const started = performance.now();
  return {
    finish(summary) {
      const seconds = (performance.now() - started) / 1000;
      metrics.observeDecision({ domain, outcome: summary.outcome, seconds, ...(summary.rejections ? { rejections: summary.rejections } : {}) });
      log.info({
        domain, outcome: summary.outcome, ...summary.asked, target: summary.target,
        candidates: summary.candidates, passed: summary.passed, ms: seconds * 1000,
      }, 'decision');
    },
  };
}
