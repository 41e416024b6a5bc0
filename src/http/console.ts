// The console at /console: its built static assets (see scripts/build-console.ts), the read routes it calls
// (/console/api/fleet, /console/api/decisions) and, for now, the hook that feeds the decision ring from what the
// three scheduling routes answer.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { extname, join, resolve } from 'node:path';
import { gzipSync } from 'node:zlib';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { fleetPage, FLEET_DEFAULT_LIMIT, FLEET_MAX_LIMIT } from './console-fleet.ts';
import { zodApp, type BerthContext } from './context.ts';
import { notFound } from '../domain-errors.ts';
import { ProblemError, problemResponse } from './problem.ts';
import { sendJson } from './serialize.ts';

// ---------------------------------------------------------------------------------------------------------------
// Static assets

interface Asset {
  body: Buffer;
  gzip: Buffer | null;
  type: string;
  etag: string;
  cacheControl: string;
}

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.json': 'application/json; charset=utf-8',
};

/** Asset names carry their content hash (console-3F2A9C1B.js): cache them for good. index.html revalidates. */
const IMMUTABLE = 'public, max-age=31536000, immutable';
const REVALIDATE = 'no-cache';

/** The page runs only its own script and style and talks only to its own origin. */
const CONTENT_SECURITY_POLICY = [
  "default-src 'none'", "script-src 'self'", "style-src 'self'", "img-src 'self' data:", "connect-src 'self'",
  "base-uri 'none'", "form-action 'none'", "frame-ancestors 'none'",
].join('; ');

export interface ConsoleAssets {
  dir: string;
  index: Asset;
  files: Map<string, Asset>;
}

function asset(body: Buffer, name: string, cacheControl: string): Asset {
  const type = CONTENT_TYPES[extname(name)] ?? 'application/octet-stream';
  const compressible = !type.startsWith('image/png');
  const gzip = compressible ? gzipSync(body, { level: 9 }) : null;
  const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`;
  return { body, gzip: gzip && gzip.length < body.length ? gzip : null, type, etag, cacheControl };
}

/** Loads the built console (index.html and assets/*) into memory, or null when it was not built. */
function loadConsoleAssets(dir: string): ConsoleAssets | null {
  const indexFile = join(dir, 'index.html');
  if (!existsSync(indexFile)) return null;
  const files = new Map<string, Asset>();
  const assetsDir = join(dir, 'assets');
  if (existsSync(assetsDir)) {
    for (const name of readdirSync(assetsDir)) files.set(name, asset(readFileSync(join(assetsDir, name)), name, IMMUTABLE));
  }
  return { dir, index: asset(readFileSync(indexFile), 'index.html', REVALIDATE), files };
}

/** Where `npm run build` puts the console: dist/console beside dist/http, also when running from src/. */
function defaultConsoleDir(): string {
  const here = import.meta.dirname;
  const built = resolve(here, '..', 'console');
  return existsSync(join(built, 'index.html')) ? built : resolve(here, '..', '..', 'dist', 'console');
}

function sendAsset(request: FastifyRequest, reply: FastifyReply, a: Asset): FastifyReply {
  reply.header('cache-control', a.cacheControl).header('etag', a.etag).header('vary', 'accept-encoding')
    .header('x-content-type-options', 'nosniff');
  if (a.type.startsWith('text/html')) {
    reply.header('content-security-policy', CONTENT_SECURITY_POLICY).header('referrer-policy', 'no-referrer');
  }
  const match = request.headers['if-none-match'];
  if (match !== undefined && match.split(',').some((t) => t.trim() === a.etag || t.trim() === `W/${a.etag}`)) {
    return reply.code(304).send();
  }
  reply.type(a.type);
  const accepts = request.headers['accept-encoding'] ?? '';
  if (a.gzip && /\bgzip\b/.test(accepts)) return reply.header('content-encoding', 'gzip').send(a.gzip);
  return reply.send(a.body);
}

// ---------------------------------------------------------------------------------------------------------------
// Schemas

const DialectSchema = z.enum(['volumes', 'placement', 'replicas']);

const FleetQuerySchema = z.object({
  dialect: DialectSchema.describe('volumes: pools; replicas: node disks; placement: resource provider trees').meta({ example: 'volumes' }),
  name: z.string().max(255).optional().describe('Case-insensitive substring of a name, uuid, backend, node or zone'),
  ids: z.string().max(40_000).optional().transform((v) => (v === undefined ? undefined : v.split(',').filter((x) => x !== '')))
    .describe('Comma-separated exact ids (pool names, node/disk, provider uuids): only the items holding one of them'),
  order: z.enum(['name', 'fullest']).optional().describe('name (default) or fullest first (largest used share of any bar)'),
  offset: z.coerce.number().int().min(0).optional().describe('Items to skip (default 0)'),
  limit: z.coerce.number().int().min(1).max(FLEET_MAX_LIMIT).optional().describe(`Items per page (default ${FLEET_DEFAULT_LIMIT}, at most ${FLEET_MAX_LIMIT})`),
}).strict();

const BarSchema = z.object({
  label: z.string().describe('GiB (pools), scheduled (disks) or the resource class'),
  unit: z.string().describe('GiB, bytes, MB, GB, or "" for a count'),
  used: z.number(),
  free: z.number().describe('Physical room left for scheduling'),
  headroom: z.number().describe('Room that exists only through over-subscription (ratio, allocation_ratio, over-provisioning %)'),
  over: z.boolean().describe('Used beyond what scheduling allows'),
  unbounded: z.string().optional().describe("The reporter gave no number ('infinite', 'unknown')"),
}).meta({ id: 'ConsoleCapacityBar' });

const FleetRowSchema = z.object({
  id: z.string(),
  name: z.string(),
  group: z.string().describe('Backend host, node, or the tree\'s root provider'),
  depth: z.number().int().describe('Nesting level in a provider tree (0 otherwise)'),
  state: z.string().describe('"ok", or why the target is not a candidate now'),
  tags: z.array(z.string()),
  bars: z.array(BarSchema),
  figures: z.record(z.string(), z.union([z.number(), z.string(), z.boolean(), z.null()])),
}).meta({ id: 'ConsoleFleetRow' });

/** The README's first decision: node1@lvm's pools after a 100 GiB volume went to `big` (examples are tested). */
const FLEET_EXAMPLE = {
  dialect: 'volumes', items: 'pools', total: 1, offset: 0, limit: 100,
  totals: { GiB: { unit: 'GiB', used: 624, free: 400, headroom: 1402.24 } },
  rows: [{
    id: 'node1@lvm#big', name: 'node1@lvm#big', group: 'node1@lvm', depth: 0, state: 'ok', tags: ['nova', 'thin'],
    bars: [{ label: 'GiB', unit: 'GiB', used: 624, free: 400, headroom: 1402.24, over: false }],
    figures: {
      total_capacity_gb: 1024, free_capacity_gb: 400, provisioned_capacity_gb: 1024, allocated_capacity_gb: 100,
      reserved_percentage: 0, max_over_subscription_ratio: 2.76, virtual_free_capacity_gb: 1802.24,
    },
  }],
};

const FleetPageSchema = z.object({
  dialect: DialectSchema,
  items: z.string().describe('What offset, limit and total count: pools, disks or provider trees'),
  total: z.number().int().describe('Items matching the filter'),
  offset: z.number().int(),
  limit: z.number().int(),
  totals: z.record(z.string(), z.object({ unit: z.string(), used: z.number(), free: z.number(), headroom: z.number() }))
    .describe('Sums over every matching item, per bar label'),
  rows: z.array(FleetRowSchema),
}).meta({
  id: 'ConsoleFleetPage',
  description: 'One page of a dialect\'s fleet as capacity bars (example: GET /console/api/fleet?dialect=volumes&name=big)',
  examples: [FLEET_EXAMPLE],
});

const DecisionsQuerySchema = z.object({
  dialect: DialectSchema.optional(),
  after: z.coerce.number().int().min(0).optional().describe('Only decisions with a larger id (poll for new ones)'),
  limit: z.coerce.number().int().min(1).max(1000).optional(),
}).strict();

const DecisionSummarySchema = z.object({
  id: z.number().int(),
  at: z.string(),
  dialect: DialectSchema,
  outcome: z.string(),
  status: z.number().int(),
  dry_run: z.boolean(),
  request: z.record(z.string(), z.unknown()),
  targets: z.array(z.string()),
  duration_ms: z.number(),
  counts: z.record(z.string(), z.number()).optional(),
  detail: z.string().optional(),
  request_id: z.string().optional(),
  explained: z.boolean().describe('The decision was traced (GET /console/api/decisions/{id} has the trace)'),
});

const DECISION_EXAMPLE = {
  id: 1, at: '2026-12-01T10:00:00.000Z', dialect: 'volumes', outcome: 'placed', status: 200, dry_run: false,
  request: { size: 100, id: 'vol-1' }, targets: ['node1@lvm#big'], duration_ms: 2.17, request_id: 'req-2', explained: true,
} as const;

const DecisionListSchema = z.object({
  capacity: z.number().int().describe('How many decisions the ring keeps'),
  decisions: z.array(DecisionSummarySchema).describe('Newest first'),
}).meta({ id: 'ConsoleDecisionList', examples: [{ capacity: 200, decisions: [DECISION_EXAMPLE] }] });

const DecisionSchema = DecisionSummarySchema.extend({
  explain: z.unknown().optional().describe('The explain trace as the scheduling route answered it'),
  explain_omitted: z.number().int().optional().describe('List items left out of the stored trace to keep it small'),
}).meta({
  id: 'ConsoleDecision',
  examples: [{
    ...DECISION_EXAMPLE,
    explain: {
      weighed: [{ pool: 'node1@lvm#big', weight: 0, weighers: { CapacityWeigher: { raw: 1902.24, normalized: 0 } } }],
      filters: [
        { name: 'AvailabilityZoneFilter', in: 2, out: 2, rejected: [] },
        { name: 'CapacityFilter', in: 2, out: 1, rejected: [{ pool: 'node1@lvm#small', reason: 'Insufficient free space for volume creation (requested / avail): 100/50 GiB.' }] },
        { name: 'CapabilitiesFilter', in: 1, out: 1, rejected: [] },
      ],
    },
  }],
});

// ---------------------------------------------------------------------------------------------------------------
// Registration

export interface ConsoleOptions {
  /** The built console (default: dist/console). */
  assetsDir?: string | undefined;
}

/** The console's page, assets and read routes. */
export function registerConsole(app: FastifyInstance, ctx: BerthContext, options: ConsoleOptions = {}): void {
  const dir = options.assetsDir ?? defaultConsoleDir();
  const assets = loadConsoleAssets(dir);
  if (!assets) app.log.warn({ dir }, 'console assets not built (npm run build): /console answers 503');

  const notBuilt = () => new ProblemError(503, 'console-not-built', 'Service Unavailable',
    'The console\'s assets were not built: run npm run build (it writes dist/console).');
  const r = zodApp(app);
  const TAGS = ['console'];

  app.get('/console', { schema: { hide: true } }, async (_request, reply) => reply.redirect('console/', 302));

  r.get('/console/', {
    schema: {
      tags: TAGS,
      summary: 'The console: the fleet per dialect, the latest decisions with their traces, what-if forms',
      produces: ['text/html'],
      response: { 200: { description: 'The console page (HTML)', content: { 'text/html': { schema: z.string() } } }, 503: problemResponse('The console was not built') },
    },
  }, async (request, reply) => {
    if (!assets) throw notBuilt();
    return sendAsset(request, reply, assets.index);
  });

  r.get('/console/assets/:file', {
    schema: { hide: true, params: z.object({ file: z.string().max(255) }) },
  }, async (request, reply) => {
    if (!assets) throw notBuilt();
    const file = assets.files.get(request.params.file);
    if (!file) throw notFound(`No console asset ${request.params.file}`);
    return sendAsset(request, reply, file);
  });

  r.get('/console/api/fleet', {
    schema: {
      tags: TAGS,
      summary: 'The fleet of a dialect as capacity bars, filtered and paginated (pools, node disks, provider trees)',
      description: 'Each bar splits into used, free (physical room) and over-subscribed headroom. Pages count pools, ' +
        'disks or whole provider trees (a tree\'s rows are its providers, depth-first). totals sum every matching item.',
      querystring: FleetQuerySchema,
      response: { 200: FleetPageSchema, 400: problemResponse('Invalid query') },
    },
  }, async (request, reply) => sendJson(reply, fleetPage(ctx, request.query)));

  r.get('/console/api/decisions', {
    schema: {
      tags: TAGS,
      summary: 'The latest scheduling decisions, newest first (an in-memory ring; traces by id)',
      querystring: DecisionsQuerySchema,
      response: { 200: DecisionListSchema, 400: problemResponse('Invalid query') },
    },
  }, async (request, reply) => {
    ctx.deferred.flush();
    return sendJson(reply, {
      capacity: ctx.decisions.capacity,
      decisions: ctx.decisions.list(request.query).map(({ explain, explain_omitted: _omitted, ...rest }) => ({ ...rest, explained: explain !== undefined })),
    });
  });

  r.get('/console/api/decisions/:id', {
    schema: {
      tags: TAGS,
      summary: 'One recent decision with its explain trace',
      params: z.object({ id: z.coerce.number().int().min(1).meta({ example: 1 }) }),
      response: { 200: DecisionSchema, 400: problemResponse('Invalid id'), 404: problemResponse('Not in the ring (never recorded, or pushed out by newer ones)') },
    },
  }, async (request, reply) => {
    ctx.deferred.flush();
    const entry = ctx.decisions.get(request.params.id);
    if (!entry) throw notFound(`Decision ${request.params.id} is not in the ring (it keeps the latest ${ctx.decisions.capacity})`);
    return sendJson(reply, { ...entry, explained: entry.explain !== undefined });
  });
}
