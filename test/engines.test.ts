// The Node.js requirement is true: every installed package accepts the lowest Node that package.json's engines
// allow and the Node that runs the tests (so `npm ci` prints no EBADENGINE), and the container runs the same major.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import t from 'tap';

const root = resolve(import.meta.dirname, '..');
const semver = createRequire(import.meta.url)('semver') as {
  satisfies(version: string, range: string): boolean;
  minVersion(range: string): { version: string; major: number } | null;
};
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { engines: { node: string } };
const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as {
  packages: Record<string, { version?: string; engines?: Record<string, string> | string[] }>;
};

const floor = semver.minVersion(pkg.engines.node)!;

t.test('package.json engines: Node ≥ 20.19 (require(esm) unflagged), and this Node satisfies it', async (t) => {
  t.equal(pkg.engines.node, '>=20.19.0');
  t.ok(semver.satisfies(process.versions.node, pkg.engines.node), `Node ${process.versions.node}`);
});

t.test('every locked package accepts the lowest allowed Node and this one (no EBADENGINE on npm ci)', async (t) => {
  const refused: string[] = [];
  let checked = 0;
  for (const [path, entry] of Object.entries(lock.packages)) {
    if (path === '' || !entry.engines || Array.isArray(entry.engines) || !entry.engines.node) continue;
    checked++;
    const range = entry.engines.node;
    for (const node of [floor.version, process.versions.node]) {
      if (!semver.satisfies(node, range)) refused.push(`${path}@${entry.version} wants node ${range}, not ${node}`);
    }
  }
  t.same(refused, [], `${checked} packages declare an engines range`);
});

t.test('the container runs the Node major the tests run on', async (t) => {
  const dockerfile = readFileSync(join(root, 'Dockerfile'), 'utf8');
  const majors = [...dockerfile.matchAll(/^FROM node:(\d+)-slim/gm)].map((m) => Number(m[1]));
  t.ok(majors.length > 0, 'FROM node:<major>-slim');
  for (const major of majors) {
    t.equal(major, floor.major, `node:${major} is the engines' major line`);
    t.equal(major, Number(process.versions.node.split('.')[0]), `node:${major} is the tested major line`);
  }
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  t.match(readme, new RegExp(`Node\\.js ${floor.major}\\b[^\\n]*≥ ${floor.major}\\.${floor.version.split('.')[1]}`), 'the README states the requirement');
});

t.test('the overridden packages behave as their dependents need', async (t) => {
  const { default: Fastify } = await import('fastify');
  const { default: fastifyStatic } = await import('@fastify/static');
  const { mkdtempSync, writeFileSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const dir = mkdtempSync(join(tmpdir(), 'berth-static-'));
  writeFileSync(join(dir, 'report.txt'), 'x');
  const app = Fastify();
  t.teardown(() => app.close());
  await app.register(fastifyStatic, { root: dir, serve: false });
  app.get('/cookie', async (request) => ({ cookie: request.headers.cookie }));
  app.get('/download', async (_request, reply) => reply.download('report.txt'));
  // light-my-request (app.inject) encodes cookies with cookie@1's stringifySetCookie.
  const cookie = await app.inject({ url: '/cookie', cookies: { session: 'a b' } });
  t.same(cookie.json(), { cookie: 'session=a%20b' });
  // @fastify/static names downloads with content-disposition@2's create().
  const download = await app.inject({ url: '/download' });
  t.equal(download.headers['content-disposition'], 'attachment; filename=report.txt');
});
