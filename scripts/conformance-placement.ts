// npm run conformance:placement [FILTER]: Placement 8.0.0's own gabbi suite over HTTP against Berth.
// Reads ../shared/conformance/placement beside the clone (never copied into the repository): for each file of
// files.tsv a fresh Berth (in-memory store) on a free port, the file's fixture state loaded through the Placement
// API as the conformance README describes, then `gabbi-run` on a copy of the YAML without its `fixtures:` key.
// Prints passed/failed per file and a total; exits non-zero on any failure. FILTER keeps files whose name
// contains it (development).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const REPO = resolve(import.meta.dirname, '..');

/** ../shared beside the clone; a git worktree sits one level deeper. BERTH_SHARED_DIR wins. */
function conformanceDir(): string {
  const candidates = [process.env.BERTH_SHARED_DIR, join(REPO, '..', 'shared'), join(REPO, '..', '..', 'shared')];
  for (const c of candidates) if (c && existsSync(join(c, 'conformance', 'placement', 'files.tsv'))) return join(c, 'conformance', 'placement');
  throw new Error(`cannot find shared/conformance/placement beside ${REPO} (set BERTH_SHARED_DIR)`);
}

// ---------------------------------------------------------------- fixture state

type InventoryValue = number | { total: number; reserved?: number; min_unit?: number; max_unit?: number; step_size?: number; allocation_ratio?: number };

interface Fixture {
  resource_classes: string[];
  traits: string[];
  aggregates: Record<string, string>;
  providers: Array<{
    name: string;
    uuid?: string;
    parent?: string;
    inventories?: Record<string, InventoryValue>;
    traits?: string[];
    aggregates?: string[];
  }>;
  allocations: Record<string, { project_id: string; user_id: string; resources: Record<string, Record<string, number>> }>;
  env: Record<string, string>;
}

const NAMESPACE = '6f1a4c52-2d0e-4f7e-9a51-0d5c3e7b1a00';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Python's uuid.uuid5(namespace, name). */
export function uuid5(namespace: string, name: string): string {
  const bytes = createHash('sha1').update(Buffer.from(namespace.replace(/-/g, ''), 'hex')).update(name, 'utf8').digest().subarray(0, 16);
  bytes[6] = (bytes[6]! & 0x0f) | 0x50;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const h = bytes.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

const asUuid = (kind: 'rp' | 'agg' | 'consumer', name: string) => (UUID.test(name) ? name : uuid5(NAMESPACE, `${kind}:${name}`));

class Client {
  constructor(private readonly base: string) {}
  async call(method: string, path: string, body: unknown, mv: string): Promise<{ status: number; body: unknown }> {
    const res = await fetch(this.base + path, {
      method,
      headers: {
        'x-auth-token': 'admin', 'openstack-api-version': `placement ${mv}`, accept: 'application/json',
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch { /* keep the text */ }
    return { status: res.status, body: parsed };
  }
  async must(method: string, path: string, body: unknown, mv: string): Promise<Record<string, unknown>> {
    const r = await this.call(method, path, body, mv);
    if (r.status >= 300) throw new Error(`fixture: ${method} ${path} → ${r.status} ${JSON.stringify(r.body)}`);
    return (r.body ?? {}) as Record<string, unknown>;
  }
}

/** Builds the fixture's state through the Placement API, in the order upstream's fixture classes build it. */
async function loadFixture(client: Client, fx: Fixture): Promise<void> {
  for (const rc of fx.resource_classes) await client.must('PUT', `/resource_classes/${rc}`, undefined, '1.7');
  for (const t of fx.traits) await client.must('PUT', `/traits/${t}`, undefined, '1.6');
  const byName = new Map<string, string>();
  for (const p of fx.providers) byName.set(p.name, p.uuid ?? asUuid('rp', p.name));
  const providerUuid = (ref: string) => byName.get(ref) ?? asUuid('rp', ref);
  const aggUuid = (ref: string) => fx.aggregates[ref] ?? asUuid('agg', ref);

  // Parents first.
  const created = new Set<string>();
  const pending = [...fx.providers];
  while (pending.length > 0) {
    const i = pending.findIndex((p) => !p.parent || created.has(providerUuid(p.parent)));
    if (i < 0) throw new Error('fixture: providers whose parents are missing');
    const p = pending.splice(i, 1)[0]!;
    const uuid = providerUuid(p.name);
    await client.must('POST', '/resource_providers', {
      name: p.name, uuid, ...(p.parent ? { parent_provider_uuid: providerUuid(p.parent) } : {}),
    }, '1.20');
    created.add(uuid);
    // The fixture sets aggregates without a generation bump (the pre-1.19 form).
    if (p.aggregates && p.aggregates.length > 0) {
      await client.must('PUT', `/resource_providers/${uuid}/aggregates`, p.aggregates.map(aggUuid), '1.18');
    }
  }
  for (const p of fx.providers) {
    const uuid = providerUuid(p.name);
    const inventories: Record<string, unknown> = {};
    let generation = (await client.must('GET', `/resource_providers/${uuid}`, undefined, '1.20')).generation as number;
    // One class at a time: one generation bump each, as upstream's add_inventory.
    for (const [rc, v] of Object.entries(p.inventories ?? {})) {
      inventories[rc] = typeof v === 'number' ? { total: v } : v;
      const r = await client.must('PUT', `/resource_providers/${uuid}/inventories`, { resource_provider_generation: generation, inventories }, '1.20');
      generation = r.resource_provider_generation as number;
    }
    if (p.traits && p.traits.length > 0) {
      await client.must('PUT', `/resource_providers/${uuid}/traits`, { resource_provider_generation: generation, traits: p.traits }, '1.20');
    }
  }
  // One consumer at a time, without a consumer type (1.37).
  for (const [consumer, a] of Object.entries(fx.allocations)) {
    const allocations: Record<string, { resources: Record<string, number> }> = {};
    for (const [rp, resources] of Object.entries(a.resources)) allocations[providerUuid(rp)] = { resources };
    await client.must('PUT', `/allocations/${asUuid('consumer', consumer)}`, {
      allocations, consumer_generation: null, project_id: a.project_id, user_id: a.user_id,
    }, '1.37');
  }
}

// ---------------------------------------------------------------- processes

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

async function startBerth(port: number, tokensFile: string, logFile: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, [join(REPO, 'dist', 'main.js')], {
    cwd: REPO,
    env: {
      ...process.env, BERTH_HOST: '127.0.0.1', BERTH_PORT: String(port), BERTH_DATA_DIR: ':memory:',
      BERTH_LOG_LEVEL: 'warn', BERTH_AUTH_TOKENS_FILE: tokensFile,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const log: Buffer[] = [];
  child.stdout!.on('data', (d: Buffer) => log.push(d));
  child.stderr!.on('data', (d: Buffer) => log.push(d));
  child.once('exit', () => writeFileSync(logFile, Buffer.concat(log)));
  for (let i = 0; i < 200; i++) {
    if (child.exitCode !== null) throw new Error(`berth exited (${child.exitCode}): ${Buffer.concat(log).toString()}`);
    try {
      await fetch(`http://127.0.0.1:${port}/healthz`);
      return child;
    } catch {
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  child.kill('SIGKILL');
  throw new Error('berth did not start within 10 s');
}

function stop(child: ChildProcess): Promise<void> {
  return new Promise((done) => {
    if (child.exitCode !== null) return done();
    child.once('exit', () => done());
    child.kill('SIGTERM');
  });
}

function run(cmd: string, args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number; output: string }> {
  return new Promise((done) => {
    const child = spawn(cmd, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    child.stdout.on('data', (d: Buffer) => out.push(d));
    child.stderr.on('data', (d: Buffer) => out.push(d));
    child.once('exit', (code) => done({ code: code ?? 1, output: Buffer.concat(out).toString() }));
  });
}

/** The unittest summary gabbi-run prints: "Ran N tests", then "OK" or "FAILED (failures=F, errors=E, …)". */
export function parseGabbiSummary(output: string, expected: number): { passed: number; failed: number } {
  const ran = Number(/Ran (\d+) tests?/.exec(output)?.[1] ?? 0);
  const count = (key: string) => Number(new RegExp(`${key}=(\\d+)`).exec(output)?.[1] ?? 0);
  const bad = count('failures') + count('errors') + count('skipped') + count('unexpected successes');
  const passed = Math.max(0, ran - bad);
  return { passed, failed: Math.max(expected, ran) - passed };
}

/** The YAML without its top-level `fixtures:` key (an in-process Python fixture upstream). */
export function withoutFixtures(yaml: string): string {
  const lines = yaml.split('\n');
  const out: string[] = [];
  let skipping = false;
  for (const line of lines) {
    if (/^fixtures\s*:/.test(line)) {
      skipping = true;
      continue;
    }
    if (skipping && (line.trim() === '' || /^\s/.test(line))) continue;
    skipping = false;
    out.push(line);
  }
  return out.join('\n');
}

// ---------------------------------------------------------------- main

async function main(): Promise<number> {
  const dir = conformanceDir();
  const filter = process.argv[2];
  const rows = readFileSync(join(dir, 'files.tsv'), 'utf8').trim().split('\n').slice(1)
    .map((line) => line.split('\t'))
    .map(([file, fixture, tests]) => ({ file: file!, fixture: fixture!, tests: Number(tests) }))
    .filter((r) => !filter || r.file.includes(filter));
  if (rows.length === 0) {
    console.error(`no conformance file matches ${filter}`);
    return 2;
  }
  if (spawnSync('gabbi-run', ['--help'], { stdio: 'ignore' }).status !== 0) {
    console.error('gabbi-run not found (apt-get install -y python3-gabbi)');
    return 2;
  }
  const build = spawnSync('npm', ['run', 'build'], { cwd: REPO, stdio: 'inherit' });
  if (build.status !== 0) return build.status ?? 1;

  const work = mkdtempSync(join(tmpdir(), 'berth-conformance-'));
  const logs = join(work, 'logs');
  mkdirSync(logs);
  // noauth2 as upstream sees it: "admin" (also "admin:admin") is an administrator, "user" has no role.
  const sha = (s: string) => createHash('sha256').update(s).digest('hex');
  const tokensFile = join(work, 'tokens.json');
  writeFileSync(tokensFile, JSON.stringify({
    tokens: [
      { name: 'admin', sha256: sha('admin'), roles: ['admin'] },
      { name: 'admin:admin', sha256: sha('admin:admin'), roles: ['admin'] },
      { name: 'user', sha256: sha('user'), roles: [] },
    ],
  }, null, 2));

  let totalPassed = 0;
  let totalFailed = 0;
  const failures: string[] = [];
  for (const row of rows) {
    const fixture = JSON.parse(readFileSync(join(dir, 'fixtures', `${row.fixture}.json`), 'utf8')) as Fixture;
    const port = await freePort();
    const berthLog = join(logs, `${row.file}.berth.log`);
    const child = await startBerth(port, tokensFile, berthLog);
    let result: { passed: number; failed: number };
    let output: string;
    try {
      await loadFixture(new Client(`http://127.0.0.1:${port}`), fixture);
      const yamlFile = join(work, row.file);
      writeFileSync(yamlFile, withoutFixtures(readFileSync(join(dir, 'gabbits', row.file), 'utf8')));
      const ran = await run('gabbi-run', [`http://127.0.0.1:${port}`, '--', yamlFile], { ...process.env, ...fixture.env });
      output = ran.output;
      result = parseGabbiSummary(output, row.tests);
      if (ran.code !== 0 && result.failed === 0) result = { passed: result.passed, failed: Math.max(1, row.tests - result.passed) };
    } catch (err) {
      output = String((err as Error).stack ?? err);
      result = { passed: 0, failed: row.tests };
    } finally {
      await stop(child);
    }
    writeFileSync(join(logs, `${row.file}.gabbi.log`), output);
    totalPassed += result.passed;
    totalFailed += result.failed;
    const mark = result.failed === 0 ? 'ok  ' : 'FAIL';
    console.log(`${mark} ${row.file.padEnd(46)} ${String(result.passed).padStart(3)} passed ${String(result.failed).padStart(3)} failed`);
    if (result.failed > 0) {
      failures.push(row.file);
      for (const line of output.split('\n')) if (/^\s*(✗|FAIL:|ERROR:)/.test(line)) console.log(`       ${line.trim()}`);
    }
  }
  console.log(`\ntotal: ${totalPassed} passed, ${totalFailed} failed (${rows.length} files); logs in ${logs}`);
  return totalFailed === 0 ? 0 : 1;
}

if (import.meta.filename === process.argv[1]) process.exit(await main());
