// npm run bench [scenario…]: runs every bench/<name>.bench.ts (or the named ones) in turn, each in a process of its
// own (one scenario's heap and JIT state must not weigh on the next one's figures); each prints its figures, and
// the goals they reported (bench/goals.ts) are printed together at the end.
import { fork } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { goalsSummary, recordGoals, reportedGoals, type GoalFigure } from './goals.ts';

const SCENARIO = '--scenario';
const dir = dirname(fileURLToPath(import.meta.url));

if (process.argv[2] === SCENARIO) {
  const file = process.argv[3]!;
  const mod = (await import(pathToFileURL(join(dir, file)).href)) as { run?: () => Promise<void> };
  if (typeof mod.run !== 'function') throw new Error(`${file} must export async function run()`);
  await mod.run();
  process.send!(reportedGoals(), () => process.exit(0));
} else {
  const wanted = process.argv.slice(2);
  const scenarios = readdirSync(dir)
    .filter((f) => f.endsWith('.bench.ts'))
    .filter((f) => wanted.length === 0 || wanted.includes(f.replace(/\.bench\.ts$/, '')))
    .sort();
  if (scenarios.length === 0) console.log('no bench scenarios found');
  let failed = 0;
  for (const file of scenarios) {
    console.log(`\n=== ${file.replace(/\.bench\.ts$/, '')} ===`);
    const child = fork(fileURLToPath(import.meta.url), [SCENARIO, file], { execArgv: ['--import', 'tsx'], serialization: 'advanced' });
    child.on('message', (goals) => recordGoals(goals as GoalFigure[]));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    if (code !== 0) {
      failed++;
      console.log(`${file} failed (exit ${code})`);
    }
  }
  const summary = goalsSummary();
  if (summary) console.log(`\n=== summary ===\n${summary}`);
  if (failed > 0) process.exitCode = 1;
}
