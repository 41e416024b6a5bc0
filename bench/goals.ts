// Issue 16's table: each bench scenario reports its figures against their goals here, and `npm run bench` prints
// them together at the end — measured, goal, met or MISSED, and the anchor measured in the same run.
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
}

const reported: GoalFigure[] = [];

/** Records a figure and returns its line for the scenario's own output. */
export function reportGoal(g: GoalFigure): string {
  reported.push(g);
  return `${g.figure}: ${g.measured} — goal ${g.goal}: ${g.met ? 'met' : 'MISSED'}${g.anchor ? `; anchor: ${g.anchor}` : ''}`;
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
  const met = reported.filter((g) => g.met).length;
  return [`goals: ${met} of ${reported.length} met`, ...reported.map((g) => `  ${g.met ? 'met   ' : 'MISSED'} ${g.figure}: ${g.measured} (goal ${g.goal})${g.anchor ? ` [anchor: ${g.anchor}]` : ''}`)].join('\n');
}
