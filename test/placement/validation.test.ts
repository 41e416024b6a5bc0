// Bodies and query strings refused in jsonschema's words (what Placement's clients and tests read), validation
// Placement does (uuid filters, unknown /usages parameters, long names in paths, duplicate aggregates, a dashless
// uuid that exists) and what it tolerates (spaces around same_subtree entries).
import t from 'tap';
import { build } from '../helper.ts';
import { call, createProviders, u } from './fixtures.ts';

const RP = u('val-rp');
const detail = (r: { body: { errors: Array<{ detail: string }> } }) => r.body.errors[0]!.detail;

t.test('jsonschema messages, the best-matching (least deep) error first', async (t) => {
  const app = await build(t);
  await createProviders(app, [{ uuid: RP }]);
  const table: Array<[string, string, unknown, string, string?]> = [
    ['PUT', `/resource_providers/${RP}/inventories`, { resource_provider_generation: 0, inventories: { VCPU: { reserved: 1 } } },
      "JSON does not validate: 'total' is a required property", "Failed validating 'required'"],
    ['PUT', `/resource_providers/${RP}/inventories`, { resource_provider_generation: 0, inventories: {}, bad_field: 1 },
      "Additional properties are not allowed ('bad_field' was unexpected)"],
    ['PUT', `/resource_providers/${RP}/inventories`, { resource_provider_generation: 0, inventories: { VCPU: { total: 0 } } },
      'JSON does not validate: 0 is less than the minimum of 1', "Failed validating 'minimum'"],
    ['PUT', `/resource_providers/${RP}/inventories`, { resource_provider_generation: 0, inventories: { VCPU: { total: 2147483648 } } },
      '2147483648 is greater than the maximum of 2147483647', "Failed validating 'maximum'"],
    ['PUT', `/resource_providers/${RP}/traits`, { resource_provider_generation: 'x', traits: [] }, "'x' is not of type 'integer'"],
    ['POST', '/resource_providers', { name: 'x', uuid: 'not-a-uuid' }, "'not-a-uuid' is not a 'uuid'", "Failed validating 'format'"],
    ['POST', '/resource_providers', { name: 'n'.repeat(201) }, 'is too long', "Failed validating 'maxLength'"],
    ['POST', '/resource_providers', { name: 'x', uuid: RP, parent_provider_uuid: 5 }, '5 is not valid under any of the given schemas'],
    ['PUT', `/allocations/${u('c')}`, { allocations: { [RP]: { resources: {} } }, project_id: 'p', user_id: 'u', consumer_generation: null, consumer_type: 'INSTANCE' },
      '{} does not have enough properties', "Failed validating 'minProperties'"],
    ['PUT', `/allocations/${u('c')}`, { allocations: {}, project_id: 'p', user_id: 'u', consumer_generation: 'one', consumer_type: 'INSTANCE' },
      "'one' is not of type 'integer', 'null'"],
    ['PUT', `/allocations/${u('c')}`, { allocations: {}, project_id: '', user_id: 'u', consumer_generation: null, consumer_type: 'INSTANCE' },
      "'' is too short", "Failed validating 'minLength'"],
    ['PUT', `/allocations/${u('c')}`, { allocations: {}, project_id: 'p', user_id: 'u', consumer_generation: null, consumer_type: 'instance' },
      "'instance' does not match '^[A-Z0-9_]+$'"],
    ['PUT', `/resource_providers/${RP}/aggregates`, { aggregates: [u('a'), u('a')], resource_provider_generation: 0 }, 'has non-unique elements'],
    ['POST', '/allocations', { 'not-a-consumer': {} }, "'not-a-consumer' does not match any of the regexes: '^[0-9a-fA-F-]{36}$'"],
  ];
  for (const [method, url, body, message, keyword] of table) {
    const r = await call(app, method, url, body);
    t.equal(r.status, 400, `${method} ${url} ${JSON.stringify(body).slice(0, 60)}`);
    t.match(detail(r), message);
    if (keyword) t.match(detail(r), keyword);
  }
});

t.test('query strings: uuid filters, unknown keys, Placement words', async (t) => {
  const app = await build(t);
  await createProviders(app, [{ uuid: RP, inventories: { VCPU: 4 } }]);
  let r = await call(app, 'GET', '/resource_providers?uuid=spameggs');
  t.match(detail(r), "Invalid query string parameters: 'spameggs' is not a 'uuid'");
  r = await call(app, 'GET', '/resource_providers?spam=eggs');
  t.match(detail(r), "Invalid query string parameters: Additional properties are not allowed ('spam' was unexpected)");
  r = await call(app, 'GET', '/resource_providers?in_tree=nope');
  t.match(detail(r), "'nope' is not a 'uuid'");
  r = await call(app, 'GET', '/usages?project_id=p&bad=1');
  t.match(detail(r), "('bad' was unexpected)");
  r = await call(app, 'GET', '/usages');
  t.match(detail(r), "'project_id' is a required property");
  r = await call(app, 'GET', `/usages?project_id=${'p'.repeat(256)}`);
  t.match(detail(r), "Failed validating 'maxLength'");
  r = await call(app, 'GET', '/usages?project_id=p&consumer_type=instance');
  t.match(detail(r), "'instance' does not match '^[A-Z0-9_]+$|^all|^unknown$'");
  r = await call(app, 'GET', '/traits?name=CUSTOM_X');
  t.match(detail(r), 'Badly formatted name parameter. Expected name query string parameter in form: ?name=[in|startswith]:[name1,name2|prefix]. Got: "CUSTOM_X"');
  r = await call(app, 'GET', '/traits?associated=maybe');
  t.match(detail(r), 'The query parameter "associated" only accepts "true" or "false"');
  r = await call(app, 'GET', '/resource_providers?resources=VCPU:1&required=CUSTOM_NOPE');
  t.match(detail(r), 'Invalid trait(s) in "required" parameter: No such trait(s): CUSTOM_NOPE.');
});

t.test('names: 255 characters at most, also in paths; a dashless uuid is the same provider', async (t) => {
  const app = await build(t);
  let r = await call(app, 'PUT', `/traits/CUSTOM_${'A'.repeat(250)}`);
  t.equal(r.status, 400);
  t.match(detail(r), 'The trait is invalid. A valid trait must be no longer than 255 characters');
  t.equal((await call(app, 'PUT', `/traits/CUSTOM_${'A'.repeat(248)}`)).status, 201, '255 characters is fine');
  r = await call(app, 'PUT', `/resource_classes/CUSTOM_${'B'.repeat(250)}`);
  t.equal(r.status, 400);
  t.match(detail(r), "Failed validating 'maxLength'");
  t.equal((await call(app, 'POST', '/resource_providers', { name: 'one', uuid: RP })).status, 200);
  r = await call(app, 'POST', '/resource_providers', { name: 'two', uuid: RP.replace(/-/g, '').toUpperCase() });
  t.equal(r.status, 409);
  t.match(detail(r), `Conflicting resource provider uuid: ${RP} already exists.`);
  r = await call(app, 'POST', '/resource_providers', { name: 'one' });
  t.match(detail(r), 'Conflicting resource provider name: one already exists.');
  t.equal(r.body.errors[0].code, 'placement.duplicate_name');
});

t.test('same_subtree entries are trimmed; groups are checked as lib.py checks them', async (t) => {
  const app = await build(t);
  await createProviders(app, [
    { uuid: RP, inventories: { VCPU: 4 } },
    { uuid: u('val-child'), parent: RP, inventories: { SRIOV_NET_VF: 4 }, traits: ['CUSTOM_PHYSNET'] },
  ]);
  let r = await call(app, 'GET', '/allocation_candidates?resources_A=VCPU:1&resources_B=SRIOV_NET_VF:1&group_policy=none&same_subtree=_A, _B');
  t.equal(r.status, 200);
  t.equal(r.body.allocation_requests.length, 1);
  r = await call(app, 'GET', '/allocation_candidates?required1=CUSTOM_PHYSNET&same_subtree=1');
  t.match(detail(r), 'There must be at least one resources or resources[$S] parameter.', 'one-resources first');
  r = await call(app, 'GET', '/allocation_candidates?resources1=VCPU:1&required=CUSTOM_PHYSNET');
  t.match(detail(r), "Resourceless suffixed group request should be specified in `same_subtree` query param: bad group(s) - [''].");
  r = await call(app, 'GET', '/allocation_candidates?resources1=VCPU:1&in_tree2=' + RP, undefined, '1.35');
  t.match(detail(r), 'All request groups must specify resources.');
  r = await call(app, 'GET', '/allocation_candidates?resources=VCPU:1&required=CUSTOM_PHYSNET,!CUSTOM_PHYSNET,HW_CPU_X86_AVX2,!HW_CPU_X86_AVX2');
  t.match(detail(r), 'Conflicting required and forbidden traits found in the following traits keys: required: (CUSTOM_PHYSNET), required: (HW_CPU_X86_AVX2)');
});
