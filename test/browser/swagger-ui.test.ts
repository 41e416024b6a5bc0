// Swagger UI in a real browser: headless Chromium (Debian's, driven by playwright-core) opens /docs of a listening
// Berth and runs three operations through "Try it out" → "Execute" with the pre-filled examples, one per dialect
// owned here plus an operations route, and reads their answers in the page. Without chromium the test is skipped
// with one line; BERTH_REQUIRE_BROWSER=1 (set by .ci/run) makes that a failure.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { build } from '../helper.ts';

const CHROMIUM = process.env.BERTH_CHROMIUM ?? '/usr/bin/chromium';
const required = process.env.BERTH_REQUIRE_BROWSER === '1';

/** Waits are on page events only (no timeouts): the test's own timeout bounds a hang. */
t.setTimeout(300_000);

if (!existsSync(CHROMIUM) && !required) {
  t.test('Swagger UI in a browser', { skip: `no chromium at ${CHROMIUM} (apt-get install chromium; BERTH_REQUIRE_BROWSER=1 makes this a failure)` }, () => {});
} else {
  t.test('Try it out → Execute answers with the examples, in the page', async (t) => {
    t.ok(existsSync(CHROMIUM), `chromium at ${CHROMIUM}`);
    const { chromium } = await import('playwright-core');
    const app = await build(t);
    await app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = app.server.address() as { port: number };
    const profile = mkdtempSync(join(tmpdir(), 'berth-chromium-'));
    const browser = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
        '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
    t.teardown(async () => {
      await browser.close();
      rmSync(profile, { recursive: true, force: true });
    });
    browser.setDefaultTimeout(0);
    const page = await browser.newPage();
    await page.goto(`http://127.0.0.1:${port}/docs`);

    const tryIt = async (operationId: string) => {
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
      };
    };

    const backend = await tryIt('operations-volumes-put_backends__host_');
    t.same(backend.params, ['node1@lvm'], 'volumes: the host is pre-filled');
    t.equal(backend.status, '200');
    t.match(backend.body, { backend: 'node1@lvm', pools: [{ name: 'node1@lvm#pool1', max_over_subscription_ratio: 2.76 }] });

    const node = await tryIt('operations-replicas-put_nodes__name_');
    t.same(node.params, ['node-1'], 'replicas: the node name is pre-filled');
    t.equal(node.status, '200');
    t.match(node.body, { name: 'node-1', zone: 'zone-1', schedulable: true, disks: { 'disk-1': { storageMaximum: 107374182400 } } });

    const ready = await tryIt('operations-operations-get_readyz');
    t.equal(ready.status, '200');
    t.same(ready.body, { status: 'ready' });

    // What the browser sent really reached Berth.
    t.same((await app.inject('/pools')).json(), { pools: [{ name: 'node1@lvm#pool1' }] });
    t.equal((await app.inject('/nodes/node-1')).statusCode, 200);
  });
}
