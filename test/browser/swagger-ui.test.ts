// Swagger UI in a real browser (test/browser/chromium.ts): /docs of a listening Berth renders every operation under
// its security headers with no content-security-policy violation; "Try it out" → "Execute" runs operations of each
// dialect with their pre-filled examples and the page shows Berth's answers; with tokens, the Authorize dialog's
// token reaches Berth.
import type { Page } from 'playwright-core';
import t from 'tap';
import { buildApp } from '../../src/app.ts';
import { parseConfig } from '../../src/config.ts';
import { openSqliteStore } from '../../src/store/sqlite.ts';
import { TOKENS, writeTokens } from '../http/auth-helper.ts';
import { build } from '../helper.ts';
import { browserSkip, launchBrowser, listenLocal } from './chromium.ts';

/** Waits are on page events only (no timeouts): the test's own timeout bounds a hang. */
t.setTimeout(300_000);
const skip = browserSkip('Swagger UI in a browser');

/** Records console errors and CSP violations (browser code as text: the type-check has no DOM library). */
async function watch(page: Page): Promise<() => Promise<{ problems: string[]; violations: string[] }>> {
  const problems: string[] = [];
  page.on('console', (m) => { if (m.type() === 'error' || /Content Security Policy/i.test(m.text())) problems.push(`console: ${m.text()}`); });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  await page.addInitScript({
    content: 'window.cspViolations = []; document.addEventListener("securitypolicyviolation", ' +
      '(e) => window.cspViolations.push(`${e.violatedDirective} ${e.blockedURI} ${e.sample}`));',
  });
  return async () => ({ problems, violations: await page.evaluate('window.cspViolations') as string[] });
}

/** Opens an operation, "Try it out", "Execute": the parameters it pre-filled and the answer the page shows. */
async function tryIt(page: Page, operationId: string) {
  const op = page.locator(`#${operationId}`);
  await op.locator('.opblock-summary').click();
  await op.locator('button.try-out__btn').click();
  const params = await op.locator('.parameters input').evaluateAll((els) => els.map((e) => (e as unknown as { value: string }).value));
  await op.locator('button.execute').click();
  const row = op.locator('.live-responses-table tbody .response').first();
  await row.waitFor();
  return {
    params,
    status: (await row.locator('.response-col_status').innerText()).trim(),
    body: JSON.parse(await row.locator('.response-col_description pre').first().innerText()) as Record<string, unknown>,
    curl: await op.locator('.curl-command').innerText(),
  };
}

t.test('Try it out → Execute answers with the examples, in the page, under the CSP', { skip }, async (t) => {
  const app = await build(t);
  const base = await listenLocal(app);
  const browser = await launchBrowser(t);
  browser.setDefaultTimeout(0);
  const page = await browser.newPage();
  const seen = await watch(page);
  const response = await page.goto(`${base}/docs`);
  const headers = response!.headers();
  t.match(headers['content-security-policy'], /default-src 'self'.*script-src 'self'/, 'served with a CSP');
  t.equal(headers['x-content-type-options'], 'nosniff');
  t.equal(headers['x-frame-options'], 'DENY');
  await page.locator('.opblock').first().waitFor();
  const operations = await page.locator('.opblock').count();
  t.ok(operations > 50, `${operations} operations rendered`);

  const backend = await tryIt(page, 'operations-volumes-put_backends__host_');
  t.same(backend.params, ['node1@lvm'], 'volumes: the host is pre-filled');
  t.equal(backend.status, '200');
  t.match(backend.body, { backend: 'node1@lvm', pools: [{ name: 'node1@lvm#pool1', max_over_subscription_ratio: 2.76 }] });

  const node = await tryIt(page, 'operations-replicas-put_nodes__name_');
  t.same(node.params, ['node-1'], 'replicas: the node name is pre-filled');
  t.equal(node.status, '200');
  t.match(node.body, { name: 'node-1', zone: 'zone-1', schedulable: true, disks: { 'disk-1': { storageMaximum: 107374182400 } } });

  const provider = await tryIt(page, 'operations-placement-post_resource_providers');
  t.equal(provider.status, '200', 'placement: a provider from the example body');
  t.match(provider.body, { name: String, uuid: String, generation: 0 });

  const ready = await tryIt(page, 'operations-operations-get_readyz');
  t.equal(ready.status, '200');
  t.same(ready.body, { status: 'ready' });

  // What the browser sent really reached Berth.
  t.same((await app.inject('/pools')).json(), { pools: [{ name: 'node1@lvm#pool1' }] });
  t.equal((await app.inject('/nodes/node-1')).statusCode, 200);
  t.same(await seen(), { problems: [], violations: [] }, 'no console error, no CSP violation');
});

t.test('with tokens, the Authorize dialog\'s token is what Try it out sends', { skip }, async (t) => {
  const dir = t.testdir();
  const store = openSqliteStore(':memory:');
  const app = await buildApp({ config: parseConfig({ data_dir: ':memory:', max_event_loop_delay_ms: 0, auth_tokens_file: writeTokens(dir) }), store, processMetrics: false });
  t.teardown(async () => { await app.close(); await store.close(); });
  const base = await listenLocal(app);
  const browser = await launchBrowser(t);
  browser.setDefaultTimeout(0);
  const page = await browser.newPage();
  const seen = await watch(page);
  await page.goto(`${base}/docs/`);
  await page.locator('button.authorize').first().click();
  const bearerBox = page.locator('.auth-container').filter({ hasText: 'bearerAuth' });
  await bearerBox.locator('input').fill(TOKENS.reader);
  await bearerBox.locator('button.authorize').click();
  await bearerBox.locator('button.btn-done').click();
  const backends = await tryIt(page, 'operations-volumes-get_backends');
  t.equal(backends.status, '200', 'a reader token reaches a reader route');
  t.match(backends.curl, /Authorization: Bearer/);
  t.same(await seen(), { problems: [], violations: [] });
});
