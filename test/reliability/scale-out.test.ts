// Several Berth processes on one PostgreSQL database: one source of truth. They start together on an empty database
// (migrations under the advisory lock), see each other's writes through the change feed, never over-commit when
// they race for the last GiB, VCPU or byte, lose no acknowledged claim when one is killed with SIGKILL under load,
// and ride out a database outage (writes 503 with Retry-After, reads from memory, /readyz 503, then catch up).
// Convergence is waited for as an event (every instance's applied feed position reaches the database's head),
// never as a time.
import t, { type Test } from 'tap';
import { buildDist, runToExit, startBerth, type RunningBerth } from '../process-helper.ts';
import { adminQuery, createTestDatabase, databaseUrl, requirePostgres, startProxy } from '../store/postgres-helper.ts';
import { call, drive, PLACEMENT, prng, seed, verify, type Acked } from './claims.ts';

t.setTimeout(600_000);
const GiB = 2 ** 30;

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls until `check` holds (the test's timeout bounds it): for events another process makes happen. */
async function until(check: () => Promise<boolean>): Promise<void> {
  while (!(await check())) await pause(10);
}

async function feedPosition(base: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  return Number(/^berth_store_feed_position (\d+)/m.exec(text)?.[1] ?? -1);
}

/** Every instance has applied everything committed so far. */
async function converged(url: string, berths: readonly RunningBerth[]): Promise<void> {
  const head = Number((await adminQuery<{ seq: string }>('SELECT seq FROM feed WHERE id = 1', [], url)).rows[0]!.seq);
  for (const b of berths) await until(async () => (await feedPosition(b.base)) >= head);
}

async function startAll(t: Test, mainJs: string, env: Array<Record<string, string>>): Promise<RunningBerth[]> {
  const berths = await Promise.all(env.map((e) => startBerth(mainJs, { BERTH_DATA_DIR: t.testdir(), ...e })));
  t.teardown(() => { for (const b of berths) b.child.kill('SIGKILL'); });
  return berths;
}

const ok = (r: { status: number; body: unknown }, what: string) => {
  if (r.status >= 300) throw new Error(`${what}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body as Record<string, any>;
};

/** Round-robin over the instances, all at once. */
function spread<T>(berths: readonly RunningBerth[], n: number, one: (b: RunningBerth, i: number) => Promise<T>): Promise<T[]> {
  return Promise.all(Array.from({ length: n }, (_, i) => one(berths[i % berths.length]!, i)));
}

if (await requirePostgres(t)) {
  let mainJs = '';
  t.before(async () => {
    mainJs = await buildDist((fn) => t.teardown(fn));
  });

  t.test('three instances start together on an empty database, migrate once and see each other\'s writes', async (t) => {
    const db = await createTestDatabase(t);
    const berths = await startAll(t, mainJs, [1, 2, 3].map(() => ({ BERTH_DATABASE_URL: db.url })));
    for (const b of berths) t.equal((await fetch(`${b.base}/readyz`)).status, 200, `${b.base} ready`);
    const versions = await adminQuery<{ n: string; distinct: string }>(
      'SELECT count(*) AS n, count(DISTINCT version) AS distinct FROM schema_migrations', [], db.url);
    t.equal(versions.rows[0]!.n, versions.rows[0]!.distinct, 'each migration recorded once');
    const [a, b, c] = berths as [RunningBerth, RunningBerth, RunningBerth];
    ok(await call(a.base, 'PUT', '/backends/seen@lvm', {
      volume_backend_name: 'lvm', pools: [{ pool_name: 'seen', total_capacity_gb: 10, free_capacity_gb: 10 }],
    }), 'report on A');
    ok(await call(b.base, 'PUT', '/settings/volumes', { max_over_subscription_ratio: 3 }), 'settings on B');
    const trait = await fetch(`${c.base}/traits/CUSTOM_SEEN`, { method: 'PUT', headers: PLACEMENT });
    t.equal(trait.status, 201, 'trait on C');
    await converged(db.url, berths);
    for (const x of berths) {
      const pools = ok(await call(x.base, 'GET', '/pools'), 'pools').pools as Array<{ name: string }>;
      t.same(pools.map((p) => p.name), ['seen@lvm#seen'], `${x.base}: the pool A was told about`);
      const settings = ok(await call(x.base, 'GET', '/settings/volumes'), 'settings');
      t.equal(settings.settings.max_over_subscription_ratio, 3, `${x.base}: the setting B changed`);
      t.equal((await fetch(`${x.base}/traits/CUSTOM_SEEN`, { headers: PLACEMENT })).status, 204, `${x.base}: the trait C created`);
    }
  });

  t.test('racing for the last capacity on three instances never over-commits, in any dialect', async (t) => {
    const db = await createTestDatabase(t);
    const berths = await startAll(t, mainJs, [1, 2, 3].map(() => ({ BERTH_DATABASE_URL: db.url })));
    const [a] = berths as [RunningBerth];

    // Volumes: a thick 100 GiB pool; 10 GiB volumes.
    ok(await call(a.base, 'PUT', '/backends/race@lvm', {
      volume_backend_name: 'lvm',
      pools: [{ pool_name: 'race', total_capacity_gb: 100, free_capacity_gb: 100, reserved_percentage: 0, thick_provisioning_support: true }],
    }), 'backend');
    // Placement: 8 VCPU on one provider; one VCPU per consumer.
    const rp = 'ca11ab1e-0000-4000-8000-000000000001';
    const created = ok(await call(a.base, 'POST', '/resource_providers', { uuid: rp, name: 'race-cn' }, PLACEMENT), 'provider');
    ok(await call(a.base, 'PUT', `/resource_providers/${rp}/inventories`, {
      resource_provider_generation: created.generation, inventories: { VCPU: { total: 8 } },
    }, PLACEMENT), 'inventory');
    // Replicas: three nodes with one 20 GiB disk each; 3-replica volumes of 2 GiB.
    for (const node of ['r1', 'r2', 'r3']) {
      ok(await call(a.base, 'PUT', `/nodes/${node}`, {
        zone: `z-${node}`, region: 'r', tags: [], cordoned: false, ready: true, allowScheduling: true, evictionRequested: false,
        disks: {
          d: {
            path: '/var/lib/longhorn', type: 'filesystem', tags: [], allowScheduling: true, evictionRequested: false,
            storageMaximum: 20 * GiB, storageAvailable: 20 * GiB, storageReserved: 0, storageScheduled: 0,
          },
        },
      }), `node ${node}`);
    }
    await converged(db.url, berths);
    const volumeFits = ok(await call(a.base, 'POST', '/volumes/headroom', { size: 10 }), 'volumes headroom').fits as number;
    const replicaVolume = (name: string) => ({ volume: { name, size: 2 * GiB, numberOfReplicas: 3 } });
    const replicaFits = ok(await call(a.base, 'POST', '/replicas/headroom', replicaVolume('probe')), 'replicas headroom').fits as number;
    t.equal(volumeFits, 10, 'ten 10 GiB volumes fit the pool');
    t.ok(replicaFits > 0, `${replicaFits} replica volumes fit`);

    const volumes = await spread(berths, volumeFits * 3, (b, i) => call(b.base, 'POST', '/volumes/schedule', { id: `race-${i}`, size: 10 }));
    const consumer = (i: number) => `c0c0c0c0-0000-4000-8000-${i.toString(16).padStart(12, '0')}`;
    const allocations = await spread(berths, 24, (b, i) => call(b.base, 'PUT', `/allocations/${consumer(i)}`, {
      allocations: { [rp]: { resources: { VCPU: 1 } } }, project_id: 'p', user_id: 'u', consumer_generation: null, consumer_type: 'INSTANCE',
    }, PLACEMENT));
    const replicas = await spread(berths, replicaFits * 3, (b, i) => call(b.base, 'POST', '/replicas/schedule', replicaVolume(`rv-${i}`)));
    for (const r of [...volumes, ...allocations, ...replicas]) {
      t.ok(r.status < 500, `no 5xx (${r.status} ${r.status >= 500 ? JSON.stringify(r.body) : ''})`);
    }
    const won = (rs: Array<{ status: number }>, status: number) => rs.filter((r) => r.status === status).length;
    t.ok(won(allocations, 409) + won(allocations, 204) === allocations.length, 'allocations: made or refused as Placement refuses (409)');
    t.ok(won(volumes, 200) <= volumeFits, `volumes: ${won(volumes, 200)} placed, at most ${volumeFits}`);
    t.ok(won(allocations, 204) <= 8, `allocations: ${won(allocations, 204)} made, at most 8`);
    t.ok(won(replicas, 200) <= replicaFits, `replica volumes: ${won(replicas, 200)} placed, at most ${replicaFits}`);

    // Whatever lost to a conflict rather than to capacity is still there: one instance takes it, one at a time,
    // until refused; the totals are then exactly the capacity — nothing over-committed, nothing lost.
    let extra = 0;
    while ((await call(a.base, 'POST', '/volumes/schedule', { id: `top-${extra}`, size: 10 })).status === 200) extra++;
    t.equal(won(volumes, 200) + extra, volumeFits, 'volumes: exactly the capacity in the end');
    let extraVcpu = 0;
    while ((await call(a.base, 'PUT', `/allocations/${consumer(1000 + extraVcpu)}`, {
      allocations: { [rp]: { resources: { VCPU: 1 } } }, project_id: 'p', user_id: 'u', consumer_generation: null, consumer_type: 'INSTANCE',
    }, PLACEMENT)).status === 204) extraVcpu++;
    t.equal(won(allocations, 204) + extraVcpu, 8, 'allocations: exactly 8 VCPU in the end');
    let extraReplicas = 0;
    while ((await call(a.base, 'POST', '/replicas/schedule', replicaVolume(`top-${extraReplicas}`))).status === 200) extraReplicas++;
    t.equal(won(replicas, 200) + extraReplicas, replicaFits, 'replica volumes: exactly the headroom in the end');

    await converged(db.url, berths);
    for (const x of berths) {
      const pool = (ok(await call(x.base, 'GET', '/pools?detail=true'), 'pools').pools as Array<{ capabilities: Record<string, number> }>)[0]!;
      t.equal(pool.capabilities.allocated_capacity_gb, 10 * volumeFits, `${x.base}: the pool's allocated figure`);
      const usages = ok(await call(x.base, 'GET', `/resource_providers/${rp}/usages`, undefined, PLACEMENT), 'usages').usages;
      t.equal(usages.VCPU, 8, `${x.base}: VCPU used`);
      const listed = ok(await call(x.base, 'GET', '/replicas'), 'replicas').replicas as Array<{ node: string; size: number }>;
      t.equal(listed.length, 3 * replicaFits, `${x.base}: every replica listed`);
      for (const node of ['r1', 'r2', 'r3']) {
        const detail = ok(await call(x.base, 'GET', `/nodes/${node}`), 'node') as { disks: Record<string, { storageScheduled: number }> };
        t.equal(detail.disks.d!.storageScheduled, listed.filter((r) => r.node === node).reduce((s, r) => s + r.size, 0),
          `${x.base}: ${node}'s scheduled bytes are its replicas'`);
      }
    }
  });

  t.test('SIGKILL of one instance under load loses no acknowledged claim: the others hold them all', async (t) => {
    const db = await createTestDatabase(t);
    const berths = await startAll(t, mainJs, [1, 2, 3].map(() => ({ BERTH_DATABASE_URL: db.url })));
    const [a, b, c] = berths as [RunningBerth, RunningBerth, RunningBerth];
    await seed(a.base);
    await converged(db.url, berths);
    const acked: Acked = { volumes: new Map(), allocations: new Map(), replicas: new Map() };
    const rnd = prng(20261201);
    // Claims go to A and to B at once; A is killed after a number of acknowledgements, an event, not a time.
    let acks = 0;
    let reached!: () => void;
    const killPoint = new Promise<void>((r) => { reached = r; });
    const onA = drive(a, 0, acked, rnd, () => { if (++acks >= 30) reached(); });
    let stopB = false;
    const onB = (async () => {
      let i = 0;
      while (!stopB) {
        const r = await call(b.base, 'POST', '/volumes/schedule', { id: `b-${i++}`, size: 1 });
        if (r.status === 200) acked.volumes.set(`b-${i - 1}`, 1);
      }
    })();
    await killPoint;
    a.child.kill('SIGKILL');
    t.same(await a.exited, [null, 'SIGKILL'], 'A killed');
    await onA;
    stopB = true;
    await onB;
    await converged(db.url, [b, c]);
    await verify(t, b.base, acked, 'B after the kill');
    await verify(t, c.base, acked, 'C after the kill');
    const restarted = await startBerth(mainJs, { BERTH_DATA_DIR: t.testdir(), BERTH_DATABASE_URL: db.url });
    t.teardown(() => { restarted.child.kill('SIGKILL'); });
    await verify(t, restarted.base, acked, 'A restarted');
  });

  t.test('a database outage: writes 503 with Retry-After, reads from memory, not ready; then it catches up', async (t) => {
    const db = await createTestDatabase(t);
    const proxy = await startProxy(t);
    const [a, c] = await startAll(t, mainJs, [
      { BERTH_DATABASE_URL: db.url },
      {
        BERTH_DATABASE_URL: databaseUrl(db.name, proxy),
        BERTH_DATABASE_STATEMENT_TIMEOUT_MS: '1000', BERTH_DATABASE_CONNECT_TIMEOUT_MS: '1000',
      },
    ]) as [RunningBerth, RunningBerth];
    await seed(a.base);
    await converged(db.url, [a, c]);
    t.equal((await call(c.base, 'POST', '/volumes/schedule', { id: 'before', size: 1 })).status, 200, 'C writes while connected');

    for (const mode of ['reset', 'blackhole'] as const) {
      proxy.setMode(mode);
      const write = await fetch(`${c.base}/volumes/schedule`, {
        method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ id: `during-${mode}`, size: 1 }),
      });
      t.equal(write.status, 503, `${mode}: a write answers 503`);
      t.match(write.headers.get('retry-after'), /^\d+$/, `${mode}: with Retry-After`);
      t.match(write.headers.get('content-type'), /^application\/problem\+json/, `${mode}: in the route's error shape`);
      const placement = await fetch(`${c.base}/resource_providers`, {
        method: 'POST', headers: PLACEMENT, body: JSON.stringify({ name: `during-${mode}` }),
      });
      t.equal(placement.status, 503, `${mode}: a Placement write answers 503`);
      t.match((await placement.json()) as object, { errors: [{ status: 503 }] }, `${mode}: in Placement's error shape`);
      t.equal((await call(c.base, 'GET', '/volumes/before')).status, 200, `${mode}: reads answer from memory`);
      await until(async () => (await fetch(`${c.base}/readyz`)).status === 503);
      t.pass(`${mode}: /readyz is 503`);
      // Meanwhile the other instance goes on.
      ok(await call(a.base, 'POST', '/volumes/schedule', { id: `elsewhere-${mode}`, size: 1 }), 'A writes');
      proxy.setMode('forward');
      await until(async () => (await fetch(`${c.base}/readyz`)).status === 200);
      await converged(db.url, [a, c]);
      t.equal((await call(c.base, 'GET', `/volumes/elsewhere-${mode}`)).status, 200, `${mode}: C caught up with A's write`);
      t.equal((await call(c.base, 'GET', `/volumes/during-${mode}`)).status, 404, `${mode}: the refused write did not happen`);
    }
    t.equal((await call(c.base, 'POST', '/volumes/schedule', { id: 'after', size: 1 })).status, 200, 'C writes again');
  });

  t.test('outgrowing one machine: a Berth\'s data directory copied with store:copy serves the same state on PostgreSQL', async (t) => {
    const dataDir = t.testdir();
    const embedded = await startBerth(mainJs, { BERTH_DATA_DIR: dataDir });
    await seed(embedded.base);
    const acked: Acked = { volumes: new Map(), allocations: new Map(), replicas: new Map() };
    ok(await call(embedded.base, 'POST', '/volumes/schedule', { id: 'kept', size: 3 }), 'a volume');
    acked.volumes.set('kept', 3);
    ok(await call(embedded.base, 'PUT', '/settings/volumes', { max_over_subscription_ratio: 2 }), 'a setting');
    embedded.child.kill('SIGTERM');
    t.same(await embedded.exited, [0, null], 'stopped cleanly (store:copy refuses a running Berth\'s directory)');

    const db = await createTestDatabase(t);
    const copy = await runToExit(['--import', 'tsx', 'scripts/store-copy.ts', '--from', dataDir, '--to', db.url]);
    t.equal(copy.code, 0, copy.stderr);
    const [a, b] = await startAll(t, mainJs, [{ BERTH_DATABASE_URL: db.url }, { BERTH_DATABASE_URL: db.url }]) as [RunningBerth, RunningBerth];
    for (const x of [a, b]) {
      await verify(t, x.base, acked, `${x.base} on the copy`);
      t.equal(ok(await call(x.base, 'GET', '/settings/volumes'), 'settings').settings.max_over_subscription_ratio, 2, 'the setting came along');
    }
    ok(await call(a.base, 'POST', '/volumes/schedule', { id: 'after-copy', size: 1 }), 'new claims on the copy');
    await converged(db.url, [a, b]);
    t.equal((await call(b.base, 'GET', '/volumes/after-copy')).status, 200, 'seen by the other instance');
  });
}
