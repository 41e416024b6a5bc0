// Parsing of GET /allocation_candidates query strings into request groups, with Placement's messages, codes and
// order of validation (placement/lib.py, util.py, schemas/allocation_candidate.py). Checks that need the database
// (unknown classes and traits, unknown aggregates) happen later, in scheduler.ts. Pure.
import { badRequest, CODES } from './errors.ts';
import { jsonschemaMessage, pyRepr, pyStr, type PyValue } from './pyformat.ts';
import { isUuidLike, validateWith } from './validate.ts';
import { providersQuerySchema, TraitsQueryValidation, usagesQuerySchema } from './schemas.ts';
import type { Microversion } from './microversion.ts';

export interface RequestGroup {
  /** '' for the unsuffixed group. */
  suffix: string;
  /** Resource class → amount, in the order given (last occurrence wins). */
  resources: Map<string, number>;
  /** AND of OR-sets. */
  required: string[][];
  forbidden: Set<string>;
  /** AND of OR-sets of aggregate uuids. */
  memberOf: string[][];
  forbiddenAggs: Set<string>;
  inTree: string | null;
}

export interface ParsedQuery {
  groups: RequestGroup[];
  limit: number | null;
  groupPolicy: 'none' | 'isolate' | null;
  rootRequired: { required: Set<string>; forbidden: Set<string> } | null;
  sameSubtree: string[][];
}

export type QueryPairs = ReadonlyArray<readonly [string, string]>;

/** Query keys Berth adds to Placement's (scheduling-route conventions); not part of Placement's schema. */
const BERTH_KEYS = new Set(['explain', 'explain_target', 'dry_run']);

export function newGroup(suffix: string): RequestGroup {
  return { suffix, resources: new Map(), required: [], forbidden: new Set(), memberOf: [], forbiddenAggs: new Set(), inTree: null };
}

const invalid = (msg: string) => badRequest(`Invalid query string parameters: ${msg}`);

// ---------------------------------------------------------------- JSON schema (on dict(GET): last value per key)

function schemaFor(mv: Microversion): { [k: string]: PyValue } {
  const properties: { [k: string]: PyValue } = {};
  const schema: { [k: string]: PyValue } = { type: 'object', properties, additionalProperties: false };
  if (mv < 25) {
    properties.resources = { type: 'string' };
    if (mv >= 17) properties.required = { type: 'string' };
    if (mv >= 21) properties.member_of = { type: 'string' };
    schema.required = ['resources'];
  } else {
    const suffix = mv >= 33 ? '([a-zA-Z0-9_-]{1,64})?$' : '([1-9][0-9]*)?$';
    const patterns: { [k: string]: PyValue } = {};
    for (const key of ['resources', 'required', 'member_of', ...(mv >= 31 ? ['in_tree'] : [])]) {
      patterns[`^${key}${suffix}`] = { type: 'string' };
    }
    schema.patternProperties = patterns;
    properties.group_policy = { type: 'string', enum: ['none', 'isolate'] };
  }
  if (mv >= 16) properties.limit = { type: ['integer', 'string'], pattern: '^[1-9][0-9]*$', minimum: 1, minLength: 1 };
  if (mv >= 35) properties.root_required = { type: ['string'] };
  if (mv >= 36) properties.same_subtree = { type: ['string'] };
  return schema;
}

/** A microversion's schema with its property patterns compiled, made once per microversion (it is only read). */
interface CompiledSchema { schema: { [k: string]: PyValue }; properties: { [k: string]: PyValue }; patterns: RegExp[] | null }
const compiledSchemas = new Map<Microversion, CompiledSchema>();

function compiledSchema(mv: Microversion): CompiledSchema {
  let compiled = compiledSchemas.get(mv);
  if (!compiled) {
    const schema = schemaFor(mv);
    const patterns = schema.patternProperties as { [k: string]: PyValue } | undefined;
    compiled = {
      schema, properties: schema.properties as { [k: string]: PyValue },
      patterns: patterns ? Object.keys(patterns).map((p) => new RegExp(p)) : null,
    };
    compiledSchemas.set(mv, compiled);
  }
  return compiled;
}

function checkSchema(pairs: QueryPairs, mv: Microversion): void {
  const instance: { [k: string]: PyValue } = {};
  for (const [k, v] of pairs) instance[k] = v;
  const { schema, properties, patterns } = compiledSchema(mv);
  const extras = Object.keys(instance).filter((k) => !(k in properties) && !(patterns && patterns.some((p) => p.test(k)))).sort();
  if (extras.length > 0) {
    let message: string;
    if (patterns) {
      const verb = extras.length === 1 ? 'does' : 'do';
      const regexes = Object.keys(schema.patternProperties as object).sort().map(pyStr).join(', ');
      message = `${extras.map(pyStr).join(', ')} ${verb} not match any of the regexes: ${regexes}`;
    } else {
      message = `Additional properties are not allowed (${extras.map(pyStr).join(', ')} ${extras.length === 1 ? 'was' : 'were'} unexpected)`;
    }
    throw invalid(jsonschemaMessage(message, 'additionalProperties', [], schema, [], instance));
  }
  if (schema.required && !('resources' in instance)) {
    throw invalid(jsonschemaMessage("'resources' is a required property", 'required', [], schema, [], instance));
  }
  const gp = instance.group_policy;
  if (typeof gp === 'string' && gp !== 'none' && gp !== 'isolate' && 'group_policy' in properties) {
    throw invalid(jsonschemaMessage(`${pyStr(gp)} is not one of ['none', 'isolate']`, 'enum',
      ['properties', 'group_policy'], properties.group_policy!, ['group_policy'], gp));
  }
  const limit = instance.limit;
  if (typeof limit === 'string' && 'limit' in properties && !/^[1-9][0-9]*$/.test(limit)) {
    throw invalid(jsonschemaMessage(`${pyStr(limit)} does not match '^[1-9][0-9]*$'`, 'pattern',
      ['properties', 'limit'], properties.limit!, ['limit'], limit));
  }
}

// ---------------------------------------------------------------- per-parameter parsing

const RESOURCES_FORM = 'Badly formed resources parameter. Expected resources query string parameter in form: ' +
  '?resources=VCPU:2,MEMORY_MB:1024. Got: ';

/** util.normalize_resources_qs_param. */
export function parseResources(value: string): Map<string, number> {
  if (value === '') throw badRequest(`${RESOURCES_FORM}empty string.`);
  const result = new Map<string, number>();
  for (const part of value.split(',')) {
    const pieces = part.split(':');
    if (pieces.length !== 2) throw badRequest(`${RESOURCES_FORM}${part}.`);
    const [rc, amountText] = pieces as [string, string];
    const trimmed = amountText.trim();
    // Python int(): optional sign, digits, underscores between digits, surrounding whitespace.
    if (!/^[+-]?\d+(_\d+)*$/.test(trimmed)) {
      throw badRequest(`Requested resource ${rc} expected positive integer amount. Got: ${amountText}.`);
    }
    const amount = Number(trimmed.replace(/_/g, ''));
    if (amount < 1) throw badRequest(`Requested resource ${rc} requires amount >= 1. Got: ${amount}.`);
    result.delete(rc);
    result.set(rc, amount);
  }
  return result;
}

/** util.normalize_traits_qs_param(s): one occurrence → OR-sets and forbidden traits. */
function parseTraitsValue(value: string, mv: Microversion, allowAnyOf: boolean): { required: string[][]; forbidden: string[] } {
  if (value.startsWith('in:')) {
    if (!allowAnyOf) {
      throw invalid(`The format 'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' only supported since microversion 1.39. Got: ${value}`);
    }
    const traits = value.slice(3).split(',').map((t) => t.trim());
    if (traits.some((t) => t === '')) {
      throw invalid(`Expected 'required' parameter value of the form: in:HW_CPU_X86_VMX,CUSTOM_MAGIC. Got an empty trait in: ${value}`);
    }
    if (traits.some((t) => t.startsWith('!'))) {
      throw invalid(`The format 'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' does not support forbidden traits. Got: ${value}`);
    }
    return { required: [[...new Set(traits)]], forbidden: [] };
  }
  const traits = value.split(',').map((t) => t.trim());
  const form = mv >= 22 ? 'HW_CPU_X86_VMX,!CUSTOM_MAGIC' : 'HW_CPU_X86_VMX,CUSTOM_MAGIC';
  if (traits.some((t) => t === '')) {
    throw invalid(`Expected 'required' parameter value of the form: ${form}. Got an empty trait in: ${value}`);
  }
  const required: string[][] = [];
  const forbidden: string[] = [];
  for (const t of traits) {
    if (t.startsWith('!')) {
      if (mv < 22) throw invalid(`Expected 'required' parameter value of the form: ${form}. Got: ${value}`);
      forbidden.push(t.replace(/^!+/, ''));
    } else required.push([t]);
  }
  return { required, forbidden };
}

/** util.normalize_member_of_qs_param: one occurrence → an OR-set of required aggregates, or forbidden ones. */
function parseMemberOfValue(value: string): { anyOf: string[]; forbidden: string[] } {
  if (value.includes(',') && !(value.startsWith('in:') || value.startsWith('!in:'))) {
    throw badRequest(
      `Multiple values for 'member_of' must be prefixed with the 'in:' or '!in:' keyword using the valid microversion. Got: ${value}`,
    );
  }
  let anyOf: string[] = [];
  let forbidden: string[] = [];
  if (value.startsWith('!in:')) forbidden = [...new Set(value.slice(4).split(','))];
  else if (value.startsWith('!')) forbidden = [value.slice(1)];
  else if (value.startsWith('in:')) anyOf = [...new Set(value.slice(3).split(','))];
  else anyOf = [value];
  for (const u of [...anyOf, ...forbidden]) {
    if (!isUuidLike(u)) throw invalid(`Expected 'member_of' parameter to contain valid UUID(s). Got: ${u}`);
  }
  return { anyOf, forbidden };
}

/** util.normalize_member_of_qs_params: repeated from 1.24, forbidden ("!") from 1.32. */
function parseMemberOf(values: readonly string[], mv: Microversion, suffix = ''): { memberOf: string[][]; forbidden: Set<string> } {
  if (mv < 24 && values.length > 1) throw badRequest(`Multiple member_of${suffix} parameters are not supported`);
  const memberOf: string[][] = [];
  const forbidden = new Set<string>();
  for (const v of values) {
    const parsed = parseMemberOfValue(v);
    if (parsed.anyOf.length > 0) memberOf.push(parsed.anyOf);
    if (parsed.forbidden.length > 0) {
      if (mv < 32) throw badRequest(`Forbidden member_of${suffix} parameters are not supported in the specified microversion`);
      for (const f of parsed.forbidden) forbidden.add(f);
    }
  }
  return { memberOf, forbidden };
}

/** util.normalize_traits_qs_params: before 1.39 only the last occurrence counts; from 1.39 each is ANDed. */
function parseRequired(values: readonly string[], mv: Microversion): { required: string[][]; forbidden: Set<string> } {
  const required: string[][] = [];
  const forbidden = new Set<string>();
  for (const v of mv >= 39 ? values : values.slice(-1)) {
    const parsed = parseTraitsValue(v, mv, mv >= 39);
    required.push(...parsed.required);
    for (const f of parsed.forbidden) forbidden.add(f);
  }
  return { required, forbidden };
}

function parseRootRequired(value: string): { required: Set<string>; forbidden: Set<string> } {
  if (value.startsWith('in:')) {
    throw invalid(`The format 'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' only supported since microversion 1.39. Got: ${value}`);
  }
  const traits = value.split(',').map((t) => t.trim());
  if (traits.some((t) => t === '')) {
    throw invalid(`Expected 'root_required' parameter value of the form: HW_CPU_X86_VMX,!CUSTOM_MAGIC. Got an empty trait in: ${value}`);
  }
  const required = new Set<string>();
  const forbidden = new Set<string>();
  for (const t of traits) {
    if (t.startsWith('!')) forbidden.add(t.replace(/^!+/, ''));
    else required.add(t);
  }
  const conflicts = [...required].filter((t) => forbidden.has(t)).sort();
  if (conflicts.length > 0) {
    throw badRequest(`Conflicting required and forbidden traits found in root_required: ${conflicts.join(', ')}`, CODES.QUERY_BAD_VALUE);
  }
  return { required, forbidden };
}

const GROUP_KEY = /^(resources|required|member_of|in_tree)([a-zA-Z0-9_-]{1,64})?$/;

/** Parses and validates the query string, in Placement's order of validation. */
export function parseAllocationCandidatesQuery(allPairs: QueryPairs, mv: Microversion): ParsedQuery {
  const pairs = allPairs.filter(([k]) => !BERTH_KEYS.has(k));
  checkSchema(pairs, mv);

  const all = (key: string) => pairs.filter(([k]) => k === key).map(([, v]) => v);
  // Request-wide parameters.
  const limitText = all('limit')[0];
  const limit = limitText !== undefined && /^[1-9][0-9]*$/.test(limitText) ? Number(limitText) : null;
  const groupPolicy = (all('group_policy')[0] ?? null) as ParsedQuery['groupPolicy'];
  let rootRequired: ParsedQuery['rootRequired'] = null;
  if (mv >= 35) {
    const values = all('root_required');
    if (values.length > 1) {
      throw badRequest("Query parameter 'root_required' may be specified only once.", CODES.QUERY_DUPLICATE_KEY);
    }
    if (values.length === 1) rootRequired = parseRootRequired(values[0]!);
  }
  const sameSubtree: string[][] = [];
  if (mv >= 36) {
    for (const value of all('same_subtree')) {
      const suffixes = [...new Set(value.split(',').map((s) => s.trim()))];
      if (suffixes.includes('')) {
        throw badRequest('Empty string (unsuffixed group) can not be specified in `same_subtree` ', CODES.QUERY_BAD_VALUE);
      }
      sameSubtree.push(suffixes);
    }
  }

  // Groups, in query-string order.
  const bySuffix = new Map<string, RequestGroup>();
  const traitsDone = new Set<string>();
  const memberOfDone = new Set<string>();
  for (const [key, value] of pairs) {
    const m = GROUP_KEY.exec(key);
    if (!m) continue;
    const prefix = m[1]!;
    const suffix = m[2] ?? '';
    let group = bySuffix.get(suffix);
    if (!group) bySuffix.set(suffix, (group = newGroup(suffix)));
    if (prefix === 'resources') {
      group.resources = parseResources(value);
    } else if (prefix === 'required') {
      if (traitsDone.has(suffix)) continue;
      traitsDone.add(suffix);
      const parsed = parseRequired(all(key), mv);
      group.required.push(...parsed.required);
      for (const f of parsed.forbidden) group.forbidden.add(f);
    } else if (prefix === 'member_of') {
      if (memberOfDone.has(suffix)) continue;
      memberOfDone.add(suffix);
      const parsed = parseMemberOf(all(key), mv, suffix);
      group.memberOf.push(...parsed.memberOf);
      for (const f of parsed.forbidden) group.forbiddenAggs.add(f);
    } else {
      const uuid = value.trim();
      if (!isUuidLike(uuid)) throw invalid(`Expected 'in_tree' parameter to be a format of uuid. Got: ${value}`);
      group.inTree = uuid;
    }
  }
  const groups = [...bySuffix.values()];

  if (mv >= 36) {
    // lib.RequestGroup.dict_from_request from 1.36: some group has resources, resourceless groups are in a
    // same_subtree, every same_subtree suffix is a group of the query.
    const resourceless = groups.filter((g) => g.resources.size === 0).map((g) => g.suffix);
    if (resourceless.length === groups.length) {
      throw badRequest('There must be at least one resources or resources[$S] parameter.', CODES.QUERY_MISSING_VALUE);
    }
    const inSubtree = new Set(sameSubtree.flat());
    const bad = resourceless.filter((s) => !inSubtree.has(s));
    if (bad.length > 0) {
      throw badRequest(
        `Resourceless suffixed group request should be specified in \`same_subtree\` query param: bad group(s) - ${pyRepr(bad)}.`,
        CODES.QUERY_BAD_VALUE,
      );
    }
    const unknown = [...inSubtree].filter((s) => !bySuffix.has(s));
    if (unknown.length > 0) {
      throw badRequest(
        `Real suffixes should be specified in \`same_subtree\`: ${pyRepr(unknown)} not found in ${pyRepr(groups.map((g) => g.suffix))}.`,
        CODES.QUERY_BAD_VALUE,
      );
    }
  } else {
    // _check_for_orphans before 1.36: traits and member_of need resources in their group, every group needs them.
    const orphans = (prefix: string, has: (g: RequestGroup) => boolean) =>
      groups.filter((g) => g.resources.size === 0 && has(g)).map((g) => prefix + g.suffix);
    const traits = orphans('required', (g) => g.required.length > 0);
    if (traits.length > 0) {
      throw badRequest(`All traits parameters must be associated with resources.  Found the following orphaned traits keys: ${traits.join(', ')}`);
    }
    const members = orphans('member_of', (g) => g.memberOf.length > 0 || g.forbiddenAggs.size > 0);
    if (members.length > 0) {
      throw badRequest(`All member_of parameters must be associated with resources. Found the following orphaned member_of keys: ${members.join(', ')}`);
    }
    if (!groups.every((g) => g.resources.size > 0)) throw badRequest('All request groups must specify resources.');
    if (groups.length === 0) throw badRequest('At least one request group (`resources` or `resources{$S}`) is required.');
  }

  // _check_forbidden (1.22+): a required OR-set whose every trait is forbidden in its group.
  if (mv >= 22) {
    const conflicts: string[] = [];
    for (const g of groups) {
      for (const set of g.required) {
        if (set.every((t) => g.forbidden.has(t))) conflicts.push(`required${g.suffix}: (${[...set].sort().join(', ')})`);
      }
    }
    if (conflicts.length > 0) {
      throw badRequest(`Conflicting required and forbidden traits found in the following traits keys: ${conflicts.sort().join(', ')}`);
    }
  }

  const suffixed = groups.filter((g) => g.suffix !== '' && (mv >= 36 || g.resources.size > 0));
  if (suffixed.length > 1 && groupPolicy === null) {
    throw badRequest('The "group_policy" parameter is required when specifying more than one "resources{N}" parameter.');
  }
  return { groups, limit, groupPolicy, rootRequired, sameSubtree };
}

// ---------------------------------------------------------------- GET /resource_providers

export interface ProviderFilters {
  name?: string | undefined;
  uuid?: string | undefined;
  inTree?: string | undefined;
  /** AND of OR-sets of aggregate uuids. */
  memberOf: string[][];
  forbiddenAggs: Set<string>;
  resources?: Map<string, number> | undefined;
  /** AND of OR-sets of trait names. */
  required: string[][];
  forbidden: Set<string>;
}

/** dict(req.GET): the last value of each key, which Placement's query schemas validate. */
function lastValues(pairs: QueryPairs): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of pairs) out[k] = v;
  return out;
}

/** The filters of GET /resource_providers (handlers/resource_provider.py), with the query parsers of candidates. */
export function parseProvidersQuery(pairs: QueryPairs, mv: Microversion): ProviderFilters {
  const last = validateWith(providersQuerySchema(mv), lastValues(pairs), 'Invalid query string parameters: ') as Record<string, string | undefined>;
  const all = (key: string) => pairs.filter(([k]) => k === key).map(([, v]) => v);
  const filters: ProviderFilters = {
    name: last.name, uuid: last.uuid, inTree: last.in_tree, memberOf: [], forbiddenAggs: new Set(), required: [], forbidden: new Set(),
  };
  if (last.member_of !== undefined) {
    const parsed = parseMemberOf(all('member_of'), mv);
    filters.memberOf = parsed.memberOf;
    filters.forbiddenAggs = parsed.forbidden;
  }
  if (last.required !== undefined) {
    const parsed = parseRequired(all('required'), mv);
    filters.required = parsed.required;
    filters.forbidden = parsed.forbidden;
  }
  if (last.resources !== undefined) filters.resources = parseResources(last.resources);
  return filters;
}

// ---------------------------------------------------------------- GET /traits

export type TraitFilter = { kind: 'in'; names: Set<string> } | { kind: 'startswith'; prefix: string } | { kind: 'associated'; value: boolean };

/** GET /traits (handlers/trait.py): name=in:A,B or name=startswith:P, associated=true|false (any case). */
export function parseTraitsQuery(pairs: QueryPairs): TraitFilter[] {
  const last = validateWith(TraitsQueryValidation, lastValues(pairs), 'Invalid query string parameters: ');
  const filters: TraitFilter[] = [];
  if (last.name !== undefined) {
    const colon = last.name.indexOf(':');
    if (colon < 0) {
      throw badRequest(`Badly formatted name parameter. Expected name query string parameter in form: ?name=[in|startswith]:[name1,name2|prefix]. Got: "${last.name}"`);
    }
    const [op, value] = [last.name.slice(0, colon), last.name.slice(colon + 1)];
    if (op === 'in') filters.push({ kind: 'in', names: new Set(value.split(',')) });
    else if (op === 'startswith') filters.push({ kind: 'startswith', prefix: value });
  }
  if (last.associated !== undefined) {
    const v = last.associated.toLowerCase();
    if (v !== 'true' && v !== 'false') throw badRequest('The query parameter "associated" only accepts "true" or "false"');
    filters.push({ kind: 'associated', value: v === 'true' });
  }
  return filters;
}

// ---------------------------------------------------------------- GET /usages

export interface UsagesQuery {
  projectId: string;
  userId?: string | undefined;
  consumerType?: string | undefined;
}

export function parseUsagesQuery(pairs: QueryPairs, mv: Microversion): UsagesQuery {
  const last = validateWith(usagesQuerySchema(mv), lastValues(pairs), 'Invalid query string parameters: ') as Record<string, string | undefined>;
  return { projectId: last.project_id!, userId: last.user_id, consumerType: last.consumer_type };
}

/** webob-style query parsing: pairs in order, '+' is a space, bad %-escapes are kept as they are. */
export function queryPairs(url: string): Array<[string, string]> {
  const q = url.indexOf('?');
  if (q < 0) return [];
  const decode = (s: string) => {
    const spaced = s.replace(/\+/g, ' ');
    try {
      return decodeURIComponent(spaced);
    } catch {
      return spaced.replace(/%([0-9a-fA-F]{2})/g, (_m, h: string) => String.fromCharCode(parseInt(h, 16)));
    }
  };
  const out: Array<[string, string]> = [];
  for (const part of url.slice(q + 1).split('&')) {
    if (part === '') continue;
    const eq = part.indexOf('=');
    out.push(eq < 0 ? [decode(part), ''] : [decode(part.slice(0, eq)), decode(part.slice(eq + 1))]);
  }
  return out;
}

/** Berth's explain_target=<provider uuid> (the last one given), or null; 400 when it is not a uuid. */
export function explainTargetOf(pairs: QueryPairs): string | null {
  const values = pairs.filter(([k]) => k === 'explain_target');
  if (values.length === 0) return null;
  const value = values[values.length - 1]![1].trim();
  if (!isUuidLike(value)) throw invalid(`Expected 'explain_target' parameter to be a format of uuid. Got: ${value}`);
  return value;
}

/** Berth's boolean query flags (explain=true). */
export const isTrue = (pairs: QueryPairs, key: string) =>
  pairs.some(([k, v]) => k === key && ['true', '1', 'yes'].includes(v.toLowerCase()));
