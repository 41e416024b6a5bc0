// Compiles src/ into dist/ with tsc, then the console's assets into dist/console (scripts/build-console.ts). With --if-stale it first compares a hash of everything the build reads with
// the one recorded by the last build, and does nothing when they are equal: `npm start` then starts at once.
// Plain JavaScript, so it runs before anything is compiled and without tsx.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(root, 'dist');
const stamp = join(dist, '.build-hash');

/** Every file the build's output depends on, in a stable order. */
function inputs() {
  const files = [];
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (/\.(ts|css|html|json)$/.test(entry.name)) files.push(path);
    }
  };
  for (const dir of ['src', 'console']) if (existsSync(join(root, dir))) walk(join(root, dir));
  for (const f of ['tsconfig.json', 'tsconfig.build.json', 'package-lock.json', 'scripts/build-console.ts']) {
    if (existsSync(join(root, f))) files.push(join(root, f));
  }
  return files;
}

function sourceHash() {
  const hash = createHash('sha256');
  for (const file of inputs()) hash.update(relative(root, file)).update('\0').update(readFileSync(file)).update('\0');
  return hash.digest('hex');
}

const ifStale = process.argv.includes('--if-stale');
const hash = sourceHash();
if (ifStale && existsSync(join(dist, 'main.js')) && existsSync(stamp) && readFileSync(stamp, 'utf8').trim() === hash) {
  console.log('build: dist/ is up to date');
  process.exit(0);
}
console.log('build: compiling src/ into dist/');
// A clean output: a deleted source file must not leave its old JavaScript behind.
rmSync(dist, { recursive: true, force: true });
const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
const result = spawnSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json')], { stdio: 'inherit', cwd: root });
if (result.status !== 0) process.exit(result.status ?? 1);
if (existsSync(join(root, 'console'))) {
  const assets = spawnSync(process.execPath, ['--import', 'tsx', join(root, 'scripts', 'build-console.ts')], { stdio: 'inherit', cwd: root });
  if (assets.status !== 0) process.exit(assets.status ?? 1);
}
writeFileSync(stamp, hash + '\n');
