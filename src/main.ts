// The Berth process: configuration from the environment, the start-up access rule, the embedded store, listen
// (HTTP or HTTPS), SIGHUP reloads (tokens, JWT key file, TLS certificate), graceful shutdown.
import type { Server } from 'node:https';
import { buildApp } from './app.ts';
import { ConfigError, loadConfig, type Config } from './config.ts';
import { AuthFileError, listenRule } from './http/auth.ts';
import { readTlsPair, reloadTls, TlsFileError, type TlsPair } from './http/tls.ts';
import { redactDatabaseUrl } from './store/database-url.ts';
import { DataDirLockedError, openStore } from './store/sqlite.ts';
import type { Store } from './store/store.ts';

/** Start-up problems are one line on stderr and exit status 2. */
function stop(message: string): never {
  process.stderr.write(`berth: ${message}\n`);
  process.exit(2);
}

let config: Config;
let tls: TlsPair | undefined;
try {
  config = loadConfig(process.env);
  tls = readTlsPair(config);
} catch (err) {
  if (err instanceof ConfigError) stop(`configuration error: ${err.message}`);
  if (err instanceof TlsFileError) stop(err.message);
  throw err;
}
const access = listenRule(config);
if (access.error) stop(access.error);

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
let app: Awaited<ReturnType<typeof buildApp>>;
try {
  app = await buildApp({ config, store, logger, ...(tls ? { https: tls } : {}) });
} catch (err) {
  store.close();
  if (err instanceof AuthFileError) stop(err.message);
  throw err;
}
if (access.warning) app.log.warn(access.warning);

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

// SIGHUP: re-read what may change under a running Berth. A bad file is logged and the previous one stays.
process.on('SIGHUP', () => {
  app.berthAuth.reload('SIGHUP');
  if (!tls) return;
  try {
    reloadTls(app.server as unknown as Server, config);
    app.log.info({ tls_cert_file: config.tls_cert_file }, 'TLS certificate reloaded');
  } catch (err) {
    app.log.error({ error: (err as Error).message }, 'TLS certificate not reloaded; the previous one stays in use');
  }
});

try {
  await app.listen({ host: config.host, port: config.port });
  app.log.info({ store: store.location, tls: Boolean(tls), auth: app.berthAuth.describe() }, 'berth ready');
} catch (err) {
  app.log.error({ err }, 'cannot listen');
  store.close();
  process.exit(1);
}
