// Issue 16's table: each bench scenario reports its figures against their goals here, and `npm run bench` prints
// them together at the end — measured, goal, the verdict (met, out of reach here, MISSED) and the anchor measured in
// the same run.
export interface GoalFigure {
  /** What was measured, e.g. "GET /allocation_candidates plain, 10,000 providers". */
  figure: string;
  /** The figures, e.g. "p50 21.3 ms, p99 44.0 ms". */
  measured: string;
  /** The goal in words, e.g. "p50 ≤ 25 ms, p99 ≤ 50 ms". */
  goal: string;
  met: boolean;
  /** The anchor and the ratio to it, e.g. "JSON.stringify floor 18.9 ms (1.13×)". */
  anchor?: string;
  /**
   * For a goal not met: why no server could meet it on this machine, from a bound measured in the same run (e.g. a
   * bare node:http server already takes longer than the goal allows). Its verdict is "out of reach", not MISSED.
   */
  outOfReach?: string;
}

/** A verdict: met; out of reach (a bound measured in the same run excludes it here); or MISSED. */
export function verdictOf(met: boolean, outOfReach: boolean): string {
  if (met) return 'met';
  return outOfReach ? 'out of reach' : 'MISSED';
}

const verdict = (g: GoalFigure): string => verdictOf(g.met, Boolean(g.outOfReach));

const reported: GoalFigure[] = [];

/** Records a figure and returns its line for the scenario's own output. */
export function reportGoal(g: GoalFigure): string {
  reported.push(g);
  return `${g.figure}: ${g.measured} — goal ${g.goal}: ${verdict(g)}${g.anchor ? `; anchor: ${g.anchor}` : ''}` +
    (!g.met && g.outOfReach ? `; out of reach here: ${g.outOfReach}` : '');
}

/** What this process reported (a scenario's process hands it to bench/run.ts). */
export function reportedGoals(): GoalFigure[] {
  return reported;
}

/** Figures another process reported. */
export function recordGoals(goals: readonly GoalFigure[]): void {
  reported.push(...goals);
}

/** Every figure reported so far, one per line; empty when none was. */
export function goalsSummary(): string {
  if (reported.length === 0) return '';
  const count = (v: string) => reported.filter((g) => verdict(g) === v).length;
  const header = `goals: ${count('met')} of ${reported.length} met, ${count('out of reach')} out of reach here (a bound measured in the ` +
    `same run excludes them on this machine), ${count('MISSED')} missed`;
  return [header, ...reported.map((g) => `  ${verdict(g).padEnd(12)} ${g.figure}: ${g.measured} (goal ${g.goal})` +
    `${g.anchor ? ` [anchor: ${g.anchor}]` : ''}${!g.met && g.outOfReach ? ` [out of reach here: ${g.outOfReach}]` : ''}`)].join('\n');
}
