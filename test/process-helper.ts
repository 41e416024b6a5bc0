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
  /** Resolves with [code, signal] when the process exits. */
  exited: Promise<[number | null, NodeJS.Signals | null]>;
  /** Resolves with the first log line (stdout, from start-up on) that matches: for waiting on events, not on time. */
  logLine(pattern: RegExp): Promise<string>;
  /** stdout so far (JSON log lines). */
  output(): string;
}

/**
 * Starts `node main.js` on 127.0.0.1 with an ephemeral port and waits for it to listen (no deadline: the test's own
 * timeout bounds it). Back-pressure is off unless `env` turns it on, since machine load must not change an answer.
 */
export function startBerth(mainJs: string, env: Record<string, string>): Promise<RunningBerth> {
  const child = spawn(process.execPath, [mainJs], {
    env: {
      ...process.env, BERTH_PORT: '0', BERTH_HOST: '127.0.0.1', BERTH_LOG_LEVEL: 'info', BERTH_CONFIG: '',
      BERTH_MAX_EVENT_LOOP_DELAY_MS: '0', ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<[number | null, NodeJS.Signals | null]>((r) => child.once('exit', (code, signal) => r([code, signal])));
  const lines: string[] = [];
  const waiters: Array<{ pattern: RegExp; resolve: (line: string) => void }> = [];
  let partial = '';
  let err = '';
  child.stderr!.on('data', (chunk: Buffer) => { err += chunk.toString(); });
  child.stdout!.on('data', (chunk: Buffer) => {
    const parts = (partial + chunk.toString()).split('\n');
    partial = parts.pop()!;
    for (const line of parts) {
      if (lines.length < 100_000) lines.push(line);
      for (let i = waiters.length - 1; i >= 0; i--) {
        if (waiters[i]!.pattern.test(line)) waiters.splice(i, 1)[0]!.resolve(line);
      }
    }
  });
  const logLine = (pattern: RegExp) => new Promise<string>((resolve) => {
    const seen = lines.find((l) => pattern.test(l));
    if (seen !== undefined) resolve(seen);
    else waiters.push({ pattern, resolve });
  });
  const output = () => lines.join('\n') + (lines.length > 0 ? '\n' : '') + partial;
  const LISTENING = /listening at (https?):\/\/127\.0\.0\.1:(\d+)/;
  return new Promise((resolvePort, reject) => {
    void logLine(LISTENING).then((line) => {
      const [, scheme, port] = LISTENING.exec(line)!;
      resolvePort({ child, port: Number(port), base: `${scheme}://127.0.0.1:${port}`, exited, logLine, output });
    });
    void exited.then(([code]) => reject(new Error(`exited ${code} before listening: ${output()}${err}`)));
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
