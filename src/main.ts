// The Berth process: configuration from the environment, the embedded store, listen, graceful shutdown.
import { buildApp } from './app.ts';
import { ConfigError, loadConfig, type Config } from './config.ts';
import { redactDatabaseUrl } from './store/database-url.ts';
import { DataDirLockedError, openStore } from './store/sqlite.ts';
import type { Store } from './store/store.ts';

let config: Config;
try {
  config = loadConfig(process.env);
} catch (err) {
  if (err instanceof ConfigError) {
    process.stderr.write(`berth: configuration error: ${err.message}\n`);
    process.exit(2);
  }
  throw err;
}

// The PostgreSQL store exists (src/store/postgres.ts, openConfiguredStore) but the services still use the
// synchronous embedded store until they move onto the asynchronous interface (phase 2 of the PostgreSQL work).
if (config.database_url !== undefined) {
  process.stderr.write(`berth: database_url (${redactDatabaseUrl(config.database_url)}) is not supported by this ` +
    'build yet: the services run on the embedded store only; unset BERTH_DATABASE_URL\n');
  process.exit(2);
}
let store: Store;
try {
  store = openStore(config.data_dir, { synchronous: config.sqlite_synchronous });
} catch (err) {
  if (err instanceof DataDirLockedError) {
    process.stderr.write(`berth: ${err.message}\n`);
    process.exit(1);
  }
  throw err;
}
const logger = process.env.BERTH_PRETTY_LOGS
  ? { level: config.log_level, transport: { target: 'pino-pretty' } }
  : { level: config.log_level };
const app = await buildApp({ config, store, logger });

let closing = false;
async function shutdown(signal: string): Promise<void> {
  if (closing) return;
  closing = true;
  app.log.info({ signal }, 'shutting down: finishing in-flight requests');
  // A stuck request must not keep the process alive forever.
  const force = setTimeout(() => {
    app.log.error('shutdown took longer than 10 s; exiting');
    store.close();
    process.exit(1);
  }, 10_000);
  force.unref();
  try {
    await app.close();
    store.close();
    app.log.info('stopped');
    process.exit(0);
  } catch (err) {
    app.log.error({ err }, 'error during shutdown');
    process.exit(1);
  }
}
process.once('SIGTERM', () => void shutdown('SIGTERM'));
process.once('SIGINT', () => void shutdown('SIGINT'));

try {
  await app.listen({ host: config.host, port: config.port });
  app.log.info({ store: store.location }, 'berth ready');
} catch (err) {
  app.log.error({ err }, 'cannot listen');
  store.close();
  process.exit(1);
}
