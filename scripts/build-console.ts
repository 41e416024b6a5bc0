// Builds the console (console/) into dist/console: one minified ES module bundle and one stylesheet, named by their
// content hash, and index.html pointing at them. Part of `npm run build`; tests call buildConsole() into a temp dir.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const CONSOLE_SOURCES = join(ROOT, 'console');
export const CONSOLE_OUT = join(ROOT, 'dist', 'console');

export interface BuiltFile {
  /** Path below the output directory, e.g. assets/console-3F2A9C1B.js. */
  path: string;
  bytes: number;
  gzipBytes: number;
}

export interface ConsoleBuild {
  outDir: string;
  files: BuiltFile[];
  bytes: number;
  gzipBytes: number;
}

export async function buildConsole(outDir: string = CONSOLE_OUT): Promise<ConsoleBuild> {
  const result = await build({
    entryPoints: [
      { in: join(CONSOLE_SOURCES, 'src', 'main.ts'), out: 'console' },
      { in: join(CONSOLE_SOURCES, 'console.css'), out: 'console' },
    ],
    bundle: true,
    minify: true,
    format: 'esm',
    target: ['es2022', 'chrome110', 'firefox110', 'safari16'],
    entryNames: '[name]-[hash]',
    outdir: join(outDir, 'assets'),
    write: false,
    logLevel: 'silent',
    legalComments: 'none',
  });
  const outputs = result.outputFiles.map((f) => ({ name: basename(f.path), contents: Buffer.from(f.contents) }));
  const js = outputs.find((o) => o.name.endsWith('.js'));
  const css = outputs.find((o) => o.name.endsWith('.css'));
  if (!js || !css) throw new Error('esbuild produced no console bundle or stylesheet');
  const html = readFileSync(join(CONSOLE_SOURCES, 'index.html'), 'utf8')
    .replace('%CONSOLE_JS%', js.name)
    .replace('%CONSOLE_CSS%', css.name);

  rmSync(outDir, { recursive: true, force: true });
  mkdirSync(join(outDir, 'assets'), { recursive: true });
  const files: Array<{ path: string; contents: Buffer }> = [
    { path: 'index.html', contents: Buffer.from(html) },
    ...outputs.map((o) => ({ path: `assets/${o.name}`, contents: o.contents })),
  ];
  for (const f of files) writeFileSync(join(outDir, f.path), f.contents);
  const built = files.map((f) => ({ path: f.path, bytes: f.contents.length, gzipBytes: gzipSync(f.contents, { level: 9 }).length }));
  return {
    outDir,
    files: built,
    bytes: built.reduce((s, f) => s + f.bytes, 0),
    gzipBytes: built.reduce((s, f) => s + f.gzipBytes, 0),
  };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const out = await buildConsole(process.argv[2] ? resolve(process.argv[2]) : CONSOLE_OUT);
  for (const f of out.files) console.log(`  ${f.path.padEnd(34)} ${String(f.bytes).padStart(7)} B  (${f.gzipBytes} B gzip)`);
  console.log(`console: ${out.bytes} B, ${out.gzipBytes} B gzip → ${out.outDir}`);
}
