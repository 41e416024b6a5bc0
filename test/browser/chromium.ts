// Debian's chromium, headless, driven by playwright-core: one way to find it, launch it and skip without it.
// Without chromium a browser test is skipped with one line; BERTH_REQUIRE_BROWSER=1 (set by .ci/run) fails instead.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import type { BrowserContext } from 'playwright-core';

const CHROMIUM = process.env.BERTH_CHROMIUM ?? '/usr/bin/chromium';
const REQUIRED = process.env.BERTH_REQUIRE_BROWSER === '1';
/** As the machine's probe starts it: no background traffic to a closed network, a fresh profile each time. */
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];

/** tap's `skip` option for a browser test: false when it must run (chromium present, or required). */
export function browserSkip(what: string): string | false {
  if (existsSync(CHROMIUM) || REQUIRED) return false;
  return `no chromium at ${CHROMIUM}: ${what} skipped (apt-get install chromium; BERTH_REQUIRE_BROWSER=1 makes this a failure)`;
}

interface Teardown {
  teardown(fn: () => unknown): void;
}

/** A headless browser with a fresh profile, closed (and its profile removed) at the test's end. */
export async function launchBrowser(t: Teardown, options: { viewport?: { width: number; height: number } } = {}): Promise<BrowserContext> {
  if (!existsSync(CHROMIUM)) throw new Error(`chromium not found at ${CHROMIUM} and BERTH_REQUIRE_BROWSER=1`);
  const { chromium } = await import('playwright-core');
  const profile = mkdtempSync(join(tmpdir(), 'berth-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM, headless: true, args: ARGS, ...(options.viewport ? { viewport: options.viewport } : {}),
  });
  t.teardown(async () => {
    await context.close();
    rmSync(profile, { recursive: true, force: true });
  });
  return context;
}

/** Listens on a free loopback port; the base URL. */
export async function listenLocal(app: FastifyInstance): Promise<string> {
  await app.listen({ host: '127.0.0.1', port: 0 });
  return `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
}
