// The Berth process: configuration from the environment, the start-up access rule, the store (embedded SQLite, or
// PostgreSQL shared with other instances: waited for while it is unreachable), listen
// (HTTP or HTTPS), SIGHUP reloads (tokens, JWT key file, TLS certificate), graceful shutdown.
import type { Server } from 'node:https';
import { buildApp } from './app.ts';
import { ConfigError, loadConfig, type Config } from './config.ts';
import { AuthFileError, listenRule } from './http/auth.ts';
import { readTlsPair, reloadTls, TlsFileError, type TlsPair } from './http/tls.ts';
import { openConfiguredStore } from './store/open.ts';
import type { StoreLog } from './store/postgres.ts';
import { DataDirLockedError } from './store/sqlite.ts';
import { StoreUnavailableError, type AsyncStore } from './store/store.ts';

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

// The store logs through the app's logger once it exists; what it says before (a migration) waits for it.
const early: Array<['info' | 'warn', object, string]> = [];
let appLog: StoreLog | undefined = undefined;
const storeLog: StoreLog = {
  info: (obj, msg) => (appLog ? appLog.info(obj, msg) : early.push(['info', obj, msg])),
  warn: (obj, msg) => (appLog ? appLog.warn(obj, msg) : early.push(['warn', obj, msg])),
};
let store: AsyncStore;
for (let attempt = 1; ; attempt++) {
  try {
    store = await openConfiguredStore(config, { log: storeLog });
    break;
  } catch (err) {
    if (err instanceof DataDirLockedError) {
      process.stderr.write(`berth: ${err.message}\n`);
      process.exit(1);
    }
    // A database that is not up yet (started together with Berth, restarting): wait for it, saying so.
    if (!(err instanceof StoreUnavailableError)) throw err;
    const delay = Math.min(5000, 250 * 2 ** Math.min(attempt, 5));
    process.stderr.write(`berth: ${err.message}; retrying in ${delay} ms\n`);
    await new Promise((r) => setTimeout(r, delay));
  }
}
const logger = process.env.BERTH_PRETTY_LOGS
  ? { level: config.log_level, transport: { target: 'pino-pretty' } }
  : { level: config.log_level };
let app: Awaited<ReturnType<typeof buildApp>>;
try {
  app = await buildApp({ config, store, logger, ...(tls ? { https: tls } : {}) });
} catch (err) {
  await store.close();
  if (err instanceof AuthFileError) stop(err.message);
  throw err;
}
if (access.warning) app.log.warn(access.warning);
appLog = app.log;
for (const [level, obj, msg] of early.splice(0)) app.log[level](obj, msg);

let closing = false;
async function shutdown(signal: string): Promise<void> {
  if (closing) return;
  closing = true;
  app.log.info({ signal }, 'shutting down: finishing in-flight requests');
  // A stuck request must not keep the process alive forever.
  const force = setTimeout(() => {
    app.log.error('shutdown took longer than 10 s; exiting');
    process.exit(1);
  }, 10_000);
  force.unref();
  try {
    await app.close();
    await store.close();
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
  await store.close();
  process.exit(1);
}
