// Writes the OpenAPI document the app serves to openapi/openapi.json (committed; a test checks it is current).
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildApp } from '../src/app.ts';
import { parseConfig } from '../src/config.ts';
import { openSqliteStore } from '../src/store/sqlite.ts';

export const OPENAPI_FILE = join(dirname(fileURLToPath(import.meta.url)), '..', 'openapi', 'openapi.json');

export async function currentOpenApi(): Promise<string> {
  const store = openSqliteStore(':memory:');
  const app = await buildApp({ config: parseConfig({ data_dir: ':memory:' }), store, processMetrics: false });
  await app.ready();
  const doc = app.swagger();
  await app.close();
  await store.close();
  return JSON.stringify(doc, null, 2) + '\n';
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  mkdirSync(dirname(OPENAPI_FILE), { recursive: true });
  writeFileSync(OPENAPI_FILE, await currentOpenApi());
  console.log(`wrote ${OPENAPI_FILE}`);
}
