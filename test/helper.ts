// build(t): a Berth app on an in-memory store, closed when the test ends. Nothing in it reads the machine's state:
// the event-loop delay back-pressure sees is 0 unless a test supplies its own signal.
import type { FastifyInstance } from 'fastify';
import { buildApp, type BuildAppOptions } from '../src/app.ts';
import { parseConfig, type ConfigInput } from '../src/config.ts';
import { openSqliteStore } from '../src/store/sqlite.ts';
import type { AsyncStore } from '../src/store/store.ts';

interface Teardown {
  teardown(fn: () => unknown): void;
}

export type ExtraOptions = Pick<BuildAppOptions, 'eventLoopDelay' | 'logger'>;

export async function build(
  t: Teardown,
  config: ConfigInput = {},
  store: AsyncStore = openSqliteStore(':memory:'),
  now?: () => number,
  extra: ExtraOptions = {},
): Promise<FastifyInstance> {
  const app = await buildApp({
    config: parseConfig({ data_dir: ':memory:', ...config }),
    store,
    processMetrics: false,
    eventLoopDelay: () => 0,
    ...(now ? { now } : {}),
    ...extra,
  });
  t.teardown(async () => {
    await app.close();
    await store.close();
  });
  await app.ready();
  return app;
}
