// Berth scaled out on PostgreSQL: built Berth processes (dist/) on one scratch database. Prints
//  - volume claims/s over HTTP with 16 clients on one instance, then spread over three (each claim commits to the
//    database before it is answered; all on one pool, so the instances compete for the same record);
//  - how soon a write acknowledged by one instance is visible on another while that load runs: a probe claims a
//    volume on instance A and polls GET /volumes/{id} on instance B until it answers (goal: p99 ≤ 1 s, typically
//    well under 100 ms); the poll itself costs ≈ 0.3 ms, so figures are upper bounds.
// PostgreSQL: BERTH_BENCH_DATABASE_URL, else BERTH_TEST_DATABASE_URL, else postgres://postgres@127.0.0.1:5432/test
// (a scratch database is created and dropped there); skipped with one line when unreachable.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { Agent } from 'node:http';
import { createWriteStream, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { scratchDatabase } from './scratch-database.ts';
import { formatLoad, httpLoad, send, type LoadRequest, type LoadResult } from './http-load.ts';
import { nowMs, percentile } from './stats.ts';

const ROOT = resolve(import.meta.dirname, '..');
const CLIENTS = 16;
const CLAIMS = 6_000;
const PROBES = 200;

interface Instance { child: ChildProcess; base: string; dir: string }
/** Instances the bench itself stops: their exit is no news. */
const stopping = new WeakSet<ChildProcess>();

function start(url: string): Promise<Instance> {
  const dir = mkdtempSync(join(tmpdir(), 'berth-scale-bench-'));
  const child = spawn(process.execPath, [join(ROOT, 'dist', 'main.js')], {
    env: {
      ...process.env, BERTH_PORT: '0', BERTH_HOST: '127.0.0.1', BERTH_CONFIG: '', BERTH_DATA_DIR: dir,
      BERTH_DATABASE_URL: url, BERTH_LOG_LEVEL: 'info', BERTH_MAX_EVENT_LOOP_DELAY_MS: '0',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolveStart, reject) => {
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const m = /listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(out);
      if (m) {
        child.stdout!.removeAllListeners('data');
        // Kept for a post-mortem: the last lines are printed when an instance dies during the run.
        child.stdout!.pipe(createWriteStream(join(dir, 'berth.log')));
        resolveStart({ child, base: m[1]!, dir });
      }
    });
    child.once('exit', (code) => {
      reject(new Error(`berth exited ${code} before listening`));
      if (!stopping.has(child)) {
        const log = existsSync(join(dir, 'berth.log')) ? readFileSync(join(dir, 'berth.log'), 'utf8').split('\n').slice(-5).join('\n') : out;
        console.log(`an instance died (exit ${code}); its last lines:\n${log}`);
      }
    });
  });
}

async function stop(i: Instance): Promise<void> {
  const exited = new Promise((r) => i.child.once('exit', r));
  stopping.add(i.child);
  i.child.kill('SIGTERM');
  await exited;
  rmSync(i.dir, { recursive: true, force: true });
}

const portOf = (i: Instance) => Number(new URL(i.base).port);
const claim = (id: string): LoadRequest => ({ method: 'POST', path: '/volumes/schedule', body: JSON.stringify({ id, size: 1 }) });

/** CLAIMS volume claims from CLIENTS clients, spread over the instances. */
function load(instances: Instance[], prefix: string): Promise<LoadResult> {
  return httpLoad(instances.map(portOf), (i) => claim(`${prefix}-${i}`), { connections: CLIENTS, maxRequests: CLAIMS, maxSeconds: 120 });
}

/** While `busy` runs: PROBES writes on `from`, each polled on `to` until visible; visibility latencies in ms. */
async function probe(from: Instance, to: Instance, busy: Promise<unknown>): Promise<number[]> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const latencies: number[] = [];
  let done = false;
  void busy.then(() => { done = true; });
  for (let i = 0; i < PROBES && !done; i++) {
    const id = `probe-${i}`;
    // A claim that lost to other instances too often (409) is retried, as a client would.
    for (let status = 0; status !== 200;) {
      status = await send(portOf(from), agent, claim(id));
      if (status !== 200 && status !== 409) throw new Error(`probe ${id}: ${status}`);
    }
    const acknowledged = nowMs();
    while (await send(portOf(to), agent, { method: 'GET', path: `/volumes/${id}` }) !== 200);
    latencies.push(nowMs() - acknowledged);
  }
  agent.destroy();
  return latencies;
}

export async function run(): Promise<void> {
  const db = await scratchDatabase('berth_bench_scale');
  if ('skipped' in db) {
    console.log(`${db.skipped}: scale-out bench skipped`);
    return;
  }
  const url = db.url;
  const build = spawnSync(process.execPath, [join(ROOT, 'scripts', 'build.mjs'), '--if-stale'], { cwd: ROOT, stdio: 'inherit' });
  if (build.status !== 0) throw new Error('build failed');
  const instances: Instance[] = [];
  try {
    instances.push(...(await Promise.all([start(url), start(url), start(url)])));
    const [a, b] = instances as [Instance, Instance];
    const agent = new Agent({ keepAlive: false });
    const status = await send(portOf(a), agent, {
      method: 'PUT', path: '/backends/bench@lvm', body: JSON.stringify({
        volume_backend_name: 'lvm',
        pools: [{ pool_name: 'big', total_capacity_gb: 1e9, free_capacity_gb: 1e9, thin_provisioning_support: true }],
      }),
    });
    if (status !== 200) throw new Error(`backend report refused: ${status}`);
    // Let every instance see the pool before the load starts.
    for (const i of instances) while (await send(portOf(i), agent, { method: 'POST', path: '/volumes/schedule?dry_run=true', body: JSON.stringify({ size: 1 }) }) !== 200);
    const one = await load([a], 'one');
    console.log(formatLoad(`claims over HTTP, one instance, ${CLIENTS} clients`, one));
    const busy = load(instances, 'three');
    const visible = await probe(a, b, busy);
    const three = await busy;
    console.log(`${formatLoad(`claims over HTTP, three instances, ${CLIENTS} clients`, three)} (${(three.rate / one.rate).toFixed(2)}× one instance)`);
    visible.sort((x, y) => x - y);
    console.log(`another instance's write visible after (under that load, n=${visible.length}): ` +
      `p50=${percentile(visible, 50).toFixed(1)}ms p99=${percentile(visible, 99).toFixed(1)}ms ` +
      `max=${visible[visible.length - 1]!.toFixed(1)}ms (goal: p99 ≤ 1000 ms)`);
  } finally {
    await Promise.all(instances.map(stop));
    await db.drop();
  }
}
