// The docs test's machinery (test/docs.test.ts): every command of README.md and docs/*.md runs, in document order, against a fresh listening Berth, and prints what
// the document says it prints. Per document: a `sh` block that starts Berth (`[VAR=value …] npm start`) starts a
// fresh server on an in-memory store with those options; every `sh` block with a curl runs in one bash session per
// document (so shell variables carry over, as in a terminal), with localhost:8080 pointed at the server; the fenced
// block right after it, marked `output`, is what it must print. In an output block "…" stands for what differs
// between runs or is left out: a value "…" matches anything, "pvc-1-r-…" any string with that start, an object key
// "…" allows more keys, an array's last element "…" allows more elements, and in a text line … matches any text.
import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Test } from 'tap';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { openSqliteStore } from '../src/store/sqlite.ts';

export const root = resolve(import.meta.dirname, '..');
export const DOCS = ['README.md', ...readdirSync(join(root, 'docs')).filter((f) => f.endsWith('.md')).sort().map((f) => `docs/${f}`)];
/** The clock the servers read: what a document shows must not depend on when the test runs. */
const CLOCK = Date.parse('2026-12-01T09:30:00.000Z');
/** The npm that runs the tests. */
const NPM = spawnSync('sh', ['-c', 'command -v npm'], { encoding: 'utf8' }).stdout.trim() || 'npm';

export interface Block { info: string; body: string; line: number }

/** Fenced code blocks, with what separates each from the previous one (to find an output block right after). */
function fencedBlocks(markdown: string): Array<Block & { gapBefore: string }> {
  const out: Array<Block & { gapBefore: string }> = [];
  const lines = markdown.split('\n');
  let gap: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)(`{3,})(.*)$/.exec(lines[i]!);
    if (!open) { gap.push(lines[i]!); continue; }
    const fence = open[2]!;
    const body: string[] = [];
    let j = i + 1;
    while (j < lines.length && !lines[j]!.trim().startsWith(fence)) body.push(lines[j++]!.slice(open[1]!.length));
    out.push({ info: open[3]!.trim(), body: body.join('\n'), line: i + 1, gapBefore: gap.join('\n') });
    gap = [];
    i = j;
  }
  return out;
}

export type Step =
  | { kind: 'start'; env: Record<string, string>; line: number; text: string; prelude: string }
  | { kind: 'run'; script: string; expected: string; line: number };

const isShell = (info: string) => ['sh', 'bash', 'shell', 'console'].includes(info.split(/\s+/)[0]!);
const START = /^(.*?)\bnpm start\b/m;

/** The steps of one document: server starts and commands with their documented output. */
function stepsOf(markdown: string, file: string): Step[] {
  const blocks = fencedBlocks(markdown);
  const steps: Step[] = [];
  for (let i = 0; i < blocks.length; i++) {
    const b = blocks[i]!;
    if (!isShell(b.info)) continue;
    if (/\bcurl\b/.test(b.body)) {
      const next = blocks[i + 1];
      const expected = next && next.gapBefore.trim() === '' && next.info.split(/\s+/).includes('output') ? next.body : undefined;
      if (expected === undefined) throw new Error(`${file}:${b.line}: a curl block needs an output block right after it`);
      steps.push({ kind: 'run', script: b.body, expected, line: b.line });
      i++;
      continue;
    }
    const start = START.exec(b.body);
    if (start) {
      const env: Record<string, string> = {};
      for (const m of start[1]!.replace(/\bnpm ci\s*&&/, '').matchAll(/\b([A-Z][A-Z0-9_]*)=(\S*)/g)) env[m[1]!] = m[2]!;
      // The block's other commands (creating a tokens file, say) run first, in the document's shell.
      const prelude = b.body.split('\n').filter((l) => !START.test(l) && l.trim() !== '' && !l.trim().startsWith('#')).join('\n');
      steps.push({ kind: 'start', env, line: b.line, text: start[0]!, prelude });
    }
  }
  return steps;
}

// ---- comparing what was printed with what the document says

type Token = { json: unknown } | { text: string };

/** Splits output into JSON values (curl prints them without a newline, back to back) and lines of other text. */
export function tokens(output: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  while (i < output.length) {
    const c = output[i]!;
    if (/\s/.test(c)) { i++; continue; }
    if (c === '{' || c === '[') {
      const end = jsonEnd(output, i);
      if (end > 0) {
        try {
          out.push({ json: JSON.parse(output.slice(i, end)) });
          i = end;
          continue;
        } catch { /* not JSON after all: a line of text */ }
      }
    }
    let nl = output.indexOf('\n', i);
    if (nl < 0) nl = output.length;
    out.push({ text: output.slice(i, nl).trimEnd() });
    i = nl + 1;
  }
  return out;
}

function jsonEnd(s: string, start: number): number {
  let depth = 0;
  let inString = false;
  for (let i = start; i < s.length; i++) {
    const c = s[i]!;
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === '{' || c === '[') depth++;
    else if (c === '}' || c === ']') {
      depth--;
      if (depth === 0) return i + 1;
    }
  }
  return -1;
}

const ELLIPSIS = '…';
const glob = (pattern: string) => new RegExp(`^${pattern.split(ELLIPSIS).map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`, 's');

/** Where `actual` differs from the documented `expected` ("…" rules above); empty when it matches. */
function differences(expected: unknown, actual: unknown, path = '$'): string[] {
  if (expected === ELLIPSIS) return [];
  if (typeof expected === 'string' && expected.includes(ELLIPSIS)) {
    return typeof actual === 'string' && glob(expected).test(actual) ? [] : [`${path}: ${JSON.stringify(actual)} does not match ${JSON.stringify(expected)}`];
  }
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual)) return [`${path}: expected an array, got ${JSON.stringify(actual)}`];
    const open = expected.length > 0 && expected[expected.length - 1] === ELLIPSIS;
    const items = open ? expected.slice(0, -1) : expected;
    if (open ? actual.length < items.length : actual.length !== items.length) {
      return [`${path}: ${actual.length} elements, the document shows ${items.length}${open ? ' or more' : ''}`];
    }
    return items.flatMap((e, i) => differences(e, actual[i], `${path}[${i}]`));
  }
  if (expected !== null && typeof expected === 'object') {
    if (actual === null || typeof actual !== 'object' || Array.isArray(actual)) return [`${path}: expected an object, got ${JSON.stringify(actual)}`];
    const exp = expected as Record<string, unknown>;
    const act = actual as Record<string, unknown>;
    const open = ELLIPSIS in exp;
    const keys = Object.keys(exp).filter((k) => k !== ELLIPSIS);
    const diffs: string[] = [];
    for (const k of keys) {
      if (!(k in act)) diffs.push(`${path}.${k}: missing`);
      else diffs.push(...differences(exp[k], act[k], `${path}.${k}`));
    }
    if (!open) for (const k of Object.keys(act)) if (!(k in exp)) diffs.push(`${path}.${k}: not in the document`);
    return diffs;
  }
  return Object.is(expected, actual) ? [] : [`${path}: ${JSON.stringify(actual)}, the document shows ${JSON.stringify(expected)}`];
}

export function outputDifferences(expected: string, actual: string): string[] {
  const want = tokens(expected);
  const got = tokens(actual);
  const diffs: string[] = [];
  for (let i = 0; i < Math.max(want.length, got.length); i++) {
    const w = want[i];
    const g = got[i];
    if (!w) { diffs.push(`output #${i + 1} is not in the document: ${JSON.stringify(g)}`); continue; }
    if (!g) { diffs.push(`output #${i + 1} is missing: ${JSON.stringify(w)}`); continue; }
    if ('json' in w && 'json' in g) diffs.push(...differences(w.json, g.json, `output #${i + 1}`));
    else if ('text' in w && 'text' in g) {
      if (!glob(w.text).test(g.text)) diffs.push(`output #${i + 1}: ${JSON.stringify(g.text)} does not match ${JSON.stringify(w.text)}`);
    } else diffs.push(`output #${i + 1}: ${JSON.stringify(g)}, the document shows ${JSON.stringify(w)}`);
  }
  return diffs;
}

// ---- running a document

const MARK = '__berth_docs_block_done__';

/** One bash for the whole document, as a reader's terminal: each block's output up to a marker with its status. */
class Shell {
  readonly #bash: ChildProcessWithoutNullStreams;
  #out = '';
  #err = '';
  #waiting: (() => void) | null = null;
  #exited = false;
  constructor(cwd: string) {
    // `npm run …` in a document means the repository's scripts, run from the document's directory (INIT_CWD).
    const bin = join(cwd, '.bin');
    mkdirSync(bin, { recursive: true });
    writeFileSync(join(bin, 'npm'), `#!/bin/sh\nexec ${JSON.stringify(NPM)} --prefix ${JSON.stringify(root)} "$@"\n`, { mode: 0o755 });
    const PATH = `${bin}:${process.env.PATH ?? '/usr/bin:/bin'}`;
    this.#bash = spawn('bash', ['--noprofile', '--norc'], { cwd, env: { PATH, HOME: cwd, LC_ALL: 'C.UTF-8' } });
    this.#bash.stdout.on('data', (d: Buffer) => { this.#out += d.toString(); this.#waiting?.(); });
    this.#bash.stderr.on('data', (d: Buffer) => { this.#err += d.toString(); });
    this.#bash.on('exit', () => { this.#exited = true; this.#waiting?.(); });
  }
  async run(script: string): Promise<{ stdout: string; stderr: string; status: number }> {
    this.#out = '';
    this.#err = '';
    this.#bash.stdin.write(`${script}\nprintf '\\n${MARK} %s\\n' "$?"\n`);
    const marker = new RegExp(`\\n${MARK} (\\d+)\\n$`);
    while (!marker.test(this.#out)) {
      // A document that ends the shell (exit, exec) would otherwise leave the test waiting for its marker.
      if (this.#exited) return { stdout: this.#out, stderr: `${this.#err}(the shell exited)`, status: -1 };
      await new Promise<void>((r) => { this.#waiting = r; });
    }
    this.#waiting = null;
    const status = Number(marker.exec(this.#out)![1]);
    return { stdout: this.#out.replace(marker, ''), stderr: this.#err, status };
  }
  close(): void {
    this.#bash.stdin.end();
  }
}

async function startServer(env: Record<string, string>, cwd: string): Promise<{ app: FastifyInstance; port: number }> {
  // Files the document names are relative to its shell's directory.
  const files = Object.fromEntries(Object.entries(env).filter(([k]) => k.endsWith('_FILE')).map(([k, v]) => [k, resolve(cwd, v)]));
  const config = loadConfig({ ...env, ...files, BERTH_DATA_DIR: ':memory:', BERTH_HOST: '127.0.0.1', BERTH_PORT: '0' });
  const store = openSqliteStore(':memory:');
  const app = await buildApp({ config, store, processMetrics: false, now: () => CLOCK, eventLoopDelay: () => 0 });
  app.addHook('onClose', async () => store.close());
  await app.listen({ host: '127.0.0.1', port: 0 });
  return { app, port: (app.server.address() as { port: number }).port };
}

export async function runDocument(t: Test, file: string, onBlock?: (line: number, stdout: string) => void): Promise<void> {
  const steps = stepsOf(readFileSync(join(root, file), 'utf8'), file);
  const cwd = t.testdir();
  const shell = new Shell(cwd);
  let server: { app: FastifyInstance; port: number } | null = null;
  t.teardown(async () => {
    shell.close();
    await server?.app.close();
  });
  let commands = 0;
  for (const step of steps) {
    if (step.kind === 'start') {
      if (!step.text.includes('npm ci')) {
        t.equal(step.env.BERTH_DATA_DIR, ':memory:', `${file}:${step.line}: a walkthrough starts from an explicit fresh store`);
      }
      if (step.prelude !== '') {
        const { stderr, status } = await shell.run(step.prelude);
        t.equal(status, 0, `${file}:${step.line}: the commands before npm start succeed ${stderr}`);
      }
      await server?.app.close();
      server = await startServer(step.env, cwd);
      continue;
    }
    if (!server) {
      t.fail(`${file}:${step.line}: a command before the document starts Berth`);
      continue;
    }
    const script = step.script.replaceAll('localhost:8080', `127.0.0.1:${server.port}`);
    const { stdout, stderr, status } = await shell.run(script);
    onBlock?.(step.line, stdout);
    const where = `${file}:${step.line}`;
    t.equal(status, 0, `${where}: exit status`);
    t.equal(stderr, '', `${where}: nothing on stderr`);
    t.same(outputDifferences(step.expected, stdout), [], `${where}: prints what the document shows\n${stdout}`);
    commands++;
  }
  t.ok(commands > 0, `${file}: ${commands} command blocks checked`);
}

