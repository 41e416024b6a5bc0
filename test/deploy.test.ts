// No Docker engine here: check that the compose file, the Dockerfile, prometheus.yml, the Grafana provisioning, the
// dashboard and the alert rules line up.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import t from 'tap';
import { parse } from 'yaml';
import { familyOf, metricNames, panelQueries, readDashboard, readRules, variableQueries } from '../scripts/observability-queries.ts';

const root = resolve(import.meta.dirname, '..');
const read = (f: string) => readFileSync(join(root, f), 'utf8');

t.test('compose: berth with a named data volume, prometheus scraping it', async (t) => {
  const compose = parse(read('docker-compose.yml'));
  const berth = compose.services.berth;
  t.ok(berth, 'berth service');
  t.equal(berth.build, '.');
  const dataDir = berth.environment.BERTH_DATA_DIR;
  const mount = (berth.volumes as string[]).find((v) => v.endsWith(`:${dataDir}`));
  t.ok(mount, 'the data dir is a mounted volume');
  const volumeName = mount!.split(':')[0]!;
  t.ok(volumeName in compose.volumes, `named volume ${volumeName} is declared`);
  t.ok((berth.ports as string[]).includes('8080:8080'));

  const prom = compose.services.prometheus;
  const configMount = (prom.volumes as string[]).find((v) => v.includes('prometheus.yml'))!;
  t.equal(configMount.split(':')[0], './prometheus.yml', 'prometheus.yml from the repo');
  const scrape = parse(read('prometheus.yml')).scrape_configs[0];
  t.equal(scrape.metrics_path, '/metrics');
  t.same(scrape.static_configs[0].targets, ['berth:8080'], 'scrapes the berth service on its port');
});

t.test('compose: Prometheus keeps its data in a named volume at its storage path', async (t) => {
  const compose = parse(read('docker-compose.yml'));
  const prom = compose.services.prometheus;
  const storage = (prom.command as string[]).find((c) => c.startsWith('--storage.tsdb.path='))?.split('=')[1];
  t.equal(storage, '/prometheus', 'the storage path is explicit (command replaces the image default)');
  const mount = (prom.volumes as string[]).find((v) => v.split(':')[1] === storage);
  t.ok(mount, 'a volume is mounted there');
  const name = mount!.split(':')[0]!;
  t.notMatch(name, /^[./]/, 'a named volume, not a bind mount');
  t.ok(name in compose.volumes, `named volume ${name} is declared`);
});

t.test('compose on PostgreSQL: two Berths on one database, both scraped, no default password', async (t) => {
  const compose = parse(read('docker-compose.postgres.yml'), { merge: true });
  const pg = compose.services.postgres;
  t.match(pg.image, /^postgres:(1[5-9]|[2-9]\d)\.\d+$/, 'PostgreSQL 15 or newer, pinned');
  t.match(pg.environment.POSTGRES_PASSWORD, /^\$\{BERTH_DB_PASSWORD:\?/, 'the password must be given (no default)');
  const data = (pg.volumes as string[]).find((v) => v.endsWith(':/var/lib/postgresql/data'))!.split(':')[0]!;
  t.ok(data in compose.volumes, 'the database in a named volume');
  t.ok(pg.healthcheck?.test, 'a health check the Berths wait for');
  const berths = Object.entries(compose.services as Record<string, any>).filter(([name]) => name.startsWith('berth-'));
  t.equal(berths.length, 2, 'two Berth instances');
  const urls = new Set(berths.map(([, b]) => b.environment.BERTH_DATABASE_URL as string));
  t.equal(urls.size, 1, 'on one database');
  const url = new URL([...urls][0]!.replace(/\$\{[^}]*\}/, 'secret'));
  t.equal(url.hostname, 'postgres', 'the postgres service');
  for (const [name, b] of berths) {
    t.equal(b.depends_on?.postgres?.condition, 'service_healthy', `${name} waits for the database`);
    t.ok((b.volumes as string[]).some((v) => v.startsWith('./auth:')), `${name} has the tokens file`);
  }
  const ports = berths.flatMap(([, b]) => b.ports as string[]);
  t.equal(new Set(ports.map((p) => p.split(':')[0])).size, 2, 'each on its own host port');
  const prom = compose.services.prometheus;
  // The config file inside the container, found through the mount that holds it.
  const inside = (prom.command as string[]).find((c) => c.startsWith('--config.file='))!.split('=')[1]!;
  const mount = (prom.volumes as string[]).map((v) => v.split(':')).find(([, to]) => inside.startsWith(`${to}/`))!;
  const config = join(mount[0]!, inside.slice(mount[1]!.length + 1));
  const scrape = parse(read(config)).scrape_configs[0];
  t.same([...scrape.static_configs[0].targets].sort(), berths.map(([name]) => `${name}:8080`).sort(), 'Prometheus scrapes both');
  const rules = (parse(read(config)).rule_files as string[]).map((f) => join(dirname(config), f));
  t.same(rules, ['deploy/prometheus/alerts.yml'], 'with the alert rules, beside the config as mounted');
  t.same(compose.services.grafana.volumes, parse(read('docker-compose.yml')).services.grafana.volumes, 'the same Grafana');
});

/** The Dockerfile's instructions, continuation lines joined. */
function instructions(text: string): Array<{ op: string; args: string }> {
  return text.replace(/\\\n/g, ' ').split('\n').map((l) => l.trim()).filter((l) => l !== '' && !l.startsWith('#'))
    .map((l) => { const [op, ...rest] = l.split(/\s+/); return { op: op!.toUpperCase(), args: rest.join(' ') }; });
}

t.test('Dockerfile: multi-stage, node 20 slim, non-root, port, readiness healthcheck, data volume', async (t) => {
  const df = read('Dockerfile');
  const ops = instructions(df);
  t.equal(ops.filter((i) => i.op === 'FROM' && /^node:20-slim\b/.test(i.args)).length, 2, 'two node:20-slim stages');
  t.match(df, /npm prune --omit=dev/);
  t.match(df, /^USER node$/m);
  t.match(df, /^EXPOSE 8080$/m);
  t.match(df, /^VOLUME \["\/data"\]$/m);
  t.match(df, /BERTH_DATA_DIR=\/data/);
  t.match(df, /CMD \["node", "dist\/main.js"\]/);

  const health = ops.filter((i) => i.op === 'HEALTHCHECK');
  t.equal(health.length, 1, 'one HEALTHCHECK');
  const cmd = /CMD (\[.*\])$/.exec(health[0]!.args)?.[1];
  t.same(JSON.parse(cmd ?? 'null'), ['node', 'dist/healthcheck.js'], 'node itself runs the check (no curl in node:*-slim)');
  t.ok(existsSync(join(root, 'src', 'healthcheck.ts')), 'dist/healthcheck.js is built from src/healthcheck.ts');
  t.match(read('src/healthcheck.ts'), /loadConfig\(process\.env\)/, 'it reads the port from the configuration');
  t.match(read('src/healthcheck.ts'), /\/readyz/, 'and asks readiness, not liveness');
});

t.test('Dockerfile: the build stage copies what npm ci (prepare → build) needs; .dockerignore keeps the rest out', async (t) => {
  const ops = instructions(read('Dockerfile'));
  const firstStageEnd = ops.findIndex((i, n) => n > 0 && i.op === 'FROM');
  const copied = ops.slice(0, firstStageEnd).filter((i) => i.op === 'COPY').flatMap((i) => i.args.split(/\s+/).slice(0, -1));
  for (const needed of ['package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json', 'scripts', 'src']) {
    t.ok(copied.includes(needed), `COPY ${needed}`);
  }
  const npmCi = ops.findIndex((i) => i.op === 'RUN' && /\bnpm ci\b/.test(i.args));
  const lastCopy = ops.slice(0, firstStageEnd).map((i) => i.op).lastIndexOf('COPY');
  t.ok(npmCi > lastCopy, 'npm ci runs after the sources are in (its prepare step builds dist/)');

  const ignored = read('.dockerignore').split('\n').map((l) => l.trim()).filter((l) => l !== '' && !l.startsWith('#'));
  for (const entry of ['node_modules', 'data', '.git', 'dist', '.tap', 'coverage']) t.ok(ignored.includes(entry), `.dockerignore: ${entry}`);
  for (const c of copied) t.notOk(ignored.includes(c), `${c} is copied, so it must not be ignored`);
});

// ---------------------------------------------------------------- Grafana, the alert rules (no Grafana or Prometheus
// here: npm run conformance:prometheus evaluates every query on a real Prometheus; these checks need neither)

t.test('compose: Grafana pinned, provisioned with the Prometheus datasource and the dashboard', async (t) => {
  const compose = parse(read('docker-compose.yml'));
  const grafana = compose.services.grafana;
  t.match(grafana.image, /^grafana\/grafana-oss:\d+\.\d+\.\d+$/, 'grafana-oss, pinned to a version');
  t.same(grafana.depends_on, ['prometheus']);
  t.ok((grafana.ports as string[]).every((p) => p.startsWith('127.0.0.1:')), 'Grafana (admin/admin at first) on loopback only');
  const mounts = new Map((grafana.volumes as string[]).map((v) => { const [from, to] = v.split(':'); return [to!, from!]; }));
  t.equal(mounts.get('/etc/grafana/provisioning'), './deploy/grafana/provisioning', 'the provisioning directory');
  const data = mounts.get('/var/lib/grafana')!;
  t.ok(data in compose.volumes, 'Grafana keeps its state in a named volume');

  const datasources = parse(read('deploy/grafana/provisioning/datasources/prometheus.yml')).datasources;
  t.equal(datasources.length, 1);
  t.equal(datasources[0].type, 'prometheus');
  const url = new URL(datasources[0].url);
  t.ok(url.hostname in compose.services, `the datasource points at the ${url.hostname} service`);
  t.ok((compose.services[url.hostname].ports as string[]).some((p) => p.endsWith(`:${url.port}`)), 'on its port');
  t.equal(datasources[0].jsonData.timeInterval, `${parse(read('prometheus.yml')).global.scrape_interval}`, 'the scrape interval, for $__rate_interval');

  const providers = parse(read('deploy/grafana/provisioning/dashboards/berth.yml')).providers;
  t.equal(providers[0].type, 'file');
  const dir = providers[0].options.path as string;
  const mounted = [...mounts].find(([to]) => to.startsWith(`${dir}/`));
  t.ok(mounted, `a file is mounted under the provider's path ${dir}`);
  t.equal(mounted![1], './deploy/grafana/berth.json', 'and it is the dashboard');
  t.equal(grafana.environment.GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH, mounted![0], 'the home dashboard');
});

t.test('compose: Prometheus loads the alert rules from where prometheus.yml names them', async (t) => {
  const compose = parse(read('docker-compose.yml'));
  const prom = compose.services.prometheus;
  const mounts = new Map((prom.volumes as string[]).map((v) => { const [from, to] = v.split(':'); return [to!, from!]; }));
  const configPath = (prom.command as string[]).find((c) => c.startsWith('--config.file='))!.split('=')[1]!;
  const configDir = configPath.slice(0, configPath.lastIndexOf('/'));
  t.equal(mounts.get(configPath), './prometheus.yml');
  const ruleFiles = parse(read('prometheus.yml')).rule_files as string[];
  t.same(ruleFiles, ['deploy/prometheus/alerts.yml']);
  for (const file of ruleFiles) {
    const inContainer = `${configDir}/${file}`;
    const mount = [...mounts].find(([to]) => inContainer.startsWith(`${to}/`));
    t.ok(mount, `${inContainer} is mounted`);
    t.equal(join(mount![1], inContainer.slice(mount![0].length)), join('.', file), 'from the repository file that promtool checks');
    t.ok(existsSync(join(root, file)));
  }
});

t.test('dashboard: Grafana JSON model with a prometheus datasource variable every panel and target uses', async (t) => {
  const dashboard = readDashboard();
  t.ok((dashboard.schemaVersion as number) >= 41, `schemaVersion ${dashboard.schemaVersion} (Grafana 12)`);
  t.equal(dashboard.uid, 'berth-overview');
  const ds = dashboard.templating.list.find((v) => v.name === 'datasource')!;
  t.match(ds, { type: 'datasource', query: 'prometheus' });
  const panels = (dashboard.panels as Array<{ id: number; type: string; title: string; datasource?: { uid: string; type: string }; gridPos: { x: number; w: number } }>);
  t.equal(new Set(panels.map((p) => p.id)).size, panels.length, 'panel ids are unique');
  for (const p of panels) {
    t.ok(p.gridPos.x + p.gridPos.w <= 24, `${p.title}: inside the 24-column grid`);
    if (p.type !== 'row') t.same(p.datasource, { type: 'prometheus', uid: '${datasource}' }, `${p.title}: panel datasource`);
  }
  const queries = panelQueries(dashboard);
  t.ok(queries.length > 30, `${queries.length} queries`);
  for (const q of queries) {
    t.equal(q.datasourceUid, '${datasource}', `${q.panel} ${q.refId}: target datasource`);
    t.match(q.expr, /job=~"\$job",instance=~"\$instance"/, `${q.panel} ${q.refId}: follows the job and instance variables`);
  }
  const titles = panels.map((p) => p.title.toLowerCase()).join('\n');
  for (const needed of ['pool', 'disk', 'resource class', 'decisions per second', 'decision latency', 'rejections by filter',
    'stale window', 'http errors', 'event-loop lag', 'store commit latency', 'over-subscription ratio']) {
    t.match(titles, needed, `a panel on ${needed}`);
  }
  for (const v of variableQueries(dashboard)) t.ok(v.selector.startsWith('berth_'), `variable ${v.name} reads a Berth metric`);
});

t.test('alert rules: summary, description and a runbook section for each; thresholds in one place', async (t) => {
  const rules = readRules();
  const operations = read('docs/operations.md');
  const anchors = new Set([...operations.matchAll(/^#{2,4} (.+)$/gm)].map((m) => m[1]!.toLowerCase().replace(/[^a-z0-9 -]/g, '').replace(/ /g, '-')));
  const alerts = rules.filter((r) => r.kind === 'alert');
  t.same(alerts.map((a) => a.name).sort(), ['BerthDiskNearlyFull', 'BerthEventLoopLag', 'BerthFeedBehind', 'BerthHttp5xx', 'BerthNotReady', 'BerthPoolNearlyFull',
    'BerthReporterSilent', 'BerthResourceClassNearlyFull', 'BerthSchedulingFailuresHigh', 'BerthStoreCommitSlow', 'BerthStoreErrors']);
  for (const a of alerts) {
    t.ok(a.annotations?.summary && a.annotations.description, `${a.name}: summary and description`);
    t.match(a.labels?.severity, /^(warning|critical)$/, `${a.name}: severity`);
    const anchor = /^docs\/operations\.md#(.+)$/.exec(a.annotations?.runbook ?? '')?.[1];
    t.ok(anchor && anchors.has(anchor), `${a.name}: its runbook ${a.annotations?.runbook} is a section of docs/operations.md`);
  }
  const thresholds = rules.filter((r) => r.name === 'berth:capacity_alert_threshold:ratio');
  t.same(thresholds.map((r) => r.labels?.dialect).sort(), ['placement', 'replicas', 'volumes'], 'a threshold per dialect');
  for (const a of alerts.filter((r) => /NearlyFull$/.test(r.name))) t.match(a.expr, /berth:capacity_alert_threshold:ratio\{dialect="(volumes|replicas|placement)"\}/);
});

t.test('every dashboard and alert expression names only metrics a live Berth exports (or recording rules defined beside them)', async (t) => {
  const { build } = await import('./helper.ts');
  const { seedFleet } = await import('./console/fleet-fixture.ts');
  const { parseExposition } = await import('./http/prometheus-text.ts');
  const app = await build(t);
  await seedFleet(app);
  const families = new Set(parseExposition((await app.inject('/metrics')).body).keys());
  families.add('up'); // Prometheus's own, per target
  const rules = readRules();
  const recorded = new Set(rules.filter((r) => r.kind === 'record').map((r) => r.name));
  const expressions = [
    ...panelQueries(readDashboard()).map((q) => ({ where: `panel "${q.panel}" ${q.refId}`, expr: q.expr })),
    ...variableQueries(readDashboard()).map((v) => ({ where: `variable ${v.name}`, expr: v.selector })),
    ...rules.map((r) => ({ where: `${r.kind} ${r.name}`, expr: r.expr })),
  ];
  let names = 0;
  for (const { where, expr } of expressions) {
    const used = metricNames(expr);
    for (const name of used.exported) {
      names++;
      t.ok(familyOf(name, families), `${where}: ${name} is exported`);
    }
    for (const name of used.recorded) t.ok(recorded.has(name), `${where}: ${name} is recorded in alerts.yml`);
  }
  t.ok(names > 60, `${names} metric references checked`);
  t.same(metricNames('berth_x{a="berth_not_a_metric"} / berth:y:ratio or up{job="berth"}'), { exported: ['berth_x', 'up'], recorded: ['berth:y:ratio'] });
});
