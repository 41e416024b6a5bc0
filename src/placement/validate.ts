// Validation of request bodies (and query strings) against the zod schema of the requested microversion,
// reported as Placement reports a jsonschema failure: the best-matching error (the least deep one, "anyOf" last),
// in jsonschema's words ("'total' is a required property", "Additional properties are not allowed ('x' was
// unexpected)", "0 is less than the minimum of 1", "'x' is not a 'uuid'"), then "Failed validating '<keyword>'"
// and the failing instance, flattened onto one line as Placement's error formatter does. Pure.
import { z } from 'zod';
import { badRequest } from './errors.ts';
import { pformat, pyRepr, pyStr, type PyValue } from './pyformat.ts';

type Path = ReadonlyArray<PropertyKey>;

interface SchemaError {
  message: string;
  /** The JSON-schema keyword that failed. */
  validator: string;
  /** The instance path jsonschema reports (for "required", the object missing the key). */
  path: Path;
  /** The keyword's value, for the "Failed validating" part. */
  limit?: PyValue;
}

/** Custom zod checks carry their jsonschema keyword and final message (see `jsonschemaCheck`). */
interface JsonschemaParams {
  validator: string;
  limit?: PyValue;
}

/** A zod check that fails with jsonschema's wording: `message(value)` and the keyword it stands for. */
export function jsonschemaCheck<T>(validator: string, ok: (value: T) => boolean, message: (value: T) => string, limit?: PyValue) {
  return (ctx: z.core.ParsePayload<T>) => {
    if (!ok(ctx.value)) {
      ctx.issues.push({ code: 'custom', input: ctx.value, message: message(ctx.value), params: { validator, limit } satisfies JsonschemaParams });
    }
  };
}

const repr = (v: unknown) => pyRepr(toPy(v));

function toPy(v: unknown): PyValue {
  if (v === undefined) return null;
  if (v === null || typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') return v;
  if (Array.isArray(v)) return v.map(toPy);
  if (typeof v === 'object') return Object.fromEntries(Object.entries(v as object).map(([k, x]) => [k, toPy(x)]));
  return String(v);
}

function at(data: unknown, path: Path): unknown {
  let cur = data;
  for (const seg of path) cur = cur !== null && typeof cur === 'object' ? (cur as Record<PropertyKey, unknown>)[seg] : undefined;
  return cur;
}

/** A zod message carrying the JSON-schema type where zod cannot tell it ("integer" vs "number", type lists). */
const TYPE_MARK = 'jsonschema-type:';

/** JSON schema's "type": "integer". */
export const integer = () => z.number({ error: (iss) => (iss.input === undefined ? undefined : `${TYPE_MARK}integer`) }).int();

/** JSON schema's "type": ["integer", "null"]. */
export const integerOrNull = () => z.union([integer(), z.null()], { error: (iss) => (iss.input === undefined ? undefined : `${TYPE_MARK}integer,null`) });

const JSON_TYPES: Record<string, string> = {
  int: 'integer', number: 'number', string: 'string', object: 'object', record: 'object', array: 'array',
  boolean: 'boolean', null: 'null',
};

function pattern(p: unknown): string {
  const s = String(p);
  return s.startsWith('/') && s.lastIndexOf('/') > 0 ? s.slice(1, s.lastIndexOf('/')) : s;
}

function translate(issue: z.core.$ZodIssue, data: unknown): SchemaError {
  const value = at(data, issue.path);
  if (value === undefined && issue.path.length > 0 && issue.code !== 'unrecognized_keys' && issue.code !== 'invalid_key') {
    const key = String(issue.path.at(-1));
    return { message: `${pyStr(key)} is a required property`, validator: 'required', path: issue.path.slice(0, -1), limit: [key] };
  }
  switch (issue.code) {
    case 'invalid_type': {
      const type = issue.message.startsWith(TYPE_MARK) ? issue.message.slice(TYPE_MARK.length) : JSON_TYPES[issue.expected] ?? issue.expected;
      return { message: `${repr(value)} is not of type ${pyStr(type)}`, validator: 'type', path: issue.path, limit: type };
    }
    case 'unrecognized_keys': {
      const keys = issue.keys.map(pyStr).join(', ');
      return {
        message: `Additional properties are not allowed (${keys} ${issue.keys.length === 1 ? 'was' : 'were'} unexpected)`,
        validator: 'additionalProperties', path: issue.path, limit: false,
      };
    }
    case 'invalid_key': {
      const key = String(issue.path.at(-1));
      const inner = issue.issues.find((i) => i.code === 'invalid_format') as { pattern?: unknown } | undefined;
      const regexes = inner?.pattern !== undefined ? pyStr(pattern(inner.pattern)) : "''";
      return { message: `${pyStr(key)} does not match any of the regexes: ${regexes}`, validator: 'additionalProperties', path: issue.path.slice(0, -1), limit: false };
    }
    case 'too_small': {
      const min = Number(issue.minimum);
      if (issue.origin === 'number' || issue.origin === 'int' || issue.origin === 'bigint') {
        return issue.inclusive
          ? { message: `${repr(value)} is less than the minimum of ${min}`, validator: 'minimum', path: issue.path, limit: min }
          : { message: `${repr(value)} is less than or equal to the minimum of ${min}`, validator: 'exclusiveMinimum', path: issue.path, limit: min };
      }
      const validator = issue.origin === 'string' ? 'minLength' : issue.origin === 'array' ? 'minItems' : 'minProperties';
      const message = validator === 'minProperties' ? `${repr(value)} does not have enough properties` : `${repr(value)} is too short`;
      return { message, validator, path: issue.path, limit: min };
    }
    case 'too_big': {
      const max = Number(issue.maximum);
      if (issue.origin === 'number' || issue.origin === 'int' || issue.origin === 'bigint') {
        return { message: `${repr(value)} is greater than the maximum of ${max}`, validator: 'maximum', path: issue.path, limit: max };
      }
      const validator = issue.origin === 'string' ? 'maxLength' : issue.origin === 'array' ? 'maxItems' : 'maxProperties';
      const message = validator === 'maxProperties' ? `${repr(value)} has too many properties` : `${repr(value)} is too long`;
      return { message, validator, path: issue.path, limit: max };
    }
    case 'invalid_format': {
      if (issue.format === 'regex') {
        const p = pattern((issue as { pattern?: unknown }).pattern);
        return { message: `${repr(value)} does not match ${pyStr(p)}`, validator: 'pattern', path: issue.path, limit: p };
      }
      return { message: `${repr(value)} is not a ${pyStr(issue.format)}`, validator: 'format', path: issue.path, limit: issue.format };
    }
    case 'invalid_union': {
      if (issue.message.startsWith(TYPE_MARK)) {
        const types = issue.message.slice(TYPE_MARK.length).split(',');
        return { message: `${repr(value)} is not of type ${types.map(pyStr).join(', ')}`, validator: 'type', path: issue.path, limit: types };
      }
      return { message: `${repr(value)} is not valid under any of the given schemas`, validator: 'anyOf', path: issue.path };
    }
    case 'invalid_value':
      return { message: `${repr(value)} is not one of ${repr(issue.values)}`, validator: 'enum', path: issue.path, limit: toPy(issue.values) };
    case 'custom': {
      const params = (issue.params ?? {}) as Partial<JsonschemaParams>;
      return { message: issue.message, validator: params.validator ?? 'custom', path: issue.path, ...(params.limit !== undefined ? { limit: params.limit } : {}) };
    }
    default:
      return { message: issue.message, validator: issue.code, path: issue.path };
  }
}

/** jsonschema.exceptions.best_match: the least deep error; "anyOf" only when nothing else is as shallow. */
function bestMatch(errors: SchemaError[]): SchemaError {
  let best = errors[0]!;
  const weak = (e: SchemaError) => (e.validator === 'anyOf' || e.validator === 'oneOf' ? 1 : 0);
  for (const e of errors.slice(1)) {
    if (e.path.length < best.path.length || (e.path.length === best.path.length && weak(e) < weak(best))) best = e;
  }
  return best;
}

const index = (container: string, path: Path) => container + path.map((p) => `[${typeof p === 'number' ? p : pyStr(String(p))}]`).join('');

/** str(jsonschema.ValidationError) as Placement's error formatter flattens it. */
function describe(e: SchemaError, data: unknown): string {
  const schemaPath = [...e.path.flatMap((p) => (typeof p === 'number' ? ['items'] : ['properties', String(p)])), e.validator];
  const schema: PyValue = e.limit !== undefined ? { [e.validator]: e.limit } : {};
  const pretty = (v: PyValue) => pformat(v).replace(/\n/g, '\n    ');
  const text = `${e.message}\n\nFailed validating ${pyStr(e.validator)} in ${index('schema', schemaPath.slice(0, -1))}:\n    ${pretty(schema)}\n\n` +
    `On ${index('instance', e.path)}:\n    ${pretty(toPy(at(data, e.path)))}`;
  return text.replace(/\n/g, ' ');
}

/** Parses `data` with `schema`, or throws Placement's 400 with `prefix` and the best-matching error. */
export function validateWith<T>(schema: z.ZodType<T>, data: unknown, prefix = 'JSON does not validate: '): T {
  const result = schema.safeParse(data);
  if (result.success) return result.data;
  const errors = result.error.issues.map((issue) => translate(issue, data));
  throw badRequest(`${prefix}${describe(bestMatch(errors), data)}`);
}

/** Placement's "format: uuid" (oslo's is_uuid_like): 32 hex digits once urn:/uuid: prefixes, braces and dashes go. */
export function isUuidLike(value: string): boolean {
  const s = value.toLowerCase().replace('urn:', '').replace('uuid:', '').replace(/[{}]/g, '').replace(/-/g, '');
  return /^[0-9a-f]{32}$/.test(s);
}

/** A string with Placement's "format": "uuid". */
export const uuidString = () => z.string().check(jsonschemaCheck<string>('format', isUuidLike, (v) => `${pyStr(v)} is not a 'uuid'`, 'uuid'));

/** An object with "minProperties". */
export const minProperties = <T extends object>(n: number) =>
  jsonschemaCheck<T>('minProperties', (v) => Object.keys(v).length >= n, (v) => `${repr(v)} does not have enough properties`, n);

/** An array with "uniqueItems". */
export const uniqueItems = <T>() =>
  jsonschemaCheck<T[]>('uniqueItems', (v) => new Set(v.map((x) => JSON.stringify(x))).size === v.length, (v) => `${repr(v)} has non-unique elements`, true);
