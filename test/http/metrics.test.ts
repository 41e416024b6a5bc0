// /metrics as Prometheus reads it: every family parsed from a live app's scrape after a workload in all three dialects,
// checked against Prometheus's naming conventions and against the catalogue README.md documents.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { instrumentStore } from '../../src/http/store-metrics.ts';
import { BERTH_VERSION, Metrics } from '../../src/http/metrics.ts';
import { openSqliteStore, SqliteStore } from '../../src/store/sqlite.ts';
import {
  StoreConflictError, StoreUnavailableError, type AsyncStore, type StoreExpectation, type StoreWrite,
} from '../../src/store/store.ts';
import { GiB, seedFleet } from '../console/fleet-fixture.ts';
import { build } from '../helper.ts';
import { labelNames, parseExposition, type Family } from './prometheus-text.ts';

const root = join(import.meta.dirname, '..', '..');

async function scrape(app: Awaited<ReturnType<typeof build>>): Promise<Map<string, Family>> {
  const res = await app.inject('/metrics');
  t.equal(res.statusCode, 200);
  return parseExposition(res.body);
}

function family(families: Map<string, Family>, name: string): Family {
  const f = families.get(name);
  if (!f) throw new Error(`no family ${name}`);
  return f;
}

function value(families: Map<string, Family>, name: string, labels: Record<string, string> = {}): number | undefined {
  const base = name.replace(/_(bucket|sum|count)$/, '');
  const f = families.get(name) ?? families.get(base);
  return f?.samples.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v) &&
    Object.keys(s.labels).length === Object.keys(labels).length)?.value;
}

/** A small workload in every dialect: reports, placed and refused decisions, a claim and its release. */
async function workload(app: Awaited<ReturnType<typeof build>>): Promise<void> {
  await seedFleet(app);
  const post = (url: string, payload: object) => app.inject({ method: 'POST', url, payload });
  t.equal((await post('/volumes/schedule', { id: 'v1', size: 10 })).statusCode, 200);
  t.equal((await post('/volumes/schedule', { size: 100_000 })).statusCode, 409);
  t.equal((await app.inject({ method: 'DELETE', url: '/volumes/v1' })).statusCode, 204);
  t.equal((await post('/replicas/schedule', { volume: { name: 'pvc-1', size: GiB, numberOfReplicas: 2 } })).statusCode, 200);
  const candidates = await app.inject({ url: '/allocation_candidates?resources=VCPU:1', headers: { 'openstack-api-version': 'placement 1.39' } });
  t.equal(candidates.statusCode, 200);
}

/** Gauges without a unit in the name, and why they need none. */
const DIMENSIONLESS: Record<string, string> = {
  berth_ready: 'a boolean (1 ready, 0 not)',
  berth_placement_resource_providers: 'a count of providers',
  berth_store_feed_position: 'a sequence number',
  berth_store_feed_lag: 'a count of changes',
};
const UNIT_SUFFIX = /_(bytes|seconds|ratio|units|info)$/;

t.test('every family follows Prometheus naming: base units, a unit on every gauge, _total counters', async (t) => {
  const app = await build(t);
  await workload(app);
  const families = [...(await scrape(app)).values()].filter((f) => f.name.startsWith('berth_'));
  t.ok(families.length > 30, `${families.length} berth_ families`);
  for (const f of families) {
    t.ok(f.help.length > 10, `${f.name} has a help text`);
    t.notMatch(f.name, /_(gib|gb|mb|kb|ms|milliseconds|minutes|percent)(_|$)/, `${f.name}: base units only`);
    if (f.type === 'counter') t.match(f.name, /_total$/, `${f.name}: a counter ends in _total`);
    if (f.type === 'histogram') t.match(f.name, /_seconds$/, `${f.name}: histograms here measure seconds`);
    if (f.type === 'gauge') {
      t.ok(UNIT_SUFFIX.test(f.name) || f.name in DIMENSIONLESS, `${f.name}: a gauge names its unit`);
    }
    if (f.name.endsWith('_bytes')) {
      for (const s of f.samples) t.ok(Number.isInteger(s.value) || !Number.isFinite(s.value), `${s.name} ${s.value}: whole bytes`);
    }
  }
});

t.test('README documents every metric the app exports, and no other', async (t) => {
  const app = await build(t);
  await workload(app);
  const exported = [...(await scrape(app)).values()].filter((f) => f.name.startsWith('berth_'));
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('### Metrics'), readme.indexOf('\n## ', readme.indexOf('### Metrics')));
  const rows = new Map<string, string>();
  for (const m of section.matchAll(/^\| `(berth_[a-z_]+)(?:\{([a-z_,]*)\})?` \|/gm)) rows.set(m[1]!, m[2] ?? '');
  t.ok(rows.size > 30, `${rows.size} rows in README's Metrics table`);
  for (const f of exported) {
    t.ok(rows.has(f.name), `README lists ${f.name}`);
    if (rows.has(f.name) && f.samples.length > 0) {
      t.same(rows.get(f.name)!.split(',').filter(Boolean).sort(), labelNames(f), `README: ${f.name}'s labels`);
    }
  }
  for (const name of rows.keys()) t.ok(exported.some((f) => f.name === name), `${name} in README is exported`);
});

t.test('the HTTP histogram: route and method but no status; API routes only, the counter keeps them all', async (t) => {
  const app = await build(t);
  for (const url of ['/healthz', '/docs/', '/docs/static/index.html', '/openapi.json', '/console/', '/console/assets/app.js', '/no/such/path']) {
    await app.inject(url);
  }
  await app.inject({ method: 'POST', url: '/volumes/schedule', payload: { size: -1 } });
  const families = await scrape(app);
  const histogram = family(families, 'berth_http_request_duration_seconds');
  t.equal(histogram.type, 'histogram');
  t.same(labelNames(histogram), ['method', 'route'], 'no status label');
  const routes = new Set(histogram.samples.map((s) => s.labels.route));
  t.same([...routes].sort(), ['/healthz', '/volumes/schedule', 'unmatched'], 'neither Swagger UI, the OpenAPI document nor the console\'s page and assets');
  const counter = family(families, 'berth_http_requests_total');
  t.same(labelNames(counter), ['method', 'route', 'status']);
  t.equal(value(families, 'berth_http_requests_total', { route: '/volumes/schedule', method: 'POST', status: '400' }), 1);
  for (const route of ['/docs', '/openapi.json', '/console/', '/console/assets/:file']) {
    t.ok(counter.samples.some((s) => s.labels.route === route), `the counter has ${route}`);
  }
  const buckets = histogram.samples.filter((s) => s.name.endsWith('_bucket') && s.labels.route === '/healthz').map((s) => s.labels.le);
  t.equal(buckets.at(-2), '10', 'buckets up to 10 s');
});

t.test('decision-time buckets reach 10 s, per domain', async (t) => {
  const app = await build(t);
  await workload(app);
  const families = await scrape(app);
  const decisions = family(families, 'berth_decision_duration_seconds');
  t.same(labelNames(decisions), ['domain']);
  for (const domain of ['volumes', 'replicas', 'placement']) {
    const les = decisions.samples.filter((s) => s.name.endsWith('_bucket') && s.labels.domain === domain).map((s) => s.labels.le);
    t.same(les.slice(-3), ['5', '10', '+Inf'], `${domain}: up to 10 s`);
    t.ok((value(families, 'berth_decision_duration_seconds_count', { domain }) ?? 0) >= 1, `${domain} decided`);
  }
  t.equal(value(families, 'berth_decisions_total', { domain: 'volumes', outcome: 'no_valid_backend' }), 1);
});

t.test('capacity gauges in base units: GiB and MiB reports become bytes, other resource classes keep their unit', async (t) => {
  const app = await build(t);
  await workload(app);
  const families = await scrape(app);
  const pool = { pool: 'node1@lvm#big', backend: 'node1@lvm' };
  t.equal(value(families, 'berth_pool_total_capacity_bytes', pool), 1024 * GiB);
  t.equal(value(families, 'berth_pool_free_capacity_bytes', pool), 500 * GiB);
  t.equal(value(families, 'berth_pool_max_over_subscription_ratio', pool), 2.76);
  t.match(family(families, 'berth_pool_total_capacity_bytes').help, /total_capacity_gb/, 'the help text keeps Cinder\'s name');
  t.equal(value(families, 'berth_disk_storage_maximum_bytes', { node: 'node-2', disk: 'disk-a' }), 100 * GiB);
  // cn1: MEMORY_MB 16384 reserved 512; the NUMA nodes 32768 each. DISK_GB 500 + 1000.
  t.equal(value(families, 'berth_placement_capacity_bytes', { resource_class: 'MEMORY_MB' }), (16384 - 512 + 2 * 32768) * 2 ** 20);
  t.equal(value(families, 'berth_placement_used_bytes', { resource_class: 'MEMORY_MB' }), 8192 * 2 ** 20);
  t.equal(value(families, 'berth_placement_capacity_bytes', { resource_class: 'DISK_GB' }), 1500 * GiB);
  t.equal(value(families, 'berth_placement_capacity_units', { resource_class: 'VCPU' }), 8 * 16 + 32);
  t.equal(value(families, 'berth_placement_used_units', { resource_class: 'VCPU' }), 100);
  t.equal(value(families, 'berth_placement_capacity_units', { resource_class: 'MEMORY_MB' }), undefined, 'bytes classes only in _bytes');
  t.equal(value(families, 'berth_placement_resource_providers'), 4);
});

t.test('build info, readiness, event-loop lag and stale windows', async (t) => {
  let lagMs = 250;
  const app = await build(t, { stats_stale_after_seconds: 120 }, undefined, undefined, { eventLoopDelay: () => lagMs });
  let families = await scrape(app);
  const info = family(families, 'berth_build_info').samples;
  t.same(info.map((s) => [s.labels, s.value]), [[{ version: BERTH_VERSION, node_version: process.versions.node, store: 'sqlite' }, 1]]);
  t.equal(BERTH_VERSION, JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).version);
  t.equal(value(families, 'berth_ready'), 1);
  t.equal(value(families, 'berth_event_loop_lag_seconds'), 0.25, 'the delay back-pressure reads, in seconds');
  lagMs = Infinity;
  families = await scrape(app);
  t.equal(value(families, 'berth_event_loop_lag_seconds'), Infinity, 'a window without a turn of the loop');
  t.equal(value(families, 'berth_stats_stale_after_seconds', { domain: 'volumes' }), 120);
  t.equal(value(families, 'berth_stats_stale_after_seconds', { domain: 'replicas' }), 120);
});

t.test('readiness is a gauge that follows /readyz: a store that is not following reads 0', async (t) => {
  const store = openSqliteStore(':memory:');
  const app = await build(t, {}, store);
  t.equal(value(await scrape(app), 'berth_ready'), 1);
  const status = store.status.bind(store);
  store.status = () => ({ ...status(), following: false });
  t.equal((await app.inject('/readyz')).statusCode, 503);
  t.equal(value(await scrape(app), 'berth_ready'), 0);
});

t.test('the event-loop lag gauge exists with load shedding off (the process samples it)', async (t) => {
  const { buildApp } = await import('../../src/app.ts');
  const { parseConfig } = await import('../../src/config.ts');
  const store = openSqliteStore(':memory:');
  const app = await buildApp({ config: parseConfig({ data_dir: ':memory:', max_event_loop_delay_ms: 0 }), store, processMetrics: false });
  t.teardown(async () => {
    await app.close();
    await store.close();
  });
  await app.ready();
  const lag = value(parseExposition((await app.inject('/metrics')).body), 'berth_event_loop_lag_seconds');
  t.ok(lag !== undefined && lag >= 0, `sampled: ${lag}`);
});

/** A store whose claim commits (those with expectations) fail with `errors` in turn. */
function failingStore(errors: Error[]): AsyncStore {
  const engine = openSqliteStore(':memory:');
  const commit = engine.commit.bind(engine);
  engine.commit = async (writes: readonly StoreWrite[], expect?: readonly StoreExpectation[]) => {
    if (expect && expect.length > 0 && errors.length > 0) throw errors.shift()!;
    return commit(writes, expect);
  };
  return engine;
}

t.test('store metrics move on commits, conflicts and outages of the store the dialects write to', async (t) => {
  const conflict = new StoreConflictError({ kind: 'pool', key: 'x', generation: 1 }, 2);
  const outage = new StoreUnavailableError('database unreachable');
  const failures: Error[] = [];
  const app = await build(t, {}, failingStore(failures));
  let families = await scrape(app);
  const commits = () => value(families, 'berth_store_commit_duration_seconds_count') ?? 0;
  const errors = (reason: string) => value(families, 'berth_store_errors_total', { reason });
  t.same(['conflict', 'unavailable', 'failed'].map(errors), [0, 0, 0], 'every reason starts at 0');
  const before = commits();
  t.equal((await app.inject({ method: 'PUT', url: '/backends/h@x', payload: { pools: [{ pool_name: 'a', total_capacity_gb: 100, free_capacity_gb: 50 }] } })).statusCode, 200);
  families = await scrape(app);
  t.ok(commits() > before, 'a report is a commit');

  const afterReport = commits();
  failures.push(conflict);
  const placed = await app.inject({ method: 'POST', url: '/volumes/schedule', payload: { id: 'v1', size: 1 } });
  t.equal(placed.statusCode, 200, 'the conflict was retried');
  families = await scrape(app);
  t.equal(errors('conflict'), 1);
  t.equal(commits() - afterReport, 2, 'both attempts timed: the refused one and the claim');

  failures.push(outage);
  const refused = await app.inject({ method: 'POST', url: '/volumes/schedule', payload: { id: 'v2', size: 1 } });
  t.equal(refused.statusCode, 503, 'the store is unreachable');
  families = await scrape(app);
  t.equal(errors('unavailable'), 1);
  t.equal(errors('failed'), 0);
  const histogram = family(families, 'berth_store_commit_duration_seconds');
  t.same(labelNames(histogram), [], 'one histogram: the store backend is in berth_build_info');
});

t.test('the asynchronous store wrapper times every commit and classifies what the real engine refuses', async (t) => {
  const metrics = new Metrics({ processMetrics: false });
  const engine = new SqliteStore(':memory:');
  t.teardown(() => engine.close());
  const store = instrumentStore(engine.async(), metrics);
  const [generation] = await store.commit([{ kind: 'k', key: 'a', value: { n: 1 } }], [{ kind: 'k', key: 'a', generation: 0 }]);
  await t.rejects(store.commit([{ kind: 'k', key: 'a', value: { n: 2 } }], [{ kind: 'k', key: 'a', generation: generation! + 5 }]), StoreConflictError);
  t.equal((await store.get('k', 'a'))?.generation, generation, 'refused: nothing written');
  const families = parseExposition(await metrics.registry.metrics());
  t.equal(value(families, 'berth_store_commit_duration_seconds_count'), 2);
  t.equal(value(families, 'berth_store_errors_total', { reason: 'conflict' }), 1);
  t.equal(store.instanceId, engine.instanceId, 'the feed origin is the engine\'s');
  await store.close();
  await t.rejects(store.load('k'));
  t.equal(value(parseExposition(await metrics.registry.metrics()), 'berth_store_errors_total', { reason: 'failed' }), 1, 'a closed store is a failure');
});

t.test('gauge groups: one line per target and gauge, label values escaped, NaN and infinities spelled as Prometheus reads them', async (t) => {
  const metrics = new Metrics({ processMetrics: false });
  const targets = [{ name: 'a"b', host: 'back\\slash', v: [1, NaN] }, { name: 'line\nbreak', host: 'h', v: [Infinity, -Infinity] }];
  metrics.registry.registerGaugeGroup({
    labelNames: ['pool', 'backend'],
    gauges: [{ name: 'test_one_bytes', help: 'first' }, { name: 'test_two_bytes', help: 'second\nline' }],
    collect(emit) {
      for (const x of targets) emit([x.name, x.host], x.v);
    },
  });
  const text = await metrics.registry.metrics();
  t.match(text, 'test_one_bytes{pool="a\\"b",backend="back\\\\slash"} 1\n');
  t.match(text, 'test_two_bytes{pool="line\\nbreak",backend="h"} -Inf');
  t.match(text, '# HELP test_two_bytes second\\nline\n');
  const families = parseExposition(text);
  t.same(family(families, 'test_one_bytes').samples.map((s) => [s.labels, s.value]), [
    [{ pool: 'a"b', backend: 'back\\slash' }, 1], [{ pool: 'line\nbreak', backend: 'h' }, Infinity],
  ]);
  t.ok(Number.isNaN(value(families, 'test_two_bytes', { pool: 'a"b', backend: 'back\\slash' })));
  t.equal(family(families, 'test_one_bytes').type, 'gauge');
  t.throws(() => metrics.registry.registerGaugeGroup({ labelNames: [], gauges: [{ name: 'test_one_bytes', help: 'again' }], collect() {} }),
    /already been registered/);
  t.throws(() => metrics.registry.registerGaugeGroup({ labelNames: [], gauges: [{ name: 'berth_decisions_total', help: 'taken by prom-client' }], collect() {} }),
    /already been registered/);
  const { Gauge } = await import('prom-client');
  t.throws(() => new Gauge({ name: 'test_one_bytes', help: 'x', registers: [metrics.registry] }), /already been registered/);
  t.throws(() => metrics.registry.registerGaugeGroup({ labelNames: ['bad-label'], gauges: [{ name: 'test_three', help: 'x' }], collect() {} }));
});
