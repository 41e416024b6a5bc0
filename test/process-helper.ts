// Helpers for tests that run Berth as a real process: build dist/ once per test file, start, stop, kill.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';

export const root = resolve(import.meta.dirname, '..');

/** Compiles src/ into a private directory (so parallel test files do not race on dist/); returns main.js. */
export async function buildDist(teardown: (fn: () => void) => void): Promise<string> {
  const outDir = join(root, '.tap', `dist-test-${process.pid}-${Math.random().toString(36).slice(2, 8)}`);
  teardown(() => rmSync(outDir, { recursive: true, force: true }));
  await promisify(execFile)(process.execPath, [
    join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(root, 'tsconfig.build.json'), '--outDir', outDir,
  ]);
  return join(outDir, 'main.js');
}

export interface RunningBerth {
  child: ChildProcess;
  port: number;
  /** http://127.0.0.1:PORT, or https:// when Berth serves TLS. */
  base: string;
  /** stdout so far (JSON log lines). */
  output(): string;
  /** Resolves with the first stdout line, already written or still to come, that matches. */
  waitForLine(pattern: RegExp): Promise<string>;
  /** Resolves with [code, signal] when the process exits. */
  exited: Promise<[number | null, NodeJS.Signals | null]>;
}

/** Starts `node main.js` on 127.0.0.1 with an ephemeral port and waits for it to listen. */
export function startBerth(mainJs: string, env: Record<string, string>): Promise<RunningBerth> {
  const child = spawn(process.execPath, [mainJs], {
    env: { ...process.env, BERTH_PORT: '0', BERTH_HOST: '127.0.0.1', BERTH_LOG_LEVEL: 'info', BERTH_CONFIG: '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<[number | null, NodeJS.Signals | null]>((r) => child.once('exit', (code, signal) => r([code, signal])));
  let out = '';
  let listening = false;
  const waiters = new Set<() => void>();
  const waitForLine = (pattern: RegExp) => new Promise<string>((resolveLine, rejectLine) => {
    const deadline = setTimeout(() => { waiters.delete(check); rejectLine(new Error(`no line matching ${pattern} within 30 s`)); }, 30_000);
    function check() {
      const line = out.split('\n').find((l) => pattern.test(l));
      if (line === undefined) return;
      waiters.delete(check);
      clearTimeout(deadline);
      resolveLine(line);
    }
    waiters.add(check);
    check();
  });
  return new Promise((resolvePort, reject) => {
    let err = '';
    const timer = setTimeout(() => reject(new Error(`no listen line within 30 s: ${out}${err}`)), 30_000);
    child.stderr!.on('data', (chunk: Buffer) => { err += chunk.toString(); });
    child.stdout!.on('data', (chunk: Buffer) => {
      if (out.length < 1e6) out += chunk.toString();
      for (const waiter of [...waiters]) waiter();
      const m = listening ? null : /listening at (https?):\/\/127\.0\.0\.1:(\d+)/.exec(out);
      if (m) {
        listening = true;
        clearTimeout(timer);
        const port = Number(m[2]);
        resolvePort({ child, port, base: `${m[1]}://127.0.0.1:${port}`, exited, output: () => out, waitForLine });
      }
    });
    void exited.then(([code]) => { clearTimeout(timer); reject(new Error(`exited ${code} before listening: ${out}${err}`)); });
  });
}

/** Runs `node ARGS` to its exit (from the repository root); resolves with the exit code and what it printed. */
export function runToExit(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolveRun, reject) => {
    const child = spawn(process.execPath, args, { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (d: Buffer) => { stdout += d.toString(); });
    child.stderr!.on('data', (d: Buffer) => { stderr += d.toString(); });
    child.on('error', reject);
    child.on('exit', (code) => resolveRun({ code, stdout, stderr }));
  });
}
