// A real listening app: 60 PUT /allocations in flight at once racing for the last 10 VCPUs of a provider;
// generation conflicts answer 409 placement.concurrent_update and a retrying client then succeeds.
import t from 'tap';
import { build } from '../helper.ts';
import { createProviders, u } from './fixtures.ts';

const HEADERS = { 'content-type': 'application/json', 'openstack-api-version': 'placement 1.39', 'x-auth-token': 'x' };

t.test('60 concurrent claims for 10 VCPUs: exactly 10 succeed, 50 get 409', async (t) => {
  const app = await build(t);
  const rp = u('last-host');
  await createProviders(app, [{ uuid: rp, inventories: { VCPU: 10, MEMORY_MB: 4096 } }]);
  const base = await app.listen({ port: 0, host: '127.0.0.1' });
  const results = await Promise.all(Array.from({ length: 60 }, (_, i) =>
    fetch(`${base}/allocations/${u(`vm-${i}`)}`, {
      method: 'PUT', headers: HEADERS,
      body: JSON.stringify({
        allocations: { [rp]: { resources: { VCPU: 1, MEMORY_MB: 64 } } },
        consumer_generation: null, project_id: 'p', user_id: 'u', consumer_type: 'INSTANCE',
      }),
    }).then(async (r) => ({ status: r.status, body: r.status === 204 ? null : await r.json() as { errors: Array<{ code: string; detail: string }> } }))));
  const ok = results.filter((r) => r.status === 204);
  const refused = results.filter((r) => r.status === 409);
  t.equal(ok.length, 10);
  t.equal(refused.length, 50);
  for (const r of refused) {
    t.equal(r.body!.errors[0]!.code, 'placement.undefined_code');
    t.match(r.body!.errors[0]!.detail, /would exceed the capacity/);
  }
  const usage = await (await fetch(`${base}/resource_providers/${rp}/usages`, { headers: HEADERS })).json() as { usages: Record<string, number> };
  t.same(usage.usages, { VCPU: 10, MEMORY_MB: 640 });
});

t.test('generation conflicts: 409 placement.concurrent_update, then a retrying client succeeds', async (t) => {
  const app = await build(t);
  const rp = u('gen-host');
  await createProviders(app, [{ uuid: rp, inventories: { VCPU: 8 } }]);
  const base = await app.listen({ port: 0, host: '127.0.0.1' });
  const get = async (path: string) => (await fetch(`${base}${path}`, { headers: HEADERS })).json() as Promise<Record<string, unknown>>;
  const put = (path: string, body: unknown) => fetch(`${base}${path}`, { method: 'PUT', headers: HEADERS, body: JSON.stringify(body) });

  // Two clients read the same provider generation and both write traits.
  await put('/traits/CUSTOM_A', undefined);
  await put('/traits/CUSTOM_B', undefined);
  const gen = (await get(`/resource_providers/${rp}`)).generation as number;
  const [a, b] = await Promise.all([
    put(`/resource_providers/${rp}/traits`, { resource_provider_generation: gen, traits: ['CUSTOM_A'] }),
    put(`/resource_providers/${rp}/traits`, { resource_provider_generation: gen, traits: ['CUSTOM_B'] }),
  ]);
  const statuses = [a.status, b.status].sort();
  t.same(statuses, [200, 409]);
  const loser = a.status === 409 ? a : b;
  t.equal(((await loser.json()) as { errors: Array<{ code: string }> }).errors[0]!.code, 'placement.concurrent_update');
  // The loser retries with a fresh generation.
  const fresh = (await get(`/resource_providers/${rp}`)).generation as number;
  const retry = await put(`/resource_providers/${rp}/traits`, { resource_provider_generation: fresh, traits: ['CUSTOM_A', 'CUSTOM_B'] });
  t.equal(retry.status, 200);

  // Same for a consumer: two updates with the same consumer generation.
  const c = u('shared-consumer');
  const body = (vcpu: number, g: number | null) => ({
    allocations: { [rp]: { resources: { VCPU: vcpu } } }, consumer_generation: g, project_id: 'p', user_id: 'u', consumer_type: 'INSTANCE',
  });
  t.equal((await put(`/allocations/${c}`, body(1, null))).status, 204);
  const [x, y] = await Promise.all([put(`/allocations/${c}`, body(2, 1)), put(`/allocations/${c}`, body(3, 1))]);
  t.same([x.status, y.status].sort(), [204, 409]);
  const cg = (await get(`/allocations/${c}`)).consumer_generation as number;
  t.equal(cg, 2);
  t.equal((await put(`/allocations/${c}`, body(4, cg))).status, 204, 'retry with the fresh consumer generation');
});
