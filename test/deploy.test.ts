// No Docker engine here: check that the compose file, the Dockerfile and prometheus.yml line up.
import { readFileSync } from 'node:fs';
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

t.test('Dockerfile: multi-stage, node 22 slim, non-root, port, healthcheck, data volume', async (t) => {
  const df = read('Dockerfile');
  t.equal(df.match(/^FROM node:22-slim/gm)?.length, 2, 'two node:22-slim stages');
  t.match(df, /npm prune --omit=dev/);
  t.match(df, /^USER node$/m);
  t.match(df, /^EXPOSE 8080$/m);
  t.match(df, /^HEALTHCHECK .*\n.*\/healthz/m);
  t.match(df, /^VOLUME \["\/data"\]$/m);
  t.match(df, /BERTH_DATA_DIR=\/data/);
  t.match(df, /CMD \["node", "dist\/main.js"\]/);
});
