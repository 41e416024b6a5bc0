// Berth's configuration: one zod schema, defaults are the real systems' defaults.
// Sources, lowest precedence first: defaults, the JSON file named by BERTH_CONFIG, BERTH_<OPTION> variables.
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { databaseUrlProblem } from './store/database-url.ts';
import { VOLUMES_FILTER_NAMES } from './volumes/filters.ts';
import { VOLUMES_DEFAULT_WEIGHERS, VOLUMES_WEIGHER_NAMES } from './volumes/weighers.ts';

/** Lists may be given as JSON arrays (config file) or comma separated strings (environment). */
function list<T extends z.ZodType>(item: T) {
  return z.preprocess(
    (v) => (typeof v === 'string' ? v.split(',').map((s) => s.trim()).filter((s) => s !== '') : v),
    z.array(item),
  );
}

/** Booleans from the environment arrive as strings. */
const bool = z.preprocess((v) => {
  if (typeof v !== 'string') return v;
  const s = v.trim().toLowerCase();
  if (['true', '1', 'yes', 'on'].includes(s)) return true;
  if (['false', '0', 'no', 'off'].includes(s)) return false;
  return v;
}, z.boolean());

const finite = z.coerce.number().refine(Number.isFinite, 'must be a finite number');

/** An optional path or URL; an empty environment variable means "not set". */
const optionalString = z.preprocess((v) => (v === '' ? undefined : v), z.string().min(1).optional());

export const ConfigSchema = z
  .object({
    /** Loopback by default: without tokens Berth must not be reachable from other machines. */
    host: z.string().min(1).default('127.0.0.1'),
    port: z.coerce.number().int().min(0).max(65535).default(8080),
    log_level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    data_dir: z.string().min(1).default('./data'),
    /** SQLite synchronous mode: FULL survives power loss, NORMAL (WAL) survives a process kill. */
    sqlite_synchronous: z.enum(['full', 'normal']).default('full'),
    /**
     * Unset: the embedded SQLite store in data_dir. postgres://USER[:PASSWORD]@HOST[:PORT]/DB[?…]: PostgreSQL 15+,
     * shared by several instances. An empty value counts as unset. Never logged with its password.
     */
    database_url: z.preprocess(
      (v) => (typeof v === 'string' && v.trim() === '' ? undefined : v),
      z.string().superRefine((url, ctx) => {
        const problem = databaseUrlProblem(url);
        if (problem) ctx.addIssue({ code: 'custom', message: problem });
      }).optional(),
    ),
    /** PostgreSQL: pooled connections per instance (one more is used to LISTEN for changes). */
    database_pool_size: z.coerce.number().int().min(1).max(1000).default(10),
    /** PostgreSQL: a statement running longer is cancelled and the operation answers 503. */
    database_statement_timeout_ms: z.coerce.number().int().min(100).default(5000),
    /** PostgreSQL: connecting, or waiting for a free pooled connection, gives up after this. */
    database_connect_timeout_ms: z.coerce.number().int().min(100).default(5000),
    /** PostgreSQL: changes kept in the feed; an instance further behind than this reloads everything. */
    database_feed_retention: z.coerce.number().int().min(1000).default(100_000),
    /** Largest request body accepted, in bytes (Fastify's bodyLimit). */
    body_limit: z.coerce.number().int().min(1024).default(1048576),
    /** Request headers must arrive within this many ms (408 otherwise); a connection silent twice as long is closed; 0 disables. */
    request_timeout_ms: z.coerce.number().int().min(0).default(30000),
    /** Above this mean event-loop delay Berth answers 503 with Retry-After (back-pressure); 0 disables. */
    max_event_loop_delay_ms: z.coerce.number().int().min(0).default(1000),

    /** Every filter the volumes registry knows, in Cinder's default order. */
    scheduler_default_filters: list(z.enum(VOLUMES_FILTER_NAMES)).default([...VOLUMES_FILTER_NAMES]),
    scheduler_default_weighers: list(z.enum(VOLUMES_WEIGHER_NAMES)).default([...VOLUMES_DEFAULT_WEIGHERS]),
    capacity_weight_multiplier: finite.default(1.0),
    allocated_capacity_weight_multiplier: finite.default(-1.0),
    max_over_subscription_ratio: z
      .union([
        z.literal('auto'),
        z.coerce.number().refine((n) => Number.isFinite(n) && n >= 1, 'must be a number >= 1 or "auto"'),
      ])
      .default(20.0),
    over_provisioning_calculation: z.enum(['cinder', 'standard']).default('cinder'),
    storage_availability_zone: z.string().min(1).default('nova'),

    /**
     * Seconds after which a backend's or node's last report is no longer trusted (Cinder's service_down_time,
     * Longhorn's node heartbeat); 0 trusts reports forever.
     */
    stats_stale_after_seconds: z.coerce.number().min(0).refine(Number.isFinite, 'must be a finite number').default(0),

    enable_isolated_aggregate_filtering: bool.default(false),
    randomize_allocation_candidates: bool.default(false),

    /** JSON file {"tokens": [{"name", "sha256", "roles"}]}: digests of the accepted tokens, re-read on change. */
    auth_tokens_file: optionalString,
    /** JWT bearer tokens: the issuer's key set, by URL or from a file (one of the two). */
    auth_jwks_url: z.preprocess((v) => (v === '' ? undefined : v), z.url({ protocol: /^https?$/ }).optional()),
    auth_jwks_file: optionalString,
    auth_jwt_issuer: optionalString,
    auth_jwt_audience: optionalString,
    /** The claim holding Berth roles (an array, or a space separated string); a dotted path reaches nested claims. */
    auth_jwt_roles_claim: z.string().min(1).default('berth_roles'),
    /** Permits running without tokens on a non-loopback address (a warning at every start). */
    allow_unauthenticated: bool.default(false),
    /** More failed authentications than this from one address within a minute answer 429 until the minute ends. */
    auth_failures_per_minute: z.coerce.number().int().min(1).default(30),
    /** /metrics then needs the reader role. */
    metrics_require_auth: bool.default(false),
    /** HTTPS: certificate chain and private key (PEM), re-read on SIGHUP. */
    tls_cert_file: optionalString,
    tls_key_file: optionalString,
  })
  .strict();

export type Config = z.output<typeof ConfigSchema>;
export type ConfigInput = z.input<typeof ConfigSchema>;
const CONFIG_OPTIONS = Object.keys(ConfigSchema.shape) as Array<keyof Config>;

export class ConfigError extends Error {}

/** Parses a partial configuration, filling defaults. Throws ConfigError with one line per bad option. */
export function parseConfig(input: Record<string, unknown> = {}): Config {
  const result = ConfigSchema.safeParse(input);
  if (result.success) {
    checkCombinations(result.data);
    return result.data;
  }
  const lines = result.error.issues.map((issue) => {
    if (issue.code === 'unrecognized_keys') return `unknown option(s): ${issue.keys.join(', ')}`;
    const option = String(issue.path[0] ?? '');
    const allowed = 'values' in issue && Array.isArray(issue.values) ? ` (allowed: ${issue.values.join(', ')})` : '';
    return `invalid option ${option}: ${issue.message}${allowed}`;
  });
  throw new ConfigError(lines.join('; '));
}

/** Options that only make sense together. */
function checkCombinations(c: Config): void {
  const problems: string[] = [];
  if (c.auth_jwks_url && c.auth_jwks_file) problems.push('set auth_jwks_url or auth_jwks_file, not both');
  if ((c.auth_jwks_url || c.auth_jwks_file) && (!c.auth_jwt_issuer || !c.auth_jwt_audience)) {
    problems.push('JWT verification (auth_jwks_url or auth_jwks_file) needs auth_jwt_issuer and auth_jwt_audience');
  }
  if (!c.auth_jwks_url && !c.auth_jwks_file && (c.auth_jwt_issuer || c.auth_jwt_audience)) {
    problems.push('auth_jwt_issuer and auth_jwt_audience need auth_jwks_url or auth_jwks_file');
  }
  if (Boolean(c.tls_cert_file) !== Boolean(c.tls_key_file)) problems.push('set both tls_cert_file and tls_key_file, or neither');
  if (problems.length > 0) throw new ConfigError(problems.join('; '));
}

/** Reads BERTH_CONFIG (a JSON file) and BERTH_<OPTION> variables; the environment wins. */
export function loadConfig(env: NodeJS.ProcessEnv): Config {
  let fromFile: Record<string, unknown> = {};
  const file = env.BERTH_CONFIG;
  if (file) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (err) {
      throw new ConfigError(`cannot read BERTH_CONFIG file ${file}: ${(err as Error).message}`);
    }
    try {
      fromFile = JSON.parse(text) as Record<string, unknown>;
    } catch (err) {
      throw new ConfigError(`BERTH_CONFIG file ${file} is not valid JSON: ${(err as Error).message}`);
    }
    if (typeof fromFile !== 'object' || fromFile === null || Array.isArray(fromFile)) {
      throw new ConfigError(`BERTH_CONFIG file ${file} must hold a JSON object`);
    }
  }
  const fromEnv: Record<string, unknown> = {};
  for (const option of CONFIG_OPTIONS) {
    const value = env[`BERTH_${option.toUpperCase()}`];
    if (value !== undefined) fromEnv[option] = value;
  }
  return parseConfig({ ...fromFile, ...fromEnv });
}
