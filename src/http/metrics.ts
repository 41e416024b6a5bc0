// Prometheus metrics from an app-owned registry (a second app in the same process must not collide). Names follow
// Prometheus's conventions: base units (seconds, bytes) in the name, `_total` on counters, `_info` for build facts.
// The catalogue (names, units, labels) is README.md's "Metrics" and docs/operations.md.
import { readFileSync } from 'node:fs';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Deferred } from './deferred.ts';
import { BACK_PRESSURE_EXEMPT, type EventLoopDelay } from './limits.ts';
import { Counter, collectDefaultMetrics, Gauge, Histogram } from 'prom-client';
import { BerthRegistry } from './gauge-groups.ts';
import { routeOf } from './route-options.ts';
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

/** Why a store operation failed: an expectation did not hold, the database could not be reached, anything else. */
export type StoreErrorReason = 'conflict' | 'unavailable' | 'failed';
const STORE_ERROR_REASONS: readonly StoreErrorReason[] = ['conflict', 'unavailable', 'failed'];

/** Decision times from 50 µs (a small fleet) to 10 s (a Placement query over 100,000 providers without a limit). */
const DECISION_BUCKETS = [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const HTTP_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** An fsync'd SQLite commit takes about a millisecond; a PostgreSQL round trip a few; its statement timeout is 5 s. */
const STORE_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export class Metrics {
  readonly registry = new BerthRegistry();
  readonly httpRequests = new Counter({
    name: 'berth_http_requests_total',
    help: 'HTTP requests answered, by route template, method and status code',
    labelNames: ['route', 'method', 'status'] as const,
    registers: [this.registry],
  });
  /** No status label (the counter has it): a histogram per status multiplies its buckets for no question asked. */
  readonly httpDuration = new Histogram({
    name: 'berth_http_request_duration_seconds',
    help: 'Time from receiving an HTTP request to answering it, by route template and method (API routes: not the Swagger UI, the OpenAPI document or the console\'s page and assets)',
    labelNames: ['route', 'method'] as const,
    buckets: HTTP_BUCKETS,
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
    buckets: DECISION_BUCKETS,
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

  /** The store (src/http/store-metrics.ts wraps both of its interfaces). */
  readonly storeCommitDuration = new Histogram({
    name: 'berth_store_commit_duration_seconds',
    help: 'Time a store commit took until it was durable or refused (conflicts and failures included)',
    buckets: STORE_BUCKETS,
    registers: [this.registry],
  });
  readonly storeErrors = new Counter({
    name: 'berth_store_errors_total',
    help: 'Store operations that failed, by reason: conflict (a generation the decision read had changed; the decision is retried), unavailable (the database could not be reached in time: 503), failed (anything else)',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });

  constructor(options: { processMetrics?: boolean } = {}) {
    if (options.processMetrics !== false) collectDefaultMetrics({ register: this.registry });
    // Known label values start at 0, so that rate() and alerts see the series before the first failure.
    for (const reason of STORE_ERROR_REASONS) this.storeErrors.inc({ reason }, 0);
  }

  observeDecision(d: DecisionRecord): void {
    this.decisions.inc({ domain: d.domain, outcome: d.outcome });
    this.decisionDuration.observe({ domain: d.domain }, d.seconds);
    if (d.rejections) {
      for (const [filter, n] of d.rejections) this.filterRejections.inc({ domain: d.domain, filter }, n);
    }
  }
}

/** Berth's version, from the package.json next to src/ and dist/ (the container copies it too). */
export const BERTH_VERSION: string = (() => {
  try {
    return (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
  } catch {
    return 'unknown';
  }
})();

export interface RuntimeSignals {
  /** "sqlite" or "postgres". */
  store: () => string;
  /** The store's feed: the newest seq seen and the seq applied to this instance's memory. */
  feed: () => { seq: number; position: number };
  /** What /readyz answers: true for 200. */
  ready: () => boolean;
  /** The event-loop delay back-pressure reads, in ms. */
  eventLoopDelay: EventLoopDelay;
  /** Each reporting dialect's stale window in seconds (0: never stale). */
  staleAfterSeconds: Partial<Record<Domain, () => number>>;
}

/** The process's own gauges: build facts, readiness, event-loop lag, stale windows; read at scrape time. */
export function registerRuntimeMetrics(metrics: Metrics, signals: RuntimeSignals): void {
  const registers = [metrics.registry];
  new Gauge({
    name: 'berth_build_info',
    help: 'Always 1; the labels say which Berth runs: version, Node.js version, store (sqlite or postgres)',
    labelNames: ['version', 'node_version', 'store'] as const,
    registers,
    collect() {
      this.reset();
      this.set({ version: BERTH_VERSION, node_version: process.versions.node, store: signals.store() }, 1);
    },
  });
  new Gauge({
    name: 'berth_ready',
    help: '1 while /readyz answers 200 (started, store connected and following its change feed, not shutting down), else 0',
    registers,
    collect() {
      this.set(signals.ready() ? 1 : 0);
    },
  });
  new Gauge({
    name: 'berth_store_feed_position',
    help: 'The store change-feed sequence number this instance has applied to its memory (instances on one database converge on the same value)',
    registers,
    collect() {
      this.set(signals.feed().position);
    },
  });
  new Gauge({
    name: 'berth_store_feed_lag',
    help: 'Changes committed to the store (as far as this instance has heard) that it has not applied yet; stays near 0 unless it falls behind',
    registers,
    collect() {
      const { seq, position } = signals.feed();
      this.set(Math.max(0, seq - position));
    },
  });
  new Gauge({
    name: 'berth_event_loop_lag_seconds',
    help: 'Event-loop lag as load shedding sees it: the mean delay of the loop\'s turns over the last sample window (+Inf: not a single turn); above max_event_loop_delay_ms new requests get 503',
    registers,
    collect() {
      this.set(signals.eventLoopDelay() / 1000);
    },
  });
  new Gauge({
    name: 'berth_stats_stale_after_seconds',
    help: 'stats_stale_after_seconds per domain: a backend (volumes) or node (replicas) silent for longer is skipped; 0 means never',
    labelNames: ['domain'] as const,
    registers,
    collect() {
      this.reset();
      for (const [domain, read] of Object.entries(signals.staleAfterSeconds)) this.set({ domain }, read());
    },
  });
}

/** The route template (not the raw URL) keeps label cardinality bounded. */
function routeLabel(request: FastifyRequest): string {
  return routeOf(request).url ?? 'unmatched';
}

/**
 * Routes that serve documents and static files rather than the API: counted, but kept out of the duration
 * histogram, whose buckets would otherwise be spent on Swagger UI's JavaScript and the console's stylesheet.
 */
function isAssetRoute(route: string): boolean {
  return route === '/docs' || route.startsWith('/docs/') || route === '/openapi.json' ||
    route === '/console' || route === '/console/' || route.startsWith('/console/assets/');
}

const METRICS_EXAMPLE = [
  '# HELP berth_decisions_total Scheduling decisions by domain and outcome',
  '# TYPE berth_decisions_total counter',
  'berth_decisions_total{domain="volumes",outcome="placed"} 1',
  '',
].join('\n');

/** `deferred`: the bookkeeping some answers leave for later, written down before a scrape reads the counters. */
export function registerMetrics(app: FastifyInstance, metrics: Metrics, deferred: Deferred): void {
  const assets = new Map<string, boolean>();
  // Callback style, not async: it runs after every answer, and a promise per answer is measurable there. The
  // counting itself waits (deferred.ts): it is bookkeeping the client's next request need not wait for.
  app.addHook('onResponse', (request, reply, done) => {
    const route = routeLabel(request);
    const method = request.method;
    const status = reply.statusCode;
    const seconds = reply.elapsedTime / 1000;
    deferred.defer(() => {
      metrics.httpRequests.inc({ route, method, status: String(status) });
      let asset = assets.get(route);
      if (asset === undefined) assets.set(route, (asset = isAssetRoute(route)));
      if (!asset) metrics.httpDuration.observe({ route, method }, seconds);
    });
    done();
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
    deferred.flush();
    const body = await metrics.registry.metrics();
    return reply.type(metrics.registry.contentType).send(body);
  });
}
