// A reader of Prometheus's text exposition format (version 0.0.4), strict enough to fail on what Prometheus would
// refuse: every sample belongs to a family announced by # TYPE, label values are quoted and escaped, values parse.
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Family {
  name: string;
  type: 'counter' | 'gauge' | 'histogram' | 'summary' | 'untyped';
  help: string;
  samples: Sample[];
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

function parseValue(text: string): number {
  if (text === '+Inf') return Infinity;
  if (text === '-Inf') return -Infinity;
  if (text.toLowerCase() === 'nan') return NaN;
  const n = Number(text);
  if (text.trim() === '' || Number.isNaN(n)) throw new Error(`not a sample value: ${JSON.stringify(text)}`);
  return n;
}

function parseLabels(text: string, line: string): Record<string, string> {
  const labels: Record<string, string> = {};
  let i = 0;
  while (i < text.length) {
    const eq = text.indexOf('=', i);
    const name = text.slice(i, eq);
    if (eq < 0 || !LABEL.test(name)) throw new Error(`bad label name in ${line}`);
    if (text[eq + 1] !== '"') throw new Error(`unquoted label value in ${line}`);
    let value = '';
    let j = eq + 2;
    for (; j < text.length && text[j] !== '"'; j++) {
      if (text[j] === '\\') {
        const next = text[++j];
        value += next === 'n' ? '\n' : next;
      } else value += text[j];
    }
    if (j >= text.length) throw new Error(`unterminated label value in ${line}`);
    if (name in labels) throw new Error(`label ${name} twice in ${line}`);
    labels[name] = value;
    i = j + 1;
    if (text[i] === ',') i++;
  }
  return labels;
}

/** The families of a scrape, by name (histograms' _bucket/_sum/_count samples under the family's name). */
export function parseExposition(body: string): Map<string, Family> {
  const families = new Map<string, Family>();
  const help = new Map<string, string>();
  for (const line of body.split('\n')) {
    if (line.trim() === '') continue;
    if (line.startsWith('# HELP ')) {
      const [, name, ...rest] = line.split(' ').slice(1);
      help.set(name!, rest.join(' '));
      continue;
    }
    if (line.startsWith('# TYPE ')) {
      const [name, type] = line.slice(7).split(' ');
      if (!NAME.test(name!)) throw new Error(`bad metric name ${name}`);
      if (families.has(name!)) throw new Error(`${name} announced twice`);
      families.set(name!, { name: name!, type: type as Family['type'], help: help.get(name!) ?? '', samples: [] });
      continue;
    }
    if (line.startsWith('#')) continue;
    const brace = line.indexOf('{');
    const space = brace >= 0 ? line.indexOf(' ', line.lastIndexOf('}')) : line.indexOf(' ');
    const name = line.slice(0, brace >= 0 ? brace : space);
    const labels = brace >= 0 ? parseLabels(line.slice(brace + 1, line.lastIndexOf('}')), line) : {};
    const value = parseValue(line.slice(space + 1).trim().split(' ')[0]!);
    const family = families.get(name) ?? families.get(name.replace(/_(bucket|sum|count)$/, ''));
    if (!family) throw new Error(`sample without # TYPE: ${line}`);
    family.samples.push({ name, labels, value });
  }
  return families;
}

/** Label names used by a family's samples (without histograms' le). */
export function labelNames(family: Family): string[] {
  const names = new Set<string>();
  for (const s of family.samples) for (const k of Object.keys(s.labels)) if (k !== 'le') names.add(k);
  return [...names].sort();
}
