// Converts the recorded outcomes of the real systems (the reference material laid beside the clone as
// ../shared/reference) into Berth's own test fixtures under test/fixtures/, which are committed: `npm test` reads
// only those. Run it to (re)write them; with --check it writes nothing and fails when the committed fixtures differ
// from what the reference says (npm run conformance:reference, which CI runs when ../shared exists).
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '..');
export const FIXTURES = join(ROOT, 'test', 'fixtures');

type Json = Record<string, unknown>;

/** ../shared beside the clone (a git worktree sits one level deeper); BERTH_SHARED_DIR wins. */
export function referenceDir(): string | null {
  const candidates = [process.env.BERTH_SHARED_DIR, join(ROOT, '..', 'shared'), join(ROOT, '..', '..', 'shared')];
  for (const c of candidates) if (c && existsSync(join(c, 'reference'))) return join(c, 'reference');
  return null;
}

const readJson = (file: string) => JSON.parse(readFileSync(file, 'utf8')) as Json;

/** Keeps the listed keys that are present, in that order. */
function pick(obj: Json, keys: readonly string[]): Json {
  const out: Json = {};
  for (const k of keys) if (obj[k] !== undefined) out[k] = obj[k];
  return out;
}

/** One filter's verdict on one pool, without the oracle's log lines. */
function verdict(v: Json): Json {
  return pick(v, ['passes', 'reason']);
}

function cinderPool(p: Json): Json {
  const filters = Object.fromEntries(Object.entries(p.filters as Record<string, Json>).map(([name, v]) => [name, verdict(v)]));
  const out = pick(p, ['name', 'passes_all', 'state', 'capacity_factors']);
  out.filters = filters;
  if (p.spec_standard) out.spec_standard = pick(p.spec_standard as Json, ['applies', 'fits', 'lhs_provisioned_plus_size', 'rhs_total_x_unreserved_x_ratio']);
  return out;
}

function cinderWeighing(w: Json): Json {
  const weighers = (w.weighers as Json[]).map((x) => {
    const out = pick(x, ['name', 'multiplier', 'minval', 'maxval', 'error']);
    if (x.weights) out.weights = (x.weights as Json[]).map((y) => pick(y, ['name', 'raw', 'value', 'normalized', 'contribution']));
    return out;
  });
  return { ...pick(w, ['error']), weighers, ...pick(w, ['final']) };
}

/**
 * A Cinder case: what was asked (the pools' reports, the configuration, the request) and what Cinder 21 decided,
 * per pool (state after ingest, capacity factors, each filter's verdict), per weigher (raw, normalised), and the
 * chosen pool; get_pools views where recorded. Log lines and tracebacks are left out.
 */
function cinderCase(id: string, input: Json, recorded: Json): Json {
  const expected: Json = pick(recorded, ['chosen', 'fatal_stage', 'fatal']);
  if (recorded.effective_config) expected.effective_config = recorded.effective_config;
  if (recorded.pools) expected.pools = (recorded.pools as Json[]).map(cinderPool);
  if (recorded.schedule) expected.schedule = pick(recorded.schedule as Json, ['chosen', 'filtered', 'ordered', 'error']);
  if (recorded.weighing) expected.weighing = cinderWeighing(recorded.weighing as Json);
  if (recorded.get_pools) expected.get_pools = recorded.get_pools;
  return {
    id,
    description: input.description,
    source: `OpenStack Cinder ${String(recorded.cinder_version)} scheduler`,
    input: pick(input, ['config', 'backends', 'pools', 'request']),
    expected,
  };
}

/** A Placement request (microversion, query string) and the exact answer Placement 8 gave. */
function placementEntry(e: Json): Json {
  const answer: Json = pick(e, ['status', 'title', 'detail', 'code', 'max_version', 'min_version']);
  if (e.n_candidates !== undefined) answer.candidates = e.n_candidates;
  return { request: { microversion: e.mv, query: e.qs }, answer };
}

/** Every fixture file the reference yields: path under test/fixtures → content. */
export function generate(reference: string): Map<string, string> {
  const files = new Map<string, string>();
  const text = (v: unknown) => JSON.stringify(v, null, 2) + '\n';
  const casesDir = join(reference, 'cinder-cases');
  for (const f of readdirSync(casesDir).filter((n) => n.endsWith('.json') && !n.endsWith('.expected.json')).sort()) {
    const id = f.replace(/\.json$/, '');
    const c = cinderCase(id, readJson(join(casesDir, f)), readJson(join(casesDir, `${id}.expected.json`)));
    files.set(join('cinder-cases', `${id}.json`), text(c));
  }
  const errors = JSON.parse(readFileSync(join(reference, 'placement-errors.json'), 'utf8')) as Json[];
  files.set('placement-errors.json', text({
    source: 'OpenStack Placement 8.0.0, GET /allocation_candidates',
    note: '@agg:<name> stands for the UUID of an aggregate the test creates',
    cases: errors.map(placementEntry),
  }));
  return files;
}

function main(): void {
  const check = process.argv.includes('--check');
  const reference = referenceDir();
  if (!reference) {
    console.error('reference-fixtures: no reference material beside the clone (../shared/reference); set BERTH_SHARED_DIR');
    process.exit(2);
  }
  const wanted = generate(reference);
  const managed = ['cinder-cases', 'placement-errors.json'];
  const present = new Set<string>();
  for (const m of managed) {
    const p = join(FIXTURES, m);
    if (!existsSync(p)) continue;
    if (m.endsWith('.json')) present.add(m);
    else for (const f of readdirSync(p)) present.add(join(m, f));
  }
  if (check) {
    const drift: string[] = [];
    for (const [file, content] of wanted) {
      const p = join(FIXTURES, file);
      if (!existsSync(p)) drift.push(`missing ${file}`);
      else if (readFileSync(p, 'utf8') !== content) drift.push(`differs ${file}`);
    }
    for (const file of present) if (!wanted.has(file)) drift.push(`not in the reference ${file}`);
    if (drift.length > 0) {
      console.error(`conformance:reference: test/fixtures drifted from ${reference}:\n  ${drift.join('\n  ')}\n` +
        'Run `npm run fixtures:reference` and review the diff.');
      process.exit(1);
    }
    console.log(`conformance:reference: ${wanted.size} fixture files equal ${relative(ROOT, reference) || reference}`);
    return;
  }
  rmSync(join(FIXTURES, 'cinder-cases'), { recursive: true, force: true });
  for (const [file, content] of wanted) {
    mkdirSync(join(FIXTURES, file, '..'), { recursive: true });
    writeFileSync(join(FIXTURES, file), content);
  }
  console.log(`wrote ${wanted.size} fixture files under ${relative(ROOT, FIXTURES)}`);
}

main();
