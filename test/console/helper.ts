// A Berth app serving a freshly built console (built once per test process into a temp dir).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.ts';
import { parseConfig, type ConfigInput } from '../../src/config.ts';
import { openSqliteStore } from '../../src/store/sqlite.ts';
import { buildConsole, type ConsoleBuild } from '../../scripts/build-console.ts';

let built: Promise<ConsoleBuild> | undefined;

/** The console built into a temp dir removed when the process exits. */
function builtConsole(): Promise<ConsoleBuild> {
  if (!built) {
    const dir = mkdtempSync(join(tmpdir(), 'berth-console-'));
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
    built = buildConsole(join(dir, 'console'));
  }
  return built;
}

interface Teardown {
  teardown(fn: () => unknown): void;
}

export async function buildWithConsole(
  t: Teardown,
  options: { config?: ConfigInput; now?: () => number; consoleDir?: string } = {},
): Promise<FastifyInstance> {
  const consoleDir = options.consoleDir ?? (await builtConsole()).outDir;
  const store = openSqliteStore(':memory:');
  const app = await buildApp({
    config: parseConfig({ data_dir: ':memory:', ...options.config }),
    store,
    processMetrics: false,
    consoleDir,
    ...(options.now ? { now: options.now } : {}),
  });
  t.teardown(async () => {
    await app.close();
    await store.close();
  });
  await app.ready();
  return app;
}
