// `npm start` starts at once: its prestart step compiles only when the sources changed since the last build.
// scripts/build.mjs runs in a scratch project whose "tsc" only counts its invocations and writes dist/main.js.
import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';

const root = resolve(import.meta.dirname, '..');
const run = promisify(execFile);

function scratchProject(dir: string): { build: (...args: string[]) => Promise<string>; tscRuns: () => number } {
  mkdirSync(join(dir, 'scripts'));
  mkdirSync(join(dir, 'src', 'http'), { recursive: true });
  mkdirSync(join(dir, 'node_modules', 'typescript', 'bin'), { recursive: true });
  copyFileSync(join(root, 'scripts', 'build.mjs'), join(dir, 'scripts', 'build.mjs'));
  writeFileSync(join(dir, 'src', 'main.ts'), 'export {};\n');
  writeFileSync(join(dir, 'src', 'http', 'a.ts'), 'export const a = 1;\n');
  writeFileSync(join(dir, 'tsconfig.json'), '{}\n');
  writeFileSync(join(dir, 'tsconfig.build.json'), '{}\n');
  writeFileSync(join(dir, 'package-lock.json'), '{}\n');
  writeFileSync(join(dir, 'node_modules', 'typescript', 'bin', 'tsc'), [
    "const fs = require('node:fs'); const path = require('node:path');",
    "const root = path.dirname(process.argv[3]);",
    "fs.appendFileSync(path.join(root, 'tsc-runs'), 'x');",
    "fs.mkdirSync(path.join(root, 'dist'), { recursive: true });",
    "fs.writeFileSync(path.join(root, 'dist', 'main.js'), '');",
  ].join('\n'));
  writeFileSync(join(dir, 'node_modules', 'typescript', 'package.json'), '{"type": "commonjs"}\n');
  return {
    build: async (...args) => (await run(process.execPath, [join(dir, 'scripts', 'build.mjs'), ...args], { cwd: dir })).stdout,
    tscRuns: () => { try { return readFileSync(join(dir, 'tsc-runs'), 'utf8').length; } catch { return 0; } },
  };
}

t.test('--if-stale compiles a missing or outdated dist/ and skips tsc when dist/ is current', async (t) => {
  const dir = t.testdir();
  const p = scratchProject(dir);
  t.match(await p.build('--if-stale'), /compiling/);
  t.equal(p.tscRuns(), 1, 'no dist/: compiled');
  t.match(await p.build('--if-stale'), /up to date/);
  t.equal(p.tscRuns(), 1, 'dist/ current: tsc not invoked');
  writeFileSync(join(dir, 'src', 'http', 'a.ts'), 'export const a = 2;\n');
  await p.build('--if-stale');
  t.equal(p.tscRuns(), 2, 'a changed source: compiled again');
  await p.build('--if-stale');
  t.equal(p.tscRuns(), 2, 'and then current again');
  writeFileSync(join(dir, 'tsconfig.build.json'), '{"compilerOptions": {}}\n');
  await p.build('--if-stale');
  t.equal(p.tscRuns(), 3, 'a changed tsconfig: compiled again');
  writeFileSync(join(dir, 'src', 'new.ts'), 'export {};\n');
  await p.build('--if-stale');
  t.equal(p.tscRuns(), 4, 'a new source file: compiled again');
  await p.build();
  t.equal(p.tscRuns(), 5, 'without --if-stale (npm run build) it always compiles');
});

t.test('npm start runs the skipping build first, npm ci builds once through prepare', async (t) => {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
  t.equal(pkg.scripts.prestart, 'node scripts/build.mjs --if-stale');
  t.equal(pkg.scripts.prepare, 'node scripts/build.mjs --if-stale');
  t.equal(pkg.scripts.start, 'node dist/main.js');
  t.equal(pkg.scripts.build, 'node scripts/build.mjs');
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  const firstCommand = /```sh\n([^\n]*)/.exec(readme)?.[1];
  t.match(firstCommand, /^npm ci && npm start\b/, "the README's first command");
});
