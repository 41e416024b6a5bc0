// The container's HEALTHCHECK: asks the running Berth's /readyz on the port its configuration says (the same
// environment and BERTH_CONFIG file main.ts reads). Exit 0 when ready, 1 otherwise; node:*-slim has no curl.
import { loadConfig } from './config.ts';

const config = loadConfig(process.env);
const wildcard = ['0.0.0.0', '::', ''].includes(config.host);
const host = wildcard ? '127.0.0.1' : config.host.includes(':') ? `[${config.host}]` : config.host;
try {
  const res = await fetch(`http://${host}:${config.port}/readyz`);
  process.exit(res.ok ? 0 : 1);
} catch {
  process.exit(1);
}
