// Nova's isolate_aggregates (the user's document): licensed-Windows hosts in an aggregate carrying
// trait:CUSTOM_WINDOWS_LICENSED=required only receive requests that require that trait.
import t from 'tap';
import { build } from '../helper.ts';
import { isolatedAggregates, requiredTraitsOf } from '../../src/placement/isolate.ts';
import { newGroup } from '../../src/placement/query.ts';
import { call, createProviders, u } from './fixtures.ts';

const AGG_WIN = u('agg-windows');
const AGG_OTHER = u('agg-other');
const hosts = { win1: u('win1'), win2: u('win2'), lin1: u('lin1'), lin2: u('lin2') };
const names = Object.fromEntries(Object.entries(hosts).map(([k, v]) => [v, k]));

async function fleet(t: { teardown(fn: () => unknown): void; equal(a: unknown, b: unknown): unknown }, enabled: boolean) {
  const app = await build(t, { enable_isolated_aggregate_filtering: enabled });
  await createProviders(app, [
    // The operator puts the licensed hosts in the aggregate and gives them the trait by hand (the spec: traits are not synced).
    { uuid: hosts.win1, inventories: { VCPU: 8, MEMORY_MB: 8192, DISK_GB: 100 }, traits: ['CUSTOM_WINDOWS_LICENSED'], aggregates: [AGG_WIN] },
    { uuid: hosts.win2, inventories: { VCPU: 8, MEMORY_MB: 8192, DISK_GB: 100 }, traits: ['CUSTOM_WINDOWS_LICENSED'], aggregates: [AGG_WIN] },
    { uuid: hosts.lin1, inventories: { VCPU: 8, MEMORY_MB: 8192, DISK_GB: 100 }, aggregates: [AGG_OTHER] },
    { uuid: hosts.lin2, inventories: { VCPU: 8, MEMORY_MB: 8192, DISK_GB: 100 } },
  ]);
  // openstack aggregate set --property trait:CUSTOM_WINDOWS_LICENSED=required <agg>
  const r = await call(app, 'PUT', `/aggregates/${AGG_WIN}/metadata`, { metadata: { 'trait:CUSTOM_WINDOWS_LICENSED': 'required', os: 'windows' } });
  t.equal(r.status, 200);
  return app;
}

async function hostsFor(app: Awaited<ReturnType<typeof build>>, q: string): Promise<string[]> {
  const r = await call(app, 'GET', `/allocation_candidates?resources=VCPU:1,MEMORY_MB:512,DISK_GB:1${q}`);
  if (r.status !== 200) throw new Error(JSON.stringify(r.body));
  return r.body.allocation_requests.map((a: { allocations: object }) => names[Object.keys(a.allocations)[0]!]).sort();
}

t.test('seed: licensed Windows hosts only receive Windows requests when the filter is enabled', async (t) => {
  const app = await fleet(t, true);
  t.same(await hostsFor(app, '&required=CUSTOM_WINDOWS_LICENSED'), ['win1', 'win2'], 'Windows image lands on licensed hosts');
  t.same(await hostsFor(app, ''), ['lin1', 'lin2'], 'plain image never lands on licensed hosts');
  t.same(await hostsFor(app, '&required=!CUSTOM_WINDOWS_LICENSED'), ['lin1', 'lin2'], 'forbidden traits do not count as requested');
  // Requested in a numbered group also counts (all_required_traits of every group).
  t.same(await hostsFor(app, '&resources1=VCPU:1&required1=CUSTOM_WINDOWS_LICENSED'), ['win1', 'win2']);

  const r = await call(app, 'GET', '/allocation_candidates?resources=VCPU:1&explain=true');
  t.same(r.body.explain.isolate_aggregates.map((a: { uuid: string }) => a.uuid), [AGG_WIN]);
  t.match(r.body.explain.isolate_aggregates[0].reason, /CUSTOM_WINDOWS_LICENSED/);
  const meta = await call(app, 'GET', `/aggregates/${AGG_WIN}/metadata`);
  t.same(meta.body, { metadata: { 'trait:CUSTOM_WINDOWS_LICENSED': 'required', os: 'windows' } });
});

t.test('seed: with the option off nothing is isolated', async (t) => {
  const app = await fleet(t, false);
  t.same(await hostsFor(app, ''), ['lin1', 'lin2', 'win1', 'win2']);
  const r = await call(app, 'GET', '/allocation_candidates?resources=VCPU:1&explain=true');
  t.match(r.body.explain.isolate_aggregates, /disabled/);
});

t.test('seed: an aggregate with two required traits is isolated unless both are requested', async (t) => {
  const app = await fleet(t, true);
  await call(app, 'PUT', '/traits/CUSTOM_XYZ');
  await call(app, 'PUT', `/aggregates/${AGG_WIN}/metadata`, {
    metadata: { 'trait:CUSTOM_WINDOWS_LICENSED': 'required', 'trait:CUSTOM_XYZ': 'required' },
  });
  t.same(await hostsFor(app, '&required=CUSTOM_WINDOWS_LICENSED'), [], 'CUSTOM_XYZ missing: licensed hosts isolated, others lack the trait');
  t.same(await hostsFor(app, '&required=CUSTOM_WINDOWS_LICENSED,CUSTOM_XYZ'), [], 'hosts lack CUSTOM_XYZ');
  const r = await call(app, 'GET', '/allocation_candidates?resources=VCPU:1&required=CUSTOM_WINDOWS_LICENSED&explain=true');
  t.same(r.body.explain.isolate_aggregates[0].missing, ['CUSTOM_XYZ']);
});

t.test('Nova edge: all resources in numbered groups and an isolated aggregate → Placement 400', async (t) => {
  const app = await fleet(t, true);
  const r = await call(app, 'GET', '/allocation_candidates?resources1=VCPU:1,MEMORY_MB:512');
  t.equal(r.status, 400);
  t.match(r.body.errors[0].detail, /Badly formed resources parameter.*Got: empty string\./);
});

t.test('isolatedAggregates (pure): only trait:*=required entries, value must be exactly "required"', async (t) => {
  const meta = new Map<string, Record<string, string>>([
    ['a', { 'trait:CUSTOM_A': 'required' }],
    ['b', { 'trait:CUSTOM_B': 'forbidden', os: 'linux' }],
    ['c', { 'trait:CUSTOM_A': 'required', 'trait:CUSTOM_C': 'required' }],
    ['d', {}],
    ['e', { 'trait:custom_a': 'required' }],
  ]);
  t.same(isolatedAggregates(meta, new Set()).map((x) => x.uuid), ['a', 'c', 'e']);
  t.same(isolatedAggregates(meta, new Set(['CUSTOM_A'])).map((x) => x.uuid), ['c', 'e'], 'case-sensitive as on sqlite');
  t.same(isolatedAggregates(meta, new Set(['CUSTOM_A', 'CUSTOM_C'])).map((x) => x.uuid), ['e']);
  const g = newGroup('');
  g.required.push(['CUSTOM_A'], ['X', 'Y']);
  g.forbidden.add('CUSTOM_C');
  const g1 = newGroup('1');
  g1.required.push(['CUSTOM_B']);
  t.same([...requiredTraitsOf([g, g1])].sort(), ['CUSTOM_A', 'CUSTOM_B']);
});
