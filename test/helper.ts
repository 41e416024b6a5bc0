// build(t): a Berth app on an in-memory store, closed when the test ends.
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../src/app.ts';
import { parseConfig, type ConfigInput } from '../src/config.ts';
import { openStore } from '../src/store/sqlite.ts';
import type { Store } from '../src/store/store.ts';

interface Teardown {
  teardown(fn: () => unknown): void;
}

export async function build(
  t: Teardown,
  config: ConfigInput = {},
  store: Store = openStore(':memory:'),
  now?: () => number,
): Promise<FastifyInstance> {
  const app = await buildApp({
    config: parseConfig({ data_dir: ':memory:', ...config }),
    store,
    processMetrics: false,
    ...(now ? { now } : {}),
  });
  t.teardown(async () => {
    await app.close();
    store.close();
  });
  await app.ready();
  return app;
}
