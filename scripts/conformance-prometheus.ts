// npm run conformance:prometheus: the dashboard and the alert rules, proven on a real Prometheus scraping a real Berth.
//  1. promtool check rules / test rules (deploy/prometheus/alerts.test.yml) / check config (prometheus.yml, deploy/prometheus/scale-out.yml).
//  2. A built Berth (port 0, in-memory store, a 4 s stale window) serving a small workload in all three dialects,
//     and a Prometheus (temporary directory, loopback, its own free port, 1 s scrape and evaluation) scraping it,
//     with the rule file as committed except that every `for:` is 2 s (the expressions and thresholds are the file's).
//  3. Every dashboard panel query (variables substituted as Grafana would for one job) and every rule expression is
//     evaluated through the HTTP API: each parses and returns series; each metric an alert reads has series; every
//     rule evaluates without error. Then conditions are provoked: a pool, a disk and a resource class filled past the
//     threshold and freed, a reporter silent past its stale window and back, scheduling failures, Berth stopped —
//     each alert must fire, and those with a way back must resolve.
// Prints a table per query and per alert; exits non-zero on any failure.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  ALERTS_FILE, metricNames, panelQueries, readDashboard, readRules, REPO, substitute, variableQueries,
} from './observability-queries.ts';

const PLACEMENT = { 'openstack-api-version': 'placement 1.39', 'content-type': 'application/json' };
const GiB = 2 ** 30;
const STALE_AFTER_SECONDS = 4;
const RATE_INTERVAL = '20s';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const failures: string[] = [];
function check(ok: boolean, what: string): boolean {
  if (!ok) failures.push(what);
  return ok;
}

function promtool(args: string[]): boolean {
  const r = spawnSync('promtool', args, { cwd: REPO, encoding: 'utf8' });
  const ok = r.status === 0;
  console.log(`${ok ? 'ok  ' : 'FAIL'} promtool ${args.join(' ')}`);
  if (!ok) console.log(`${r.stdout}${r.stderr}`.trim().replace(/^/gm, '       '));
  return check(ok, `promtool ${args.join(' ')}`);
}

function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolvePort(port));
    });
  });
}

/** Starts a child and collects its output; `ready` reads the output until it says the child is up. */
async function start(cmd: string, args: string[], env: NodeJS.ProcessEnv, ready: (output: string) => Promise<boolean> | boolean, what: string) {
  const child = spawn(cmd, args, { cwd: REPO, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (d: Buffer) => { output += d.toString(); });
  child.stderr!.on('data', (d: Buffer) => { output += d.toString(); });
  for (let i = 0; i < 300; i++) {
    if (child.exitCode !== null) throw new Error(`${what} exited (${child.exitCode}):\n${output}`);
    if (await ready(output)) return { child, output: () => output };
    await sleep(100);
  }
  child.kill('SIGKILL');
  throw new Error(`${what} did not start within 30 s:\n${output}`);
}

function stop(child: ChildProcess): Promise<void> {
  return new Promise((done) => {
    if (child.exitCode !== null || child.signalCode !== null) return done();
    child.once('exit', () => done());
    child.kill('SIGTERM');
  });
}

// ---------------------------------------------------------------- the workload

class Berth {
  constructor(readonly base: string) {}
  async call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: unknown }> {
    const res = await fetch(this.base + path, {
      method,
      headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    let parsed: unknown = text;
    try { parsed = JSON.parse(text); } catch { /* text */ }
    return { status: res.status, body: parsed };
  }
  async must(method: string, path: string, body: unknown, status: number | number[], headers?: Record<string, string>): Promise<unknown> {
    const r = await this.call(method, path, body, headers);
    if (!([status].flat().includes(r.status))) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body;
  }
}

const uuid = (n: number) => `33333333-0000-4000-8000-${n.toString(16).padStart(12, '0')}`;
const GPU_HOST = uuid(1);
const GPU_CONSUMER = uuid(0xc0);

/** What the reporters say; the loop re-reports it every second, the provocations change it. */
const state = {
  fillingFreeGb: 80,
  worker3AvailableGiB: 90,
  silentReports: false,
};

function alphaReport() {
  return {
    volume_backend_name: 'lvm',
    pools: [
      { pool_name: 'gold', total_capacity_gb: 10_000, free_capacity_gb: 8_000, provisioned_capacity_gb: 2_000, max_over_subscription_ratio: 'auto', thin_provisioning_support: true },
      { pool_name: 'filling', total_capacity_gb: 100, free_capacity_gb: state.fillingFreeGb, thick_provisioning_support: true },
    ],
  };
}

function nodeReport(n: number) {
  const available = n === 3 ? state.worker3AvailableGiB : 90;
  return {
    zone: `zone-${n}`,
    disks: { 'disk-1': { path: '/var/lib/longhorn', storageMaximum: 100 * GiB, storageAvailable: available * GiB, storageReserved: 10 * GiB } },
  };
}

async function report(b: Berth): Promise<void> {
  await b.must('PUT', '/backends/alpha@lvm', alphaReport(), 200);
  if (state.silentReports) await b.must('PUT', '/backends/silent@lvm', { volume_backend_name: 'silent', pools: [{ pool_name: 'p', total_capacity_gb: 100, free_capacity_gb: 100 }] }, 200);
  for (const n of [1, 2, 3]) await b.must('PUT', `/nodes/worker-${n}`, nodeReport(n), 200);
}

async function seed(b: Berth): Promise<void> {
  // A backend reported once and then never again: silent past the stale window within seconds.
  await b.must('PUT', '/backends/silent@lvm', { volume_backend_name: 'silent', pools: [{ pool_name: 'p', total_capacity_gb: 100, free_capacity_gb: 100 }] }, 200);
  await report(b);
  for (const [n, rp] of [[2, uuid(2)], [3, uuid(3)]] as const) {
    await b.must('POST', '/resource_providers', { name: `compute-${n}`, uuid: rp }, 200, PLACEMENT);
    await b.must('PUT', `/resource_providers/${rp}/inventories`, {
      resource_provider_generation: 0,
      inventories: { VCPU: { total: 16, allocation_ratio: 4 }, MEMORY_MB: { total: 65536, reserved: 512 }, DISK_GB: { total: 1000 } },
    }, 200, PLACEMENT);
  }
  await b.must('PUT', '/resource_classes/CUSTOM_GPU', undefined, [201, 204], PLACEMENT);
  await b.must('POST', '/resource_providers', { name: 'gpu-host', uuid: GPU_HOST }, 200, PLACEMENT);
  await b.must('PUT', `/resource_providers/${GPU_HOST}/inventories`, { resource_provider_generation: 0, inventories: { CUSTOM_GPU: { total: 4 } } }, 200, PLACEMENT);
  await b.must('PUT', `/allocations/${uuid(0xa1)}`, {
    allocations: { [uuid(2)]: { resources: { VCPU: 8, MEMORY_MB: 8192, DISK_GB: 100 } } },
    consumer_generation: null, project_id: 'conformance', user_id: 'conformance', consumer_type: 'INSTANCE',
  }, 204, PLACEMENT);
  // One refusal per dialect, so that every failure series exists from the start.
  await b.must('POST', '/volumes/schedule', { size: 1_000_000 }, 409);
  await b.must('POST', '/replicas/schedule', { volume: { name: 'too-big', size: 1000 * GiB, numberOfReplicas: 1 } }, 409);
  await b.must('GET', '/allocation_candidates?resources=VCPU:100000', undefined, 200, PLACEMENT);
}

/** Steady traffic until stopped: reports every second, decisions, claims and releases in every dialect, a 404. */
function traffic(b: Berth): { stop: () => Promise<void> } {
  let running = true;
  let i = 0;
  const loop = (async () => {
    while (running) {
      i++;
      await report(b);
      await b.must('POST', '/volumes/schedule', { id: `vol-${i}`, size: 10 }, 200);
      await b.must('DELETE', `/volumes/vol-${i}`, undefined, 204);
      await b.must('POST', '/volumes/schedule?dry_run=true', { size: 10 }, 200);
      await b.must('POST', '/replicas/schedule', { volume: { name: `pvc-${i}`, size: GiB, numberOfReplicas: 2 } }, 200);
      await b.must('GET', '/allocation_candidates?resources=VCPU:2,MEMORY_MB:2048&limit=5', undefined, 200, PLACEMENT);
      await b.must('GET', '/volumes/no-such-volume', undefined, 404);
      await sleep(500);
    }
  })().catch((err: unknown) => {
    running = false;
    failures.push(`traffic: ${String(err)}`);
  });
  return { stop: async () => { running = false; await loop; } };
}

// ---------------------------------------------------------------- Prometheus

class Prometheus {
  constructor(readonly base: string) {}
  async query(expr: string): Promise<{ ok: boolean; series: number; error?: string }> {
    const res = await fetch(`${this.base}/api/v1/query?query=${encodeURIComponent(expr)}`);
    const body = (await res.json()) as { status: string; error?: string; data?: { resultType: string; result: unknown[] } };
    if (body.status !== 'success') return { ok: false, series: 0, error: body.error ?? `HTTP ${res.status}` };
    const result = body.data!.result;
    return { ok: true, series: Array.isArray(result) ? result.length : 1 };
  }
  async labelValues(label: string, selector: string): Promise<string[]> {
    const res = await fetch(`${this.base}/api/v1/label/${label}/values?match[]=${encodeURIComponent(selector)}`);
    return ((await res.json()) as { data: string[] }).data ?? [];
  }
  async alerts(): Promise<Array<{ labels: Record<string, string>; state: string }>> {
    const res = await fetch(`${this.base}/api/v1/alerts`);
    return ((await res.json()) as { data: { alerts: Array<{ labels: Record<string, string>; state: string }> } }).data.alerts;
  }
  async rules(): Promise<Array<{ name: string; health: string; lastError?: string; state?: string }>> {
    const res = await fetch(`${this.base}/api/v1/rules`);
    const body = (await res.json()) as { data: { groups: Array<{ rules: Array<{ name: string; health: string; lastError?: string; state?: string }> }> } };
    return body.data.groups.flatMap((g) => g.rules);
  }
  /** Waits until `alertname` (with `labels`) is firing (`want` true) or gone (false); the seconds it took, or null. */
  async waitFor(alertname: string, labels: Record<string, string>, want: boolean, timeoutMs = 45_000): Promise<number | null> {
    const t0 = Date.now();
    while (Date.now() - t0 < timeoutMs) {
      const matching = (await this.alerts()).filter((a) => a.labels.alertname === alertname && Object.entries(labels).every(([k, v]) => a.labels[k] === v));
      const firing = matching.some((a) => a.state === 'firing');
      if (want ? firing : matching.length === 0) return (Date.now() - t0) / 1000;
      await sleep(250);
    }
    return null;
  }
}

/** The committed rules with every `for:` cut to 2 s, so that alerts fire within seconds. */
function quickRules(): string {
  return readFileSync(ALERTS_FILE, 'utf8').replace(/^(\s+)for: \S+$/gm, '$1for: 2s');
}

// ---------------------------------------------------------------- the run

async function main(): Promise<number> {
  if (spawnSync('promtool', ['--version'], { stdio: 'ignore' }).status !== 0) {
    console.error('promtool not found (apt-get install -y prometheus)');
    return 2;
  }
  console.log('== promtool');
  promtool(['check', 'rules', 'deploy/prometheus/alerts.yml']);
  promtool(['test', 'rules', 'deploy/prometheus/alerts.test.yml']);
  promtool(['check', 'config', 'prometheus.yml']);
  promtool(['check', 'config', 'deploy/prometheus/scale-out.yml']);

  const build = spawnSync(process.execPath, [join(REPO, 'scripts', 'build.mjs'), '--if-stale'], { cwd: REPO, stdio: 'inherit' });
  if (build.status !== 0) return build.status ?? 1;

  const work = mkdtempSync(join(tmpdir(), 'berth-prometheus-'));
  const children: ChildProcess[] = [];
  let traffic_: { stop: () => Promise<void> } | undefined;
  try {
    let berthPort = 0;
    const berth = await start(process.execPath, [join(REPO, 'dist', 'main.js')], {
      ...process.env, BERTH_HOST: '127.0.0.1', BERTH_PORT: '0', BERTH_DATA_DIR: ':memory:', BERTH_LOG_LEVEL: 'info',
      BERTH_STATS_STALE_AFTER_SECONDS: String(STALE_AFTER_SECONDS),
    }, (out) => {
      const m = /Server listening at http:\/\/127\.0\.0\.1:(\d+)/.exec(out);
      if (m) berthPort = Number(m[1]);
      return berthPort > 0;
    }, 'berth');
    children.push(berth.child);
    const b = new Berth(`http://127.0.0.1:${berthPort}`);
    console.log(`\n== berth on 127.0.0.1:${berthPort} (port 0), stale window ${STALE_AFTER_SECONDS} s`);
    await seed(b);
    traffic_ = traffic(b);

    const rulesFile = join(work, 'alerts.yml');
    writeFileSync(rulesFile, quickRules());
    const configFile = join(work, 'prometheus.yml');
    writeFileSync(configFile, [
      'global:', '  scrape_interval: 1s', '  evaluation_interval: 1s',
      'rule_files:', `  - ${JSON.stringify(rulesFile)}`,
      'scrape_configs:', '  - job_name: berth', '    metrics_path: /metrics',
      '    static_configs:', `      - targets: ["127.0.0.1:${berthPort}"]`, '',
    ].join('\n'));
    const promPort = await freePort();
    const prom = new Prometheus(`http://127.0.0.1:${promPort}`);
    const prometheus = await start('prometheus', [
      `--config.file=${configFile}`, `--storage.tsdb.path=${join(work, 'data')}`,
      `--web.listen-address=127.0.0.1:${promPort}`, '--log.level=warn',
    ], process.env, async () => {
      try { return (await fetch(`${prom.base}/-/ready`)).ok; } catch { return false; }
    }, 'prometheus');
    children.push(prometheus.child);
    console.log(`== prometheus on 127.0.0.1:${promPort}, scraping every 1 s; gathering 25 s of samples`);
    await sleep(25_000);

    // -------- the dashboard
    const dashboard = readDashboard();
    console.log('\n== dashboard variables (label_values through /api/v1/label)');
    for (const v of variableQueries(dashboard)) {
      const values = await prom.labelValues(v.label, substitute(v.selector, { job: 'berth', rateInterval: RATE_INTERVAL }));
      const ok = check(values.length > 0, `variable ${v.name}: no values`);
      console.log(`${ok ? 'ok  ' : 'FAIL'} $${v.name.padEnd(12)} ${values.join(', ')}`);
    }
    console.log('\n== dashboard panels (instant queries; $job=berth, $instance=.*, $__rate_interval=20s)');
    for (const q of panelQueries(dashboard)) {
      const expr = substitute(q.expr, { job: 'berth', rateInterval: RATE_INTERVAL });
      const r = await prom.query(expr);
      const dsOk = q.datasourceUid === '${datasource}';
      const ok = check(r.ok && r.series > 0 && dsOk, `panel "${q.panel}" ${q.refId}: ${r.error ?? (dsOk ? 'no series' : 'datasource is not ${datasource}')}`);
      console.log(`${ok ? 'ok  ' : 'FAIL'} ${`${q.panel} [${q.refId}]`.padEnd(78)} ${r.ok ? `${r.series} series` : r.error}`);
    }

    // -------- the rules
    const rules = readRules();
    console.log('\n== rule expressions (each parses; each metric it reads has series; recording rules return series)');
    for (const rule of rules) {
      const r = await prom.query(rule.expr);
      const names = metricNames(rule.expr);
      const missing: string[] = [];
      for (const name of [...names.exported, ...names.recorded]) if ((await prom.query(`count(${name})`)).series === 0) missing.push(name);
      const ok = check(r.ok && missing.length === 0 && (rule.kind === 'alert' || r.series > 0),
        `${rule.kind} ${rule.name}: ${r.error ?? (missing.length ? `no series for ${missing.join(', ')}` : 'no series')}`);
      const note = rule.kind === 'alert' ? `${r.series} series now (${r.series > 0 ? 'condition true' : 'condition false'})` : `${r.series} series`;
      console.log(`${ok ? 'ok  ' : 'FAIL'} ${rule.kind.padEnd(6)} ${rule.name.padEnd(42)} ${r.ok ? note : r.error}${missing.length ? `; no series: ${missing.join(', ')}` : ''}`);
    }
    const evaluated = await prom.rules();
    for (const rule of rules) {
      const found = evaluated.filter((e) => e.name === rule.name);
      const healthy = found.length > 0 && found.every((e) => e.health === 'ok');
      check(healthy, `rule ${rule.name}: ${found.map((e) => e.lastError).filter(Boolean).join('; ') || 'not evaluated'}`);
    }
    console.log(`${failures.some((f) => f.startsWith('rule ')) ? 'FAIL' : 'ok  '} every rule evaluated by Prometheus with health ok (${evaluated.length} rules)`);

    // -------- provoked alerts
    console.log('\n== alerts provoked (for: cut to 2 s) — fired after / resolved after');
    const table: Array<[string, string, string]> = [];
    const provoke = async (alert: string, labels: Record<string, string>, cause: string, on: (() => Promise<void> | void) | 'since the start', off?: () => Promise<void> | void) => {
      if (on !== 'since the start') {
        check((await prom.waitFor(alert, labels, false, 5_000)) !== null, `${alert}: firing before it was provoked`);
        await on();
      }
      const fired = await prom.waitFor(alert, labels, true);
      check(fired !== null, `${alert} did not fire (${cause})`);
      let resolved: number | null | undefined;
      if (off) {
        await off();
        resolved = await prom.waitFor(alert, labels, false);
        check(resolved !== null, `${alert} did not resolve`);
      }
      const ok = fired !== null && resolved !== null;
      table.push([alert, cause, `${fired === null ? 'never' : `${fired.toFixed(1)} s`} / ${resolved === undefined ? '—' : resolved === null ? 'never' : `${resolved.toFixed(1)} s`}`]);
      console.log(`${ok ? 'ok  ' : 'FAIL'} ${alert.padEnd(30)} ${cause.padEnd(62)} ${table.at(-1)![2]}`);
    };
    await provoke('BerthReporterSilent', { backend: 'silent@lvm' }, `silent@lvm silent since the start (window ${STALE_AFTER_SECONDS} s), then reporting`,
      'since the start', () => { state.silentReports = true; });
    await provoke('BerthPoolNearlyFull', { pool: 'alpha@lvm#filling' }, 'pool filling: 98 of 100 GiB used, then 20',
      () => { state.fillingFreeGb = 2; }, () => { state.fillingFreeGb = 80; });
    await provoke('BerthDiskNearlyFull', { node: 'worker-3', disk: 'disk-1' }, 'worker-3/disk-1: 5 of 100 GiB available, then 90',
      () => { state.worker3AvailableGiB = 5; }, () => { state.worker3AvailableGiB = 90; });
    await provoke('BerthResourceClassNearlyFull', { resource_class: 'CUSTOM_GPU' }, 'CUSTOM_GPU: 4 of 4 allocated, then released',
      () => b.must('PUT', `/allocations/${GPU_CONSUMER}`, {
        allocations: { [GPU_HOST]: { resources: { CUSTOM_GPU: 4 } } },
        consumer_generation: null, project_id: 'conformance', user_id: 'conformance', consumer_type: 'INSTANCE',
      }, 204, PLACEMENT).then(() => undefined),
      () => b.must('DELETE', `/allocations/${GPU_CONSUMER}`, undefined, 204, PLACEMENT).then(() => undefined));
    await provoke('BerthSchedulingFailuresHigh', { domain: 'placement' }, '150 allocation-candidate queries that nothing fits', async () => {
      for (let i = 0; i < 150; i++) await b.must('GET', '/allocation_candidates?resources=VCPU:100000', undefined, 200, PLACEMENT);
    });
    await traffic_.stop();
    traffic_ = undefined;
    await provoke('BerthNotReady', { instance: `127.0.0.1:${berthPort}` }, 'Berth stopped (SIGTERM): its scrape fails', () => stop(berth.child));

    const quiet = rules.filter((r) => r.kind === 'alert' && !table.some(([a]) => a === r.name)).map((r) => r.name);
    console.log(`\n   not provoked here (covered by promtool test rules): ${quiet.join(', ')}`);
  } catch (err) {
    failures.push(String((err as Error).stack ?? err));
  } finally {
    await traffic_?.stop().catch(() => undefined);
    for (const c of children.reverse()) await stop(c);
    rmSync(work, { recursive: true, force: true });
  }
  console.log(failures.length === 0 ? '\nconformance:prometheus: all checks passed' : `\nconformance:prometheus: ${failures.length} failed:\n  ${failures.join('\n  ')}`);
  return failures.length === 0 ? 0 : 1;
}

if (import.meta.filename === process.argv[1]) process.exit(await main());
