// CapabilitiesFilter's extra-spec matching (cinder/scheduler/filters/capabilities_filter.py and extra_specs_ops.py),
// with Python's semantics for float(), bool_from_string() and ==. Pure.
// Where Cinder would raise (TypeError from s< on a number, IndexError from a bare "<or>"), the spec does not match.

const TRUE_STRINGS = new Set(['1', 't', 'true', 'on', 'y', 'yes']);

/** oslo strutils.bool_from_string(subject, strict=False, default=False). */
export function boolFromString(subject: unknown): boolean {
  if (typeof subject === 'boolean') return subject;
  return TRUE_STRINGS.has(pyStr(subject).trim().toLowerCase());
}

/** Python's str() for JSON values, as far as the matchers need it. */
function pyStr(v: unknown): string {
  if (typeof v === 'string') return v;
  if (v === true) return 'True';
  if (v === false) return 'False';
  if (v === null || v === undefined) return 'None';
  return String(v);
}

const DECIMAL = /^[+-]?(?:\d(?:_?\d)*(?:\.(?:\d(?:_?\d)*)?)?|\.\d(?:_?\d)*)(?:[eE][+-]?\d(?:_?\d)*)?$/;
const SPECIAL = /^[+-]?(?:inf|infinity|nan)$/i;

/** Python's float(x); undefined where Python raises ValueError/TypeError. */
export function pyFloat(v: unknown): number | undefined {
  if (typeof v === 'number') return v;
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (typeof v !== 'string') return undefined;
  const s = v.trim();
  if (DECIMAL.test(s)) return Number(s.replace(/_/g, ''));
  if (SPECIAL.test(s)) {
    const lower = s.toLowerCase();
    if (lower.endsWith('nan')) return NaN;
    return lower.startsWith('-') ? -Infinity : Infinity;
  }
  return undefined;
}

type Method = (value: unknown, word: string) => boolean;

function floatCompare(cmp: (a: number, b: number) => boolean): Method {
  return (value, word) => {
    const a = pyFloat(value);
    const b = pyFloat(word);
    return a !== undefined && b !== undefined && cmp(a, b);
  };
}

/** s<, s> … : Python compares str with str only (anything else raises TypeError in Cinder). */
function stringCompare(cmp: (a: string, b: string) => boolean): Method {
  return (value, word) => typeof value === 'string' && cmp(value, word);
}

const OP_METHODS: Record<string, Method> = {
  '=': floatCompare((a, b) => a >= b), // sic: Cinder's "=" means "at least"
  '<in>': (value, word) => {
    if (typeof value === 'string') return value.includes(word);
    if (value !== null && typeof value === 'object' && !Array.isArray(value)) return Object.hasOwn(value, word);
    return false;
  },
  '<is>': (value, word) => boolFromString(value) === boolFromString(word),
  '==': floatCompare((a, b) => a === b),
  '!=': floatCompare((a, b) => a !== b),
  '>=': floatCompare((a, b) => a >= b),
  '<=': floatCompare((a, b) => a <= b),
  's==': (value, word) => value === word,
  's!=': (value, word) => value !== word,
  's<': stringCompare((a, b) => a < b),
  's<=': stringCompare((a, b) => a <= b),
  's>': stringCompare((a, b) => a > b),
  's>=': stringCompare((a, b) => a >= b),
};

/** Python's str.split() with no argument. */
function pySplit(s: string): string[] {
  // eslint-disable-next-line no-control-regex -- Python's str.split() whitespace includes \x1c-\x1f
  return s.split(/[\s\u001c-\u001f\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+/).filter((w) => w !== '');
}

/** A requirement split once: Cinder's first word is the operator. */
interface ParsedRequirement {
  req: string | null;
  op: string | undefined;
  method: Method | undefined;
  words: string[];
}

function parseRequirement(req: string | null): ParsedRequirement {
  if (req === null) return { req, op: undefined, method: undefined, words: [] };
  const words = pySplit(req);
  const op = words.shift();
  return { req, op, method: op === undefined ? undefined : OP_METHODS[op], words };
}

/** extra_specs_ops.match(value, req). */
export function matchExtraSpec(value: unknown, req: string | null): boolean {
  return matchParsed(value, parseRequirement(req));
}

function matchParsed(value: unknown, parsed: ParsedRequirement): boolean {
  const { req, op, method, words } = parsed;
  if (req === null) return value === null || value === undefined;
  if (op !== '<or>' && method === undefined) return typeof value === 'string' && value === req;
  if (value === null || value === undefined) return false;
  if (op === '<or>') {
    // <or> v1 <or> v2 …: equality of the capability with any word (Python: str == str only).
    for (let i = 0; i < words.length; i += 2) {
      if (typeof value === 'string' && words[i] === value) return true;
    }
    return false;
  }
  return words.length > 0 && method!(value, words[0]!);
}

/** A volume type's extra specs, pre-parsed once per request. */
export interface CompiledSpec {
  key: string;
  req: string | null;
  /** The capability path (after dropping a "capabilities:" scope). */
  path: string[];
  parsed: ParsedRequirement;
}

/** Keys scoped with anything but "capabilities:" (provisioning:type, vendor:…, qos:…) never filter. */
export function compileExtraSpecs(extraSpecs: Record<string, string | null> | undefined): CompiledSpec[] {
  const specs: CompiledSpec[] = [];
  if (!extraSpecs) return specs;
  for (const [key, req] of Object.entries(extraSpecs)) {
    const scope = key.split(':');
    if (scope.length > 1 && scope[0] !== 'capabilities') continue;
    if (scope[0] === 'capabilities') scope.shift();
    specs.push({ key, req, path: scope, parsed: parseRequirement(req) });
  }
  return specs;
}

type SpecMismatch = { key: string; req: string | null; reason: 'missing'; missing: string } |
  { key: string; req: string | null; reason: 'mismatch'; value: unknown };

/** What capabilityAt answers when a part of the path is not there. */
const MISSING: unique symbol = Symbol('missing capability');

/** The capability at `path` (nested dicts), or MISSING; allocation-free for the hot path. */
function capabilityAt(capabilities: Record<string, unknown>, path: readonly string[]): unknown {
  let cap: unknown = capabilities;
  for (const part of path) {
    if (cap !== null && typeof cap === 'object' && !Array.isArray(cap) && Object.hasOwn(cap, part)) {
      cap = (cap as Record<string, unknown>)[part];
    } else {
      return MISSING;
    }
  }
  return cap;
}

/** CapabilitiesFilter._satisfies_extra_specs: null when every spec matches, else the first failure. */
export function satisfiesExtraSpecs(capabilities: Record<string, unknown>, specs: readonly CompiledSpec[]): SpecMismatch | null {
  for (const spec of specs) {
    const cap = capabilityAt(capabilities, spec.path);
    if (cap === MISSING) {
      // Cold path: the first prefix of the path that is not there names the missing capability.
      const missing = spec.path.find((_, i) => capabilityAt(capabilities, spec.path.slice(0, i + 1)) === MISSING)!;
      return { key: spec.key, req: spec.req, reason: 'missing', missing };
    }
    const matches = Array.isArray(cap) ? cap.some((v) => matchParsed(v, spec.parsed)) : matchParsed(cap, spec.parsed);
    if (!matches) {
      return { key: spec.key, req: spec.req, reason: 'mismatch', value: cap };
    }
  }
  return null;
}

/** How a pool's capabilities meet a set of extra specs: the first failing spec decides. */
export const SPECS_MATCH = 0;
export const SPECS_MISSING = 1;
export const SPECS_MISMATCH = 2;
export type SpecsVerdict = typeof SPECS_MATCH | typeof SPECS_MISSING | typeof SPECS_MISMATCH;

/** satisfiesExtraSpecs' outcome without its details and without allocating (it runs for every pool). */
export function specsVerdict(capabilities: Record<string, unknown>, specs: readonly CompiledSpec[]): SpecsVerdict {
  for (const spec of specs) {
    const cap = capabilityAt(capabilities, spec.path);
    if (cap === MISSING) return SPECS_MISSING;
    if (Array.isArray(cap)) {
      let any = false;
      for (const v of cap) {
        if (matchParsed(v, spec.parsed)) {
          any = true;
          break;
        }
      }
      if (!any) return SPECS_MISMATCH;
    } else if (!matchParsed(cap, spec.parsed)) {
      return SPECS_MISMATCH;
    }
  }
  return SPECS_MATCH;
}
