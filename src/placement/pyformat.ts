// Just enough of Python's repr() and pprint.pformat(width=72) to reproduce the jsonschema messages Placement
// returns for a malformed GET /allocation_candidates query string. Pure.

export type PyValue = string | number | boolean | null | PyValue[] | { [key: string]: PyValue };

export function pyRepr(v: PyValue): string {
  if (v === null) return 'None';
  if (typeof v === 'boolean') return v ? 'True' : 'False';
  if (typeof v === 'number') return String(v);
  if (typeof v === 'string') return pyStr(v);
  if (Array.isArray(v)) return `[${v.map(pyRepr).join(', ')}]`;
  const keys = Object.keys(v).sort();
  return `{${keys.map((k) => `${pyStr(k)}: ${pyRepr(v[k]!)}`).join(', ')}}`;
}

export function pyStr(s: string): string {
  const quote = s.includes("'") && !s.includes('"') ? '"' : "'";
  let out = '';
  for (const ch of s) {
    const code = ch.codePointAt(0)!;
    if (ch === '\\') out += '\\\\';
    else if (ch === quote) out += '\\' + ch;
    else if (ch === '\n') out += '\\n';
    else if (ch === '\r') out += '\\r';
    else if (ch === '\t') out += '\\t';
    else if (code < 0x20 || code === 0x7f) out += '\\x' + code.toString(16).padStart(2, '0');
    else out += ch;
  }
  return quote + out + quote;
}

/** pprint.pformat(v, width) with sorted dict keys (long strings are not split). */
export function pformat(v: PyValue, width = 72): string {
  const out: string[] = [];
  format(v, 0, 0);
  return out.join('');

  function format(obj: PyValue, indent: number, allowance: number): void {
    const rep = pyRepr(obj);
    if (rep.length > width - indent - allowance && obj !== null && typeof obj === 'object') {
      if (Array.isArray(obj)) {
        out.push('[');
        items(obj.map((x) => [null, x] as const), indent, allowance + 1);
        out.push(']');
      } else if (Object.keys(obj).length > 0) {
        out.push('{');
        items(Object.keys(obj).sort().map((k) => [k, obj[k]!] as const), indent, allowance + 1);
        out.push('}');
      } else out.push(rep);
      return;
    }
    out.push(rep);
  }

  function items(entries: ReadonlyArray<readonly [string | null, PyValue]>, indent: number, allowance: number): void {
    const inner = indent + 1;
    entries.forEach(([key, value], i) => {
      const last = i === entries.length - 1;
      if (i > 0) out.push(',\n' + ' '.repeat(inner));
      if (key === null) {
        format(value, inner, last ? allowance : 1);
      } else {
        const k = pyStr(key);
        out.push(k + ': ');
        format(value, inner + k.length + 2, last ? allowance : 1);
      }
    });
  }
}

/** str(jsonschema.ValidationError), as webob then flattens it (newlines become spaces). */
export function jsonschemaMessage(
  message: string, validator: string, schemaPath: string[], schema: PyValue, instancePath: string[], instance: PyValue,
): string {
  const idx = (container: string, path: string[]) => container + path.map((p) => `[${pyStr(p)}]`).join('');
  const pretty = (v: PyValue) => pformat(v).replace(/\n/g, '\n    ');
  const text = `${message}\n\nFailed validating ${pyStr(validator)} in ${idx('schema', schemaPath)}:\n    ${pretty(schema)}\n\n` +
    `On ${idx('instance', instancePath)}:\n    ${pretty(instance)}`;
  return text.replace(/\n/g, ' ');
}
