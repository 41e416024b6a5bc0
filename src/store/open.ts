// Which store the configuration asks for: database_url unset → the embedded SQLite store in data_dir;
// postgres://… → PostgreSQL, migrated and followed before it is handed out.
import type { Config } from '../config.ts';
import { openPostgresStore, type StoreLog } from './postgres.ts';
import { openSqliteStore } from './sqlite.ts';
import type { AsyncStore } from './store.ts';

type StoreConfig = Pick<Config,
  'data_dir' | 'sqlite_synchronous' | 'database_url' | 'database_pool_size' | 'database_statement_timeout_ms' |
  'database_connect_timeout_ms' | 'database_feed_retention'>;

export async function openConfiguredStore(config: StoreConfig, options: { log?: StoreLog } = {}): Promise<AsyncStore> {
  if (config.database_url === undefined) {
    return openSqliteStore(config.data_dir, { synchronous: config.sqlite_synchronous });
  }
  return openPostgresStore({
    url: config.database_url,
    poolSize: config.database_pool_size,
    statementTimeoutMs: config.database_statement_timeout_ms,
    connectTimeoutMs: config.database_connect_timeout_ms,
    feedRetention: config.database_feed_retention,
    ...(options.log ? { log: options.log } : {}),
  });
}
