// The import rules ARCHITECTURE.md states, checked on every file under src/: the engine is pure, the dialects are
// independent of each other, routes never reach the store, domain code stays framework-free, and only the processes
// read the environment. A new import that breaks a rule fails here with the file and the import named. The rules are
// read from ARCHITECTURE.md's table and must be exactly the ones checked here, so the document and the test cannot
// drift apart.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import t from 'tap';

const root = resolve(import.meta.dirname, '..');
const src = join(root, 'src');

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    return e.isDirectory() ? files(path) : e.name.endsWith('.ts') ? [path] : [];
  });
}

interface Import {
  /** The importing file, relative to src/ (e.g. "volumes/routes/pools.ts"). */
  from: string;
  /** A package name, or the imported file relative to src/. */
  to: string;
  isPackage: boolean;
}

const IMPORT = /^\s*(?:import|export)\s[^'"]*?from\s+'([^']+)'|^\s*import\s+'([^']+)'|\bimport\(\s*'([^']+)'\s*\)/gm;

function importsOf(file: string): Import[] {
  const text = readFileSync(file, 'utf8');
  const from = relative(src, file);
  const out: Import[] = [];
  for (const m of text.matchAll(IMPORT)) {
    const spec = (m[1] ?? m[2] ?? m[3])!;
    if (spec.startsWith('.')) out.push({ from, to: relative(src, resolve(dirname(file), spec)), isPackage: false });
    else out.push({ from, to: spec.startsWith('node:') ? spec : spec.split('/').slice(0, spec.startsWith('@') ? 2 : 1).join('/'), isPackage: true });
  }
  return out;
}

const DIALECTS = ['volumes', 'placement', 'replicas'];
const FRAMEWORK = ['fastify', 'fastify-type-provider-zod', 'prom-client', 'pino'];
const dialectOf = (path: string) => DIALECTS.find((d) => path === d || path.startsWith(`${d}/`));
const under = (path: string, dir: string) => path.startsWith(`${dir}/`);
/** The HTTP face of a dialect: its routes, its schemas (zod → OpenAPI) and its metrics collectors. */
const isHttpFace = (path: string) => /^(volumes|placement|replicas)\/(routes\/|routes\.ts$|schemas\.ts$|metrics\.ts$)/.test(path);

const all = files(src).flatMap(importsOf);

const RULES: Array<{ id: string; rule: string; broken: (i: Import) => boolean }> = [
  {
    id: 'pipeline-pure',
    rule: 'src/pipeline imports nothing but itself and node: built-ins (no package, store, http or dialect)',
    broken: (i) => under(i.from, 'pipeline') && (i.isPackage ? !i.to.startsWith('node:') : !under(i.to, 'pipeline')),
  },
  {
    id: 'dialects-independent',
    rule: 'a dialect never imports another dialect',
    broken: (i) => !i.isPackage && dialectOf(i.from) !== undefined && dialectOf(i.to) !== undefined && dialectOf(i.from) !== dialectOf(i.to),
  },
  {
    id: 'routes-no-store',
    rule: 'routes never import the store (they call the service)',
    broken: (i) => !i.isPackage && /^(volumes|placement|replicas)\/routes(\/|\.ts$)/.test(i.from) && under(i.to, 'store'),
  },
  {
    id: 'domain-framework-free',
    rule: 'domain code (model, math, filters, weighers, scheduler, service) imports no framework and nothing from src/http',
    broken: (i) => dialectOf(i.from) !== undefined && !isHttpFace(i.from) &&
      (i.isPackage ? FRAMEWORK.includes(i.to) : under(i.to, 'http')),
  },
  {
    id: 'store-independent',
    rule: 'the store imports no dialect and nothing from src/http',
    broken: (i) => under(i.from, 'store') && !i.isPackage && (dialectOf(i.to) !== undefined || under(i.to, 'http')),
  },
  {
    id: 'shared-domain-framework-free',
    rule: 'shared domain modules (domain-errors, settings) import no framework and nothing from src/http',
    broken: (i) => ['domain-errors.ts', 'settings.ts'].includes(i.from) && (i.isPackage ? FRAMEWORK.includes(i.to) : under(i.to, 'http')),
  },
];

t.test('every import under src/ follows the architecture rules', async (t) => {
  t.ok(all.length > 200, `${all.length} imports read`);
  for (const { rule, broken } of RULES) {
    const offending = all.filter(broken).map((i) => `${i.from} imports ${i.to}`);
    t.same(offending, [], rule);
  }
});

const ENV_RULE = {
  id: 'env-only-processes',
  rule: 'only the processes (main.ts, healthcheck.ts) read process.env; app.ts and config.ts are handed it',
  readers: ['healthcheck.ts', 'main.ts'],
};

t.test('only the processes read the environment (src/app.ts builds the app from what it is given)', async (t) => {
  const readers = files(src).filter((f) => /\bprocess\.env\b/.test(readFileSync(f, 'utf8'))).map((f) => relative(src, f)).sort();
  t.same(readers, ENV_RULE.readers, ENV_RULE.rule);
});

/** The rows of the table under ARCHITECTURE.md's "## Import rules" heading: `| \`id\` | rule |`. */
function documentedRules(markdown: string): Array<{ id: string; rule: string }> {
  const section = markdown.split(/^## /m).find((s) => s.startsWith('Import rules\n'));
  if (section === undefined) return [];
  return [...section.matchAll(/^\| `([^`]+)` \| (.+?) \|$/gm)].map((m) => ({ id: m[1]!, rule: m[2]! }));
}

t.test('ARCHITECTURE.md states exactly the rules this test checks, in the same words', async (t) => {
  const documented = documentedRules(readFileSync(join(root, 'ARCHITECTURE.md'), 'utf8'));
  const checked = [...RULES, ENV_RULE].map(({ id, rule }) => ({ id, rule }));
  t.same(documented, checked);
  t.same(documentedRules('# x\n## Import rules\n| id | rule |\n|---|---|\n| `a` | first |\n## Next\n| `b` | not a rule |\n'),
    [{ id: 'a', rule: 'first' }], 'only the rows of that section are rules');
});

t.test('the rules catch what they describe', async (t) => {
  const check = (i: Import) => RULES.filter((r) => r.broken(i)).map((r) => r.rule);
  t.equal(check({ from: 'pipeline/pipeline.ts', to: 'fastify', isPackage: true }).length, 1);
  t.equal(check({ from: 'pipeline/pipeline.ts', to: 'http/metrics.ts', isPackage: false }).length, 1);
  t.equal(check({ from: 'volumes/service.ts', to: 'placement/model.ts', isPackage: false }).length, 1);
  t.equal(check({ from: 'replicas/routes/nodes.ts', to: 'store/store.ts', isPackage: false }).length, 1);
  t.equal(check({ from: 'placement/scheduler.ts', to: 'fastify', isPackage: true }).length, 1);
  t.equal(check({ from: 'store/postgres.ts', to: 'volumes/model.ts', isPackage: false }).length, 1);
  t.same(check({ from: 'volumes/routes/pools.ts', to: 'fastify', isPackage: true }), [], 'routes may use the framework');
  t.same(check({ from: 'volumes/service.ts', to: 'store/store.ts', isPackage: false }), [], 'services write through the store');
  t.same(check({ from: 'http/console-fleet.ts', to: 'volumes/routes/index.ts', isPackage: false }), [], 'src/http composes the dialects');
});
