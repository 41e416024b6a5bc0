// Swagger UI under its security headers, in a real headless chromium: the page renders the operations, nothing
// breaks the content-security policy, and the Authorize button's token reaches Berth ("Try it out" answers 200
// on a route that needs a role). Skips with one line when chromium is absent, unless BERTH_REQUIRE_BROWSER=1.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { chromium } from 'playwright-core';
import t from 'tap';
import { buildApp } from '../../src/app.ts';
import { parseConfig } from '../../src/config.ts';
import { openStore } from '../../src/store/sqlite.ts';
import { TOKENS, writeTokens } from './auth-helper.ts';

const CHROMIUM = '/usr/bin/chromium';
const present = existsSync(CHROMIUM);
const required = process.env.BERTH_REQUIRE_BROWSER === '1';

t.test('Swagger UI renders under its CSP and its Authorize button works', {
  skip: present || required ? false : `chromium not found at ${CHROMIUM} (set BERTH_REQUIRE_BROWSER=1 to fail instead)`,
}, async (t) => {
  t.ok(present, `chromium at ${CHROMIUM}`);
  if (!present) return;
  const dir = t.testdir();
  const store = openStore(':memory:');
  const app = await buildApp({ config: parseConfig({ data_dir: ':memory:', max_event_loop_delay_ms: 0, auth_tokens_file: writeTokens(dir) }), store, processMetrics: false });
  t.teardown(async () => { await app.close(); store.close(); });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;

  const context = await chromium.launchPersistentContext(join(dir, 'profile'), {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  });
  t.teardown(() => context.close());
  const page = context.pages()[0] ?? await context.newPage();
  const problems: string[] = [];
  page.on('console', (m) => { if (m.type() === 'error' || /Content Security Policy/i.test(m.text())) problems.push(`console: ${m.text()}`); });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  // Browser code as text: the project's type-check has no DOM library.
  await page.addInitScript({
    content: 'window.cspViolations = []; document.addEventListener("securitypolicyviolation", ' +
      '(e) => window.cspViolations.push(`${e.violatedDirective} ${e.blockedURI} ${e.sample}`));',
  });

  const response = await page.goto(`${base}/docs/`, { waitUntil: 'load' });
  t.equal(response?.status(), 200);
  const headers = response!.headers();
  t.match(headers['content-security-policy'], /default-src 'self'.*script-src 'self'/, 'served with a CSP');
  t.equal(headers['x-content-type-options'], 'nosniff');
  t.equal(headers['x-frame-options'], 'DENY');

  await page.locator('.opblock').first().waitFor({ timeout: 30_000 });
  const operations = await page.locator('.opblock').count();
  t.ok(operations > 50, `${operations} operations rendered`);

  // Authorize with a reader token (the bearer scheme), then "Try it out" on GET /backends.
  await page.locator('button.authorize').first().click();
  const bearerBox = page.locator('.auth-container').filter({ hasText: 'bearerAuth' });
  await bearerBox.locator('input').fill(TOKENS.reader);
  await bearerBox.locator('button.authorize').click();
  await bearerBox.locator('button.btn-done').click();

  const operation = page.locator('.opblock-get').filter({ has: page.locator('.opblock-summary-path[data-path="/backends"]') });
  await operation.locator('.opblock-summary').click();
  await operation.locator('button.try-out__btn').click();
  await operation.locator('button.execute').click();
  const status = operation.locator('.live-responses-table tr.response .response-col_status').first();
  await status.waitFor({ timeout: 30_000 });
  t.equal((await status.innerText()).trim(), '200', 'the token from the Authorize dialog was sent');
  t.match(await operation.locator('.curl-command').innerText(), /Authorization: Bearer/);

  const violations = await page.evaluate('window.cspViolations') as string[];
  t.same(violations, [], 'no content-security-policy violation');
  t.same(problems, [], 'no console error');
});
