// Two Placement services (two instances) on one PostgreSQL database: each sees the other's writes through the
// change feed, and racing claims are arbitrated by the database — never more allocated than the inventory, a
// consumer never written twice from one generation, creations ordered as Placement orders them.
import t from 'tap';
import { PlacementError } from '../../src/placement/errors.ts';
import { PlacementService } from '../../src/placement/service.ts';
import { openPostgresStore } from '../../src/store/postgres.ts';
import type { ConsumerAllocationsBody } from '../../src/placement/schemas.ts';
import { createTestDatabase, requirePostgres } from '../store/postgres-helper.ts';
import { u } from './fixtures.ts';

const OPTIONS = { values: { enable_isolated_aggregate_filtering: false, randomize_allocation_candidates: false } };

async function instances(t: { teardown(fn: () => unknown): void }, n = 2) {
  const db = await createTestDatabase(t);
  const out: Array<{ service: PlacementService; catchUp: () => Promise<void> }> = [];
  for (let i = 0; i < n; i++) {
    const store = await openPostgresStore({ url: db.url, poolSize: 3 });
    const service = await PlacementService.open(store, OPTIONS);
    t.teardown(async () => {
      service.close();
      await store.close();
    });
    out.push({ service, catchUp: () => store.catchUp() });
  }
  return out;
}

const claim = (rp: string, vcpu: number, generation: number | null = null): ConsumerAllocationsBody =>
  ({ allocations: { [rp]: { resources: { VCPU: vcpu } } }, consumer_generation: generation, project_id: 'p', user_id: 'u', consumer_type: 'INSTANCE' }) as ConsumerAllocationsBody;

/** The HTTP status a write answers (204 when it succeeds). */
async function status(work: Promise<unknown>): Promise<{ status: number; code?: string; detail?: string }> {
  try {
    await work;
    return { status: 204 };
  } catch (err) {
    if (err instanceof PlacementError) return { status: err.status, code: err.code, detail: err.message };
    throw err;
  }
}

t.test('placement on PostgreSQL', async (t) => {
  if (!(await requirePostgres(t))) return;

  t.test('each instance sees the other\'s writes, custom traits in creation order on both', async (t) => {
    const [a, b] = await instances(t);
    const rp = u('shared-host');
    await a!.service.createTrait('CUSTOM_FIRST');
    await a!.service.createProvider({ name: 'shared', uuid: rp });
    await a!.service.setInventories(rp, 0, { VCPU: { total: 8 } }, 39);
    await b!.catchUp();
    // B creates a trait after A's (its creation counter was moved on by A's).
    await b!.service.createTrait('CUSTOM_SECOND');
    await b!.service.setProviderTraits(rp, 1, ['CUSTOM_SECOND']);
    await a!.catchUp();
    const custom = (s: PlacementService) => s.listTraits([]).filter((n) => n.startsWith('CUSTOM_'));
    t.same(custom(a!.service), ['CUSTOM_FIRST', 'CUSTOM_SECOND']);
    t.same(custom(b!.service), ['CUSTOM_FIRST', 'CUSTOM_SECOND']);
    t.equal(a!.service.provider(rp).generation, 2, 'the API generation moved once per write, whichever instance wrote');
    t.same([...a!.service.provider(rp).traits], ['CUSTOM_SECOND']);

    // Created at once on both, neither having seen the other's: both kept, in one order everywhere.
    await Promise.all([a!.service.createTrait('CUSTOM_X'), b!.service.createTrait('CUSTOM_Y')]);
    await Promise.all([a!.catchUp(), b!.catchUp()]);
    t.same(custom(a!.service), custom(b!.service));
    t.equal(custom(a!.service).length, 4);
    // A trait deleted on one instance while the other gives it to a provider: exactly one wins.
    const gen = b!.service.provider(rp).generation;
    const [del, put] = await Promise.all([status(a!.service.deleteTrait('CUSTOM_X')), status(b!.service.setProviderTraits(rp, gen, ['CUSTOM_X']))]);
    t.equal([del, put].filter((r) => r.status === 204).length, 1, `${JSON.stringify([del, put])}`);
    await Promise.all([a!.catchUp(), b!.catchUp()]);
    t.equal(a!.service.model.traits.has('CUSTOM_X'), b!.service.model.traits.has('CUSTOM_X'));
    t.equal(a!.service.provider(rp).traits.has('CUSTOM_X'), put.status === 204);
  });

  t.test('racing claims on two instances for the last VCPUs: exactly as many succeed as fit', async (t) => {
    const [a, b] = await instances(t);
    const rp = u('last-host');
    await a!.service.createProvider({ name: 'last', uuid: rp });
    await a!.service.setInventories(rp, 0, { VCPU: { total: 6 } }, 39);
    await b!.catchUp();
    const results = await Promise.all(Array.from({ length: 12 }, (_, i) =>
      status((i % 2 === 0 ? a : b)!.service.setAllocations(new Map([[u(`vm-${i}`), claim(rp, 1)]]), 39, true))));
    const ok = results.filter((r) => r.status === 204);
    t.equal(ok.length, 6, JSON.stringify(results));
    for (const r of results.filter((r) => r.status !== 204)) {
      t.equal(r.status, 409);
      t.ok(/would exceed the capacity/.test(r.detail!) || r.code === 'placement.concurrent_update', r.detail ?? '');
    }
    await Promise.all([a!.catchUp(), b!.catchUp()]);
    for (const s of [a!.service, b!.service]) {
      t.same(s.providerUsages(s.provider(rp)), { VCPU: 6 }, 'both instances count every claim');
      t.equal(s.provider(rp).generation, 1 + 6, 'one generation per claim');
    }
  });

  t.test('one consumer written from one generation on two instances: one wins, the other is a generation conflict', async (t) => {
    const [a, b] = await instances(t);
    const rp = u('host');
    await a!.service.createProvider({ name: 'host', uuid: rp });
    await a!.service.setInventories(rp, 0, { VCPU: { total: 8 } }, 39);
    const vm = u('vm');
    await a!.service.setAllocations(new Map([[vm, claim(rp, 1)]]), 39, true);
    await b!.catchUp();
    const [x, y] = await Promise.all([
      status(a!.service.setAllocations(new Map([[vm, claim(rp, 2, 1)]]), 39, true)),
      status(b!.service.setAllocations(new Map([[vm, claim(rp, 3, 1)]]), 39, true)),
    ]);
    t.same([x.status, y.status].sort(), [204, 409]);
    const loser = x.status === 409 ? x : y;
    t.equal(loser.code, 'placement.concurrent_update');
    t.match(loser.detail, /consumer generation conflict - expected 2 but got 1/);
    await Promise.all([a!.catchUp(), b!.catchUp()]);
    t.equal(a!.service.consumer(vm)!.generation, 2);
    t.same(a!.service.providerUsages(a!.service.provider(rp)), b!.service.providerUsages(b!.service.provider(rp)));

    // A provider deleted on one instance while the other creates a child under it: never a child without parent.
    const parent = u('parent');
    await a!.service.createProvider({ name: 'parent', uuid: parent });
    await b!.catchUp();
    const [del, child] = await Promise.all([
      status(a!.service.deleteProvider(parent)),
      status(b!.service.createProvider({ name: 'child', uuid: u('child'), parent_provider_uuid: parent })),
    ]);
    t.equal([del, child].filter((r) => r.status === 204).length, 1, JSON.stringify([del, child]));
    await Promise.all([a!.catchUp(), b!.catchUp()]);
    t.equal(a!.service.model.providers.has(parent), child.status === 204);
    t.equal(b!.service.model.providers.has(u('child')), child.status === 204);
  });
});
