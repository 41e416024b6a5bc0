// Small helpers for bench scenarios: percentiles and a timing loop.
export function percentile(sortedMs: readonly number[], p: number): number {
  if (sortedMs.length === 0) return NaN;
  const i = Math.min(sortedMs.length - 1, Math.max(0, Math.ceil((p / 100) * sortedMs.length) - 1));
  return sortedMs[i]!;
}

export function summarize(label: string, samplesMs: number[], extra = ''): string {
  const sorted = samplesMs.slice().sort((a, b) => a - b);
  const total = samplesMs.reduce((a, b) => a + b, 0);
  const rate = samplesMs.length / (total / 1000);
  return `${label}: n=${samplesMs.length} rate=${rate.toFixed(0)}/s p50=${percentile(sorted, 50).toFixed(3)}ms ` +
    `p99=${percentile(sorted, 99).toFixed(3)}ms${extra ? ' ' + extra : ''}`;
}

export function nowMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

export function heapMiB(): string {
  return (process.memoryUsage().heapUsed / 1048576).toFixed(1) + ' MiB heap';
}

/**
 * Times a headroom question `n` times after `warm` warm-up calls (the first of them, cold, is printed apart: it pays
 * for compiling what the steady state runs) and prints p50/p99 with the last answer; with `goalMs`, whether the
 * p99 meets it.
 */
export function timeHeadroom(label: string, n: number, once: () => { fits: number; truncated: boolean }, goalMs?: number, warm = 1): void {
  let start = nowMs();
  once();
  const cold = nowMs() - start;
  for (let i = 1; i < warm; i++) once();
  const samples: number[] = [];
  let last = { fits: 0, truncated: false };
  for (let i = 0; i < n; i++) {
    start = nowMs();
    last = once();
    samples.push(nowMs() - start);
  }
  const sorted = samples.slice().sort((a, b) => a - b);
  const verdict = goalMs === undefined ? '' : ` goal p99 < ${goalMs} ms: ${percentile(sorted, 99) < goalMs ? 'met' : 'MISSED'}`;
  console.log(summarize(label, samples, `first=${cold.toFixed(1)}ms fits=${last.fits} truncated=${last.truncated}${verdict}`));
}
