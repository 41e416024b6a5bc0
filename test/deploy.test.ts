// No Docker engine here: check that the compose file, the Dockerfile and prometheus.yml line up.
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import t from 'tap';
import { parse } from 'yaml';

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
