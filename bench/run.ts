// npm run bench [scenario…]: runs every bench/<name>.bench.ts (or the named ones) in turn; each prints its figures.
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { goalsSummary } from './goals.ts';

const dir = dirname(fileURLToPath(import.meta.url));
const wanted = process.argv.slice(2);
const scenarios = readdirSync(dir)
  .filter((f) => f.endsWith('.bench.ts'))
  .filter((f) => wanted.length === 0 || wanted.includes(f.replace(/\.bench\.ts$/, '')))
  .sort();
if (scenarios.length === 0) {
  console.log('no bench scenarios found');
}
for (const file of scenarios) {
  console.log(`\n=== ${file.replace(/\.bench\.ts$/, '')} ===`);
  const mod = (await import(pathToFileURL(join(dir, file)).href)) as { run?: () => Promise<void> };
  if (typeof mod.run !== 'function') throw new Error(`${file} must export async function run()`);
  await mod.run();
}
const summary = goalsSummary();
if (summary) console.log(`\n=== summary ===\n${summary}`);
