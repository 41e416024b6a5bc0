// Volumes on several Berth instances sharing one PostgreSQL database: each sees the other's writes through the
// change feed, and claims racing for the same capacity are arbitrated by the database (the pool record every claim
// on a pool writes and expects): exactly as many win as fit, a loser takes the next pool or is refused, never an
// over-commit. Without a server this file is skipped with one line.
import t, { type Test } from 'tap';
import { parseConfig } from '../../src/config.ts';
import { openPostgresStore, type PostgresStore } from '../../src/store/postgres.ts';
import { VolumesService } from '../../src/volumes/service.ts';
import { createTestDatabase, requirePostgres } from '../store/postgres-helper.ts';

const SETTINGS = parseConfig({ data_dir: ':memory:' });
const THICK = { volume_type: { extra_specs: { 'provisioning:type': 'thick' } } };
const CLAIM = { dryRun: false, explain: false };

/** `count` instances (store + service) on one new database, closed at the end of the test. */
async function instances(t: Test, count: number): Promise<Array<{ store: PostgresStore; service: VolumesService }>> {
  const { url } = await createTestDatabase(t);
  const out = [];
  for (let i = 0; i < count; i++) {
    const store = await openPostgresStore({ url, poolSize: 3 });
    const service = await VolumesService.open(SETTINGS, store, Date.now);
    t.teardown(async () => {
      service.close();
      await store.close();
    });
    out.push({ store, service });
  }
  return out;
}

async function caughtUp(all: ReadonlyArray<{ store: PostgresStore }>): Promise<void> {
  await Promise.all(all.map((i) => i.store.catchUp()));
}

if (await requirePostgres(t)) {
  t.test('a report, a claim and a release on one instance are what the other answers', async (t) => {
    const all = await instances(t, 2);
    const [a, b] = all.map((i) => i.service) as [VolumesService, VolumesService];
    await a.applyReport('h@x', { pools: [{ pool_name: 'p', total_capacity_gb: 100, free_capacity_gb: 50, thick_provisioning_support: true }] });
    await caughtUp(all);
    const placed = await b.schedule({ id: 'v', size: 20, ...THICK }, CLAIM);
    t.equal(placed.pool, 'h@x#p', 'a decision there sees the report made here');
    await caughtUp(all);
    t.same(a.poolDetail(a.pool('h@x#p')!), b.poolDetail(b.pool('h@x#p')!), 'one view of the pool');
    t.match(a.poolDetail(a.pool('h@x#p')!), { allocated_capacity_gb: 20, current: { free_capacity_gb: 30 } });
    await a.deleteVolume('v');
    await caughtUp(all);
    t.same(b.listVolumes(), []);
    t.equal(b.pool('h@x#p')!.allocated, 0);
  });

  t.test('two instances racing for the last room of a pool: one wins, the other is refused', async (t) => {
    const all = await instances(t, 2);
    const [a, b] = all.map((i) => i.service) as [VolumesService, VolumesService];
    await a.applyReport('h@x', { pools: [{ pool_name: 'p', total_capacity_gb: 100, free_capacity_gb: 10, thick_provisioning_support: true }] });
    await caughtUp(all);
    const outcomes = await Promise.all([a.schedule({ id: 'a', size: 6, ...THICK }, CLAIM), b.schedule({ id: 'b', size: 6, ...THICK }, CLAIM)]);
    t.same(outcomes.map((o) => o.outcome).sort(), ['no_valid_backend', 'placed']);
  });

  t.test('the loser of a race for one pool takes the next one', async (t) => {
    const all = await instances(t, 2);
    const [a, b] = all.map((i) => i.service) as [VolumesService, VolumesService];
    const pool = { total_capacity_gb: 100, free_capacity_gb: 5, thick_provisioning_support: true };
    await a.applyReport('h@x', { pools: [{ pool_name: 'p', ...pool }, { pool_name: 'q', ...pool }] });
    await caughtUp(all);
    const outcomes = await Promise.all([a.schedule({ id: 'a', size: 5, ...THICK }, CLAIM), b.schedule({ id: 'b', size: 5, ...THICK }, CLAIM)]);
    t.same(outcomes.map((o) => o.outcome), ['placed', 'placed']);
    t.same(outcomes.map((o) => o.pool).sort(), ['h@x#p', 'h@x#q'], 'one pool each');
  });

  t.test('many claims from three instances for 10 GiB: never more than fits, the same figures everywhere', async (t) => {
    const all = await instances(t, 3);
    const services = all.map((i) => i.service);
    await services[0]!.applyReport('h@x', { pools: [{ pool_name: 'p', total_capacity_gb: 100, free_capacity_gb: 10, thick_provisioning_support: true }] });
    await caughtUp(all);
    const outcomes = (await Promise.all(services.flatMap((s, i) =>
      Array.from({ length: 8 }, (_, j) => s.schedule({ id: `v${i}-${j}`, size: 1, ...THICK }, CLAIM))))).map((o) => o.outcome);
    const placed = outcomes.filter((o) => o === 'placed').length;
    t.ok(outcomes.every((o) => o === 'placed' || o === 'no_valid_backend' || o === 'conflict'), 'placed, refused or conflict');
    t.ok(placed <= 10, `never over-committed (${placed} placed)`);
    if (outcomes.includes('no_valid_backend')) t.equal(placed, 10, 'refused only once full');
    await caughtUp(all);
    for (const s of services) {
      t.equal(s.listVolumes().length, placed);
      t.match(s.poolDetail(s.pool('h@x#p')!), { allocated_capacity_gb: placed, current: { free_capacity_gb: 10 - placed } });
    }
    const stored = await all[0]!.store.load('volumes.volume');
    t.equal(stored.length, placed, 'the database holds exactly the acknowledged claims');
  });
}
