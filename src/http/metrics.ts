// Prometheus metrics from an app-owned registry (a second app in the same process must not collide).
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { BACK_PRESSURE_EXEMPT } from './limits.ts';
import { Counter, collectDefaultMetrics, Histogram, Registry } from 'prom-client';
import { z } from 'zod';

export type Domain = 'volumes' | 'placement' | 'replicas';

export interface DecisionRecord {
  domain: Domain;
  /** "placed", "no_valid_target", "dry_run", "conflict", … */
  outcome: string;
  /** Seconds the decision took. */
  seconds: number;
  /** Rejections per filter name. */
  rejections?: ReadonlyMap<string, number>;
}

export class Metrics {
  readonly registry = new Registry();
  readonly httpRequests = new Counter({
    name: 'berth_http_requests_total',
    help: 'HTTP requests by route, method and status',
    labelNames: ['route', 'method', 'status'] as const,
    registers: [this.registry],
  });
  readonly httpDuration = new Histogram({
    name: 'berth_http_request_duration_seconds',
    help: 'HTTP request duration by route, method and status',
    labelNames: ['route', 'method', 'status'] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [this.registry],
  });
  readonly decisions = new Counter({
    name: 'berth_decisions_total',
    help: 'Scheduling decisions by domain and outcome',
    labelNames: ['domain', 'outcome'] as const,
    registers: [this.registry],
  });
  readonly filterRejections = new Counter({
    name: 'berth_filter_rejections_total',
    help: 'Candidates rejected, by domain and filter',
    labelNames: ['domain', 'filter'] as const,
    registers: [this.registry],
  });
  readonly decisionDuration = new Histogram({
    name: 'berth_decision_duration_seconds',
    help: 'Time to reach a scheduling decision, by domain',
    labelNames: ['domain'] as const,
    buckets: [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5],
    registers: [this.registry],
  });

  /** Capacity planning (headroom, what-if simulation): shared by the dialects. */
  readonly headroomRequests = new Counter({
    name: 'berth_headroom_requests_total',
    help: 'Headroom questions answered ("how many more of these fit?"), by domain and whether max truncated the count',
    labelNames: ['domain', 'truncated'] as const,
    registers: [this.registry],
  });
  readonly simulations = new Counter({
    name: 'berth_simulations_total',
    help: 'What-if simulations, by domain and outcome (completed, or refused: too_many_steps, over_time_budget, invalid)',
    labelNames: ['domain', 'outcome'] as const,
    registers: [this.registry],
  });
  readonly simulationDuration = new Histogram({
    name: 'berth_simulation_duration_seconds',
    help: 'Time a what-if simulation took, by domain',
    labelNames: ['domain'] as const,
    buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });

  constructor(options: { processMetrics?: boolean } = {}) {
    if (options.processMetrics !== false) collectDefaultMetrics({ register: this.registry });
  }

  observeDecision(d: DecisionRecord): void {
    this.decisions.inc({ domain: d.domain, outcome: d.outcome });
    this.decisionDuration.observe({ domain: d.domain }, d.seconds);
    if (d.rejections) {
      for (const [filter, n] of d.rejections) this.filterRejections.inc({ domain: d.domain, filter }, n);
    }
  }
}

/** The route template (not the raw URL) keeps label cardinality bounded. */
function routeLabel(request: FastifyRequest): string {
  return request.routeOptions.url ?? 'unmatched';
}

const METRICS_EXAMPLE = [
  '# HELP berth_decisions_total Scheduling decisions by domain and outcome',
  '# TYPE berth_decisions_total counter',
  'berth_decisions_total{domain="volumes",outcome="placed"} 1',
  '',
].join('\n');

export function registerMetrics(app: FastifyInstance, metrics: Metrics): void {
  app.addHook('onResponse', async (request, reply) => {
    const labels = { route: routeLabel(request), method: request.method, status: String(reply.statusCode) };
    metrics.httpRequests.inc(labels);
    metrics.httpDuration.observe(labels, reply.elapsedTime / 1000);
  });
  app.get('/metrics', {
    config: BACK_PRESSURE_EXEMPT,
    schema: {
      tags: ['operations'],
      summary: 'Prometheus metrics (text exposition format)',
      produces: ['text/plain'],
      response: {
        200: {
          description: 'Every metric in the text exposition format',
          content: { 'text/plain': { schema: z.string().meta({ examples: [METRICS_EXAMPLE] }) } },
        },
      },
    },
  }, async (_request, reply) => {
    const body = await metrics.registry.metrics();
    return reply.type(metrics.registry.contentType).send(body);
  });
}
