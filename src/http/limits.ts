// Back-pressure: when the event loop lags, new work is refused with 503 + Retry-After rather than queued behind it.
// The lag is a signal the app is given (tests inject one), so the decision itself does not depend on machine load.
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { FastifyInstance } from 'fastify';
import { ProblemError } from './problem.ts';
import { routeOf } from './route-options.ts';

/** What a client under back-pressure is told to wait, in seconds. */
export const RETRY_AFTER_SECONDS = 5;

/** Route config that keeps a route answering under back-pressure (probes, metrics). */
export const BACK_PRESSURE_EXEMPT = { backPressureExempt: true } as const;

/** The current event-loop delay in milliseconds. */
export type EventLoopDelay = () => number;

/** The histogram's timer resolution, ms: its own ticks are not lag. */
const RESOLUTION_MS = 10;

/** The lag of one sample window from the histogram's mean turn delay (ns); NaN means no turn at all. */
export function windowDelayMs(meanNs: number): number {
  return Number.isNaN(meanNs) ? Infinity : Math.max(0, meanNs / 1e6 - RESOLUTION_MS);
}

/**
 * The process's event-loop delay: the mean delay of the loop's turns over the last sample window (a perf_hooks
 * histogram, read and reset every `sampleIntervalMs`). A window without a single turn reads as infinite lag.
 */
export function sampleEventLoopDelay(sampleIntervalMs: number): { read: EventLoopDelay; stop: () => void } {
  const histogram = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
  histogram.enable();
  let delay = 0;
  const timer = setInterval(() => {
    delay = windowDelayMs(histogram.mean);
    histogram.reset();
  }, sampleIntervalMs);
  timer.unref();
  return {
    read: () => delay,
    stop: () => {
      clearInterval(timer);
      histogram.disable();
    },
  };
}

/** Refuses requests to non-exempt routes while `delay()` is above `maxDelayMs`. */
export function registerBackPressure(app: FastifyInstance, options: { maxDelayMs: number; delay: EventLoopDelay }): void {
  const { maxDelayMs, delay } = options;
  app.addHook('onRequest', (request, reply, done) => {
    const config = routeOf(request).config as { backPressureExempt?: boolean };
    if (config.backPressureExempt) return done();
    const lag = delay();
    if (lag <= maxDelayMs) return done();
    request.log.warn({ eventLoopDelayMs: Math.round(lag), limitMs: maxDelayMs }, 'shedding load');
    reply.header('retry-after', String(RETRY_AFTER_SECONDS));
    // Through the route's error handler, so each dialect answers in its own error shape.
    done(new ProblemError(503, 'overloaded', 'Service Unavailable',
      `Berth is overloaded (event loop delay ${Math.round(lag)} ms, limit ${maxDelayMs} ms); retry after the time in Retry-After.`));
  });
}
