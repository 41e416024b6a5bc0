// Every PromQL expression the deploy/ files hold: the Grafana dashboard's panel targets and variable queries, and
// the alert and recording rules. Read by scripts/conformance-prometheus.ts (which evaluates them on a real
// Prometheus) and by test/deploy.test.ts (which checks, without Prometheus, that they name only metrics Berth exports).
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parse } from 'yaml';

export const REPO = resolve(import.meta.dirname, '..');
export const DASHBOARD_FILE = join(REPO, 'deploy', 'grafana', 'berth.json');
export const ALERTS_FILE = join(REPO, 'deploy', 'prometheus', 'alerts.yml');

export interface PanelQuery {
  panel: string;
  refId: string;
  expr: string;
  datasourceUid: string | undefined;
}

interface Panel {
  title: string;
  type: string;
  datasource?: { uid?: string };
  targets?: Array<{ refId: string; expr: string; datasource?: { uid?: string } }>;
  panels?: Panel[];
}

export interface Dashboard {
  panels: Panel[];
  templating: { list: Array<{ name: string; type: string; query: unknown; allValue?: string; datasource?: { uid?: string } }> };
  [key: string]: unknown;
}

export function readDashboard(file = DASHBOARD_FILE): Dashboard {
  return JSON.parse(readFileSync(file, 'utf8')) as Dashboard;
}

/** Every panel target (rows' nested panels included). */
export function panelQueries(dashboard: Dashboard): PanelQuery[] {
  const out: PanelQuery[] = [];
  const walk = (panels: Panel[]) => {
    for (const p of panels) {
      for (const t of p.targets ?? []) out.push({ panel: p.title, refId: t.refId, expr: t.expr, datasourceUid: t.datasource?.uid });
      if (p.panels) walk(p.panels);
    }
  };
  walk(dashboard.panels);
  return out;
}

/** The query variables as label_values(selector, label). */
export function variableQueries(dashboard: Dashboard): Array<{ name: string; selector: string; label: string }> {
  const out: Array<{ name: string; selector: string; label: string }> = [];
  for (const v of dashboard.templating.list) {
    if (v.type !== 'query') continue;
    const text = typeof v.query === 'string' ? v.query : (v.query as { query: string }).query;
    const m = /^label_values\((.*),\s*([a-zA-Z_][a-zA-Z0-9_]*)\)$/.exec(text.trim());
    if (!m) throw new Error(`variable ${v.name}: not label_values(selector, label): ${text}`);
    out.push({ name: v.name, selector: m[1]!.trim(), label: m[2]! });
  }
  return out;
}

/**
 * What Grafana puts in place of the variables for one Berth job: $job, every instance (the variable's allValue), and
 * a rate window that spans several scrapes.
 */
export function substitute(expr: string, values: { job: string; rateInterval: string; interval?: string }): string {
  return expr
    .replaceAll('$__rate_interval', values.rateInterval)
    .replaceAll('$__interval', values.interval ?? values.rateInterval)
    .replaceAll('${job}', values.job).replaceAll('$job', values.job)
    .replaceAll('${instance}', '.*').replaceAll('$instance', '.*');
}

export interface Rule {
  group: string;
  kind: 'alert' | 'record';
  name: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

export function readRules(file = ALERTS_FILE): Rule[] {
  const doc = parse(readFileSync(file, 'utf8')) as { groups: Array<{ name: string; rules: Array<Record<string, unknown>> }> };
  return doc.groups.flatMap((g) => g.rules.map((r) => ({
    group: g.name,
    kind: (r.alert ? 'alert' : 'record') as Rule['kind'],
    name: String(r.alert ?? r.record),
    expr: String(r.expr),
    ...(r.for ? { for: String(r.for) } : {}),
    ...(r.labels ? { labels: r.labels as Record<string, string> } : {}),
    ...(r.annotations ? { annotations: r.annotations as Record<string, string> } : {}),
  })));
}

/** The metric names an expression reads: Berth's (berth_…), recording rules' (berth:…) and Prometheus's own `up`. */
export function metricNames(expr: string): { exported: string[]; recorded: string[] } {
  // Label values ("…") are no metric names.
  const code = expr.replace(/"(?:[^"\\]|\\.)*"/g, '""');
  const exported = new Set(code.match(/\bberth_[a-z0-9_]+\b/g) ?? []);
  if (/\bup\{/.test(code)) exported.add('up');
  const recorded = new Set(code.match(/\bberth:[a-z0-9_:]+\b/g) ?? []);
  return { exported: [...exported].sort(), recorded: [...recorded].sort() };
}

/** A histogram's series names (…_bucket, _sum, _count) belong to its family. */
export function familyOf(name: string, families: ReadonlySet<string>): string | undefined {
  if (families.has(name)) return name;
  const base = name.replace(/_(bucket|sum|count)$/, '');
  return families.has(base) ? base : undefined;
}
