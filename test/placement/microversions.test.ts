// Placement's microversions down to 1.0: operations that do not exist below theirs, query parameters and body
// forms refused or required by version, and answers shaped by version.
import t from 'tap';
import { build } from '../helper.ts';
import { call, createProviders, u } from './fixtures.ts';

const RP = u('mv-rp');
const CHILD = u('mv-child');
const OTHER = u('mv-other');
const C1 = u('mv-consumer');
const AGG = u('mv-agg');

t.test('operations below their microversion: 404 (405 for DELETE of all inventories)', async (t) => {
  const app = await build(t);
  await createProviders(app, [{ uuid: RP, inventories: { VCPU: 4 } }]);
  const table: Array<[string, string, string, number, unknown?]> = [
    ['1.0', 'GET', `/resource_providers/${RP}/aggregates`, 404],
    ['1.1', 'GET', `/resource_providers/${RP}/aggregates`, 200],
    ['1.1', 'GET', '/resource_classes', 404],
    ['1.2', 'GET', '/resource_classes', 200],
    ['1.5', 'GET', '/traits', 404],
    ['1.5', 'PUT', '/traits/CUSTOM_X', 404],
    ['1.6', 'GET', '/traits', 200],
    ['1.8', 'GET', '/usages?project_id=p', 404],
    ['1.9', 'GET', '/usages?project_id=p', 200],
    ['1.9', 'GET', '/allocation_candidates?resources=VCPU:1', 404],
    ['1.10', 'GET', '/allocation_candidates?resources=VCPU:1', 200],
    ['1.12', 'POST', '/allocations', 404, {}],
    ['1.4', 'DELETE', `/resource_providers/${RP}/inventories`, 405],
    ['1.29', 'POST', '/reshaper', 404, {}],
  ];
  for (const [mv, method, url, status, body] of table) {
    const r = await call(app, method, url, body, mv);
    t.equal(r.status, status, `${mv} ${method} ${url}`);
  }
  const r = await call(app, 'DELETE', `/resource_providers/${RP}/inventories`, undefined, '1.4');
  t.notOk(r.headers.allow, 'the version 405 names no methods');
});

t.test('provider bodies and answers by version: links, parent/root, 201 before 1.20, re-parenting from 1.37', async (t) => {
  const app = await build(t);
  let r = await call(app, 'POST', '/resource_providers', { name: 'p', uuid: RP }, '1.0');
  t.equal(r.status, 201);
  r = await call(app, 'GET', `/resource_providers/${RP}`, undefined, '1.0');
  t.same(r.body.links.map((l: { rel: string }) => l.rel), ['self', 'inventories', 'usages']);
  t.notOk('root_provider_uuid' in r.body);
  r = await call(app, 'GET', `/resource_providers/${RP}`, undefined, '1.10');
  t.same(r.body.links.map((l: { rel: string }) => l.rel), ['self', 'inventories', 'usages', 'aggregates', 'traits']);
  r = await call(app, 'GET', `/resource_providers/${RP}`, undefined, '1.14');
  t.equal(r.body.links.length, 6);
  t.equal(r.body.root_provider_uuid, RP);
  r = await call(app, 'POST', '/resource_providers', { name: 'c', uuid: CHILD, parent_provider_uuid: RP }, '1.13');
  t.equal(r.status, 400, 'parent_provider_uuid before 1.14');
  t.match(r.body.errors[0].detail, "Additional properties are not allowed ('parent_provider_uuid' was unexpected)");
  t.equal((await call(app, 'POST', '/resource_providers', { name: 'c', uuid: CHILD, parent_provider_uuid: RP }, '1.14')).status, 201);
  await call(app, 'POST', '/resource_providers', { name: 'o', uuid: OTHER }, '1.20');
  r = await call(app, 'PUT', `/resource_providers/${CHILD}`, { name: 'c', parent_provider_uuid: OTHER }, '1.36');
  t.match(r.body.errors[0].detail, 're-parenting a provider is not currently allowed.');
  r = await call(app, 'PUT', `/resource_providers/${CHILD}`, { name: 'c', parent_provider_uuid: null }, '1.36');
  t.match(r.body.errors[0].detail, 'un-parenting a provider is not currently allowed.');
  r = await call(app, 'PUT', `/resource_providers/${CHILD}`, { name: 'c', parent_provider_uuid: OTHER }, '1.37');
  t.match(r.body, { parent_provider_uuid: OTHER, root_provider_uuid: OTHER, generation: 0 });
  r = await call(app, 'PUT', `/resource_providers/${OTHER}`, { name: 'o', parent_provider_uuid: CHILD }, '1.37');
  t.match(r.body.errors[0].detail, 'creating loop in the provider tree is not allowed.');
  r = await call(app, 'PUT', `/resource_providers/${RP}`, { name: 'p', parent_provider_uuid: OTHER }, '1.14');
  t.equal(r.body.root_provider_uuid, OTHER, 'a root may gain a parent at any version');
  r = await call(app, 'GET', `/resource_providers?in_tree=${CHILD}`);
  t.same(r.body.resource_providers.map((p: { uuid: string }) => p.uuid).sort(), [RP, CHILD, OTHER].sort());
});

t.test('allocations by version: a list before 1.12, no owner before 1.8, consumer generations from 1.28', async (t) => {
  const app = await build(t);
  await createProviders(app, [{ uuid: RP, inventories: { VCPU: 8, DISK_GB: 100 } }]);
  const list = { allocations: [{ resource_provider: { uuid: RP }, resources: { VCPU: 1 } }] };
  t.equal((await call(app, 'PUT', `/allocations/${C1}`, list, '1.7')).status, 204);
  let r = await call(app, 'GET', `/allocations/${C1}`, undefined, '1.12');
  t.same(r.body, {
    allocations: { [RP]: { resources: { VCPU: 1 }, generation: 2 } },
    project_id: '00000000-0000-0000-0000-000000000000', user_id: '00000000-0000-0000-0000-000000000000',
  }, 'allocations written before 1.8 belong to the incomplete consumer');
  r = await call(app, 'PUT', `/allocations/${C1}`, list, '1.8');
  t.match(r.body.errors[0].detail, "'project_id' is a required property");
  t.equal((await call(app, 'PUT', `/allocations/${C1}`, { ...list, project_id: 'p', user_id: 'u' }, '1.8')).status, 204);
  r = await call(app, 'PUT', `/allocations/${C1}`, { allocations: { [RP]: { resources: { VCPU: 2 } } }, project_id: 'p', user_id: 'u' }, '1.11');
  t.match(r.body.errors[0].detail, "is not of type 'array'");
  const dict = { allocations: { [RP]: { resources: { VCPU: 2 } } }, project_id: 'p', user_id: 'u' };
  t.equal((await call(app, 'PUT', `/allocations/${C1}`, dict, '1.27')).status, 204, 'no generation before 1.28');
  r = await call(app, 'PUT', `/allocations/${C1}`, dict, '1.28');
  t.match(r.body.errors[0].detail, "'consumer_generation' is a required property");
  r = await call(app, 'GET', `/allocations/${C1}`, undefined, '1.28');
  t.equal(r.body.consumer_generation, 3);
  t.notOk('consumer_type' in r.body);
  r = await call(app, 'PUT', `/allocations/${C1}`, { ...dict, consumer_generation: 3, mappings: { '': [RP] } }, '1.33');
  t.match(r.body.errors[0].detail, "'mappings' was unexpected");
  t.equal((await call(app, 'PUT', `/allocations/${C1}`, { ...dict, consumer_generation: 3, mappings: { '': [RP] } }, '1.34')).status, 204);
  r = await call(app, 'GET', `/allocations/${C1}`, undefined, '1.38');
  t.equal(r.body.consumer_type, 'unknown', 'written before 1.38: no type');
  r = await call(app, 'GET', `/resource_providers/${RP}/allocations`, undefined, '1.27');
  t.same(r.body.allocations[C1], { resources: { VCPU: 2 } }, 'consumer generations in provider allocations from 1.28');
  r = await call(app, 'PUT', `/allocations/${C1}`, { allocations: {}, project_id: 'p', user_id: 'u', consumer_generation: 4 }, '1.28');
  t.equal(r.status, 204, 'empty allocations remove them from 1.28');
  t.same((await call(app, 'GET', `/allocations/${C1}`)).body, { allocations: {} });
});

t.test('aggregates: a bare list before 1.19 (no generation, no bump), generations from 1.19', async (t) => {
  const app = await build(t);
  await createProviders(app, [{ uuid: RP }]);
  let r = await call(app, 'PUT', `/resource_providers/${RP}/aggregates`, [AGG], '1.18');
  t.same(r.body, { aggregates: [AGG] });
  r = await call(app, 'GET', `/resource_providers/${RP}`);
  t.equal(r.body.generation, 0);
  r = await call(app, 'PUT', `/resource_providers/${RP}/aggregates`, { aggregates: [AGG], resource_provider_generation: 0 }, '1.18');
  t.match(r.body.errors[0].detail, "is not of type 'array'");
  r = await call(app, 'PUT', `/resource_providers/${RP}/aggregates`, [AGG], '1.19');
  t.match(r.body.errors[0].detail, "is not of type 'object'");
  r = await call(app, 'PUT', `/resource_providers/${RP}/aggregates`, { aggregates: [AGG], resource_provider_generation: 0 }, '1.19');
  t.same(r.body, { aggregates: [AGG], resource_provider_generation: 1 }, 'the same aggregates, and still a bump');
});

t.test('resource classes: PUT renames with a body before 1.7, creates without one from 1.7', async (t) => {
  const app = await build(t);
  await createProviders(app, [{ uuid: RP }]);
  t.equal((await call(app, 'POST', '/resource_classes', { name: 'CUSTOM_OLD' }, '1.2')).status, 201);
  await call(app, 'PUT', `/resource_providers/${RP}/inventories`, { resource_provider_generation: 0, inventories: { CUSTOM_OLD: { total: 3 } } });
  let r = await call(app, 'PUT', '/resource_classes/CUSTOM_OLD', { name: 'CUSTOM_NEW' }, '1.6');
  t.same(r.body, { name: 'CUSTOM_NEW', links: [{ rel: 'self', href: '/resource_classes/CUSTOM_NEW' }] });
  r = await call(app, 'GET', `/resource_providers/${RP}/inventories`);
  t.same(Object.keys(r.body.inventories), ['CUSTOM_NEW'], 'the inventory follows the class');
  r = await call(app, 'PUT', '/resource_classes/VCPU', { name: 'CUSTOM_X' }, '1.6');
  t.match(r.body.errors[0].detail, 'Cannot update standard resource class VCPU');
  r = await call(app, 'PUT', '/resource_classes/CUSTOM_LATER', undefined, '1.7');
  t.equal(r.status, 201);
  r = await call(app, 'PUT', '/resource_classes/custom_lower', undefined, '1.7');
  t.match(r.body.errors[0].detail, "JSON does not validate: 'custom_lower' does not match '^CUSTOM_[A-Z0-9_]+$'");
});

t.test('allocation candidates by version: list form < 1.12, summaries < 1.27 and < 1.29, traits from 1.17', async (t) => {
  const app = await build(t);
  await createProviders(app, [
    { uuid: RP, inventories: { VCPU: 8, MEMORY_MB: 1024 }, traits: ['HW_CPU_X86_AVX2'] },
    { uuid: CHILD, parent: RP, inventories: { SRIOV_NET_VF: 4 } },
  ]);
  let r = await call(app, 'GET', '/allocation_candidates?resources=VCPU:1', undefined, '1.11');
  t.same(r.body.allocation_requests, [{ allocations: [{ resource_provider: { uuid: RP }, resources: { VCPU: 1 } }] }]);
  t.same(r.body.provider_summaries[RP], { resources: { VCPU: { capacity: 8, used: 0 } } }, 'only the requested class, no traits');
  t.notOk(r.body.provider_summaries[CHILD], 'with trees, before 1.29 only providers the requests use');
  r = await call(app, 'GET', '/allocation_candidates?resources=VCPU:1', undefined, '1.27');
  t.same(Object.keys(r.body.provider_summaries[RP].resources), ['VCPU', 'MEMORY_MB']);
  t.same(r.body.provider_summaries[RP].traits, ['HW_CPU_X86_AVX2']);
  r = await call(app, 'GET', '/allocation_candidates?resources=VCPU:1,SRIOV_NET_VF:1', undefined, '1.28');
  t.equal(r.body.allocation_requests.length, 0, 'two providers of one tree before 1.29');
  r = await call(app, 'GET', '/allocation_candidates?resources=VCPU:1,SRIOV_NET_VF:1', undefined, '1.29');
  t.equal(r.body.allocation_requests.length, 1);
  t.same(Object.keys(r.body.provider_summaries).sort(), [RP, CHILD].sort());
  t.equal(r.body.provider_summaries[CHILD].parent_provider_uuid, RP);
});

t.test('GET /resource_providers query parameters by version', async (t) => {
  const app = await build(t);
  await createProviders(app, [{ uuid: RP, inventories: { VCPU: 8 }, traits: ['HW_CPU_X86_AVX2'], aggregates: [AGG] }]);
  const table: Array<[string, string, number | RegExp]> = [
    ['1.2', `member_of=${AGG}`, /'member_of' was unexpected/],
    ['1.3', `member_of=${AGG}`, 1],
    ['1.3', 'resources=VCPU:1', /'resources' was unexpected/],
    ['1.4', 'resources=VCPU:1', 1],
    ['1.13', `in_tree=${RP}`, /'in_tree' was unexpected/],
    ['1.14', `in_tree=${RP}`, 1],
    ['1.17', 'required=HW_CPU_X86_AVX2', /'required' was unexpected/],
    ['1.18', 'required=HW_CPU_X86_AVX2', 1],
    ['1.21', 'required=!HW_CPU_X86_AVX2', /Expected 'required' parameter value of the form: HW_CPU_X86_VMX,CUSTOM_MAGIC/],
    ['1.22', 'required=!HW_CPU_X86_AVX2', 0],
    ['1.23', `member_of=${AGG}&member_of=${AGG}`, /Multiple member_of parameters are not supported/],
    ['1.24', `member_of=${AGG}&member_of=${AGG}`, 1],
    ['1.31', `member_of=!${AGG}`, /Forbidden member_of parameters are not supported in the specified microversion/],
    ['1.32', `member_of=!${AGG}`, 0],
    ['1.38', 'required=in:HW_CPU_X86_AVX2,STORAGE_DISK_SSD', /The format 'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' only supported since microversion 1.39/],
    ['1.39', 'required=in:HW_CPU_X86_AVX2,STORAGE_DISK_SSD', 1],
  ];
  for (const [mv, qs, want] of table) {
    const r = await call(app, 'GET', `/resource_providers?${qs}`, undefined, mv);
    if (typeof want === 'number') t.equal(r.body.resource_providers?.length, want, `${mv} ?${qs}`);
    else t.match(r.body.errors?.[0]?.detail, want, `${mv} ?${qs}`);
  }
});
