// What-if forms: the same scheduling routes with dry_run=true&explain=true, rendered like a recorded decision.
import { call, errorText, type Answer } from './api.ts';
import { byId, clear, h } from './dom.ts';
import { decisionSummary } from './decisions.ts';
import type { Dialect } from './fleet.ts';
import { labelProviders, renderTrace } from './trace.ts';

const GIB = 1024 ** 3;

/** "key=value" lines (or comma-separated) into a volume type's extra specs. */
function parseExtraSpecs(text: string): Record<string, string> {
  const specs: Record<string, string> = {};
  for (const line of text.split(/\n/)) {
    const t = line.trim();
    if (t === '') continue;
    const eq = t.indexOf('=');
    if (eq <= 0) throw new Error(`extra spec "${t}" is not key=value`);
    specs[t.slice(0, eq).trim()] = t.slice(eq + 1).trim();
  }
  return specs;
}

type Body = Record<string, unknown>;

async function run(dialect: Dialect, form: HTMLFormElement): Promise<void> {
  const data = new FormData(form);
  const field = (k: string) => String(data.get(k) ?? '').trim();
  const out = byId('whatif-result');
  clear(out);
  const started = performance.now();
  let answer;
  /** Asked once the what-if itself answered: a refusal (401/403) then stays what the banner shows. */
  let headroom: (() => Promise<Answer>) | undefined;
  try {
    if (dialect === 'volumes') {
      const body: Body = { size: Number(field('size')) };
      const specs = parseExtraSpecs(field('extra_specs'));
      if (Object.keys(specs).length > 0) body.volume_type = { extra_specs: specs };
      if (field('availability_zone') !== '') body.availability_zone = field('availability_zone');
      headroom = () => call('volumes/headroom', { method: 'POST', body: JSON.stringify(body) });
      answer = await call('volumes/schedule?dry_run=true&explain=true', { method: 'POST', body: JSON.stringify(body) });
    } else if (dialect === 'replicas') {
      const body = { volume: { name: field('name'), size: Math.round(Number(field('size')) * GIB), numberOfReplicas: Number(field('replicas')) } };
      headroom = () => call('replicas/headroom', { method: 'POST', body: JSON.stringify(body) });
      answer = await call('replicas/schedule?dry_run=true&explain=true', { method: 'POST', body: JSON.stringify(body) });
    } else {
      const q = new URLSearchParams({ resources: field('resources') });
      if (field('required') !== '') q.set('required', field('required'));
      if (field('limit') !== '') q.set('limit', field('limit'));
      const counted = new URLSearchParams(q);
      counted.delete('limit');
      headroom = () => call(`headroom?${counted}`, { headers: { 'openstack-api-version': 'placement 1.39' } });
      q.set('dry_run', 'true');
      q.set('explain', 'true');
      answer = await call(`allocation_candidates?${q}`, { headers: { 'openstack-api-version': 'placement 1.39' } });
    }
  } catch (err) {
    out.append(h('p', { class: 'error' }, (err as Error).message));
    return;
  }
  const ms = Math.round((performance.now() - started) * 10) / 10;
  const body = (answer.body ?? {}) as Body;
  const title = h('h2', null, `What-if · ${dialect}`);
  if (answer.status !== 200 && answer.status !== 409) {
    out.append(title, h('p', { class: 'error', 'data-status': answer.status }, errorText(answer.body, answer.status)));
    return;
  }
  let outcome: string;
  let targets: string[];
  let counts: Record<string, number> | undefined;
  if (answer.status === 409) {
    outcome = String(body.type ?? 'conflict').split('/').pop()!.replaceAll('-', '_');
    targets = [];
  } else if (dialect === 'volumes') {
    outcome = 'dry_run';
    targets = [String(body.pool)];
  } else if (dialect === 'replicas') {
    const replicas = (body.replicas ?? []) as Array<{ node: string; disk: string }>;
    outcome = Array.isArray(body.unscheduled) ? 'degraded' : 'dry_run';
    targets = replicas.map((r) => `${r.node}/${r.disk}`);
  } else {
    const requests = (body.allocation_requests ?? []) as Array<{ allocations: Record<string, unknown> }>;
    outcome = requests.length > 0 ? 'candidates' : 'no_candidates';
    targets = requests.length > 0 ? Object.keys(requests[0]!.allocations) : [];
    counts = { returned: requests.length };
  }
  const unscheduled = Array.isArray(body.unscheduled) ? (body.unscheduled as Array<{ reason: string }>).map((u) => u.reason).join(' | ') : undefined;
  const detail = answer.status === 409 ? String(body.detail ?? '') : unscheduled;
  out.append(title, decisionSummary({ outcome, targets, counts, duration_ms: ms, dry_run: true, ...(detail ? { detail } : {}) }));
  if (headroom) out.append(headroomLine(await headroom()));
  out.append(renderTrace(dialect, body.explain));
  if (dialect === 'placement') void labelProviders(out);
}

/** "How many more of these fit?" — the dialect's headroom answer in one line. */
function headroomLine(answer: Answer): HTMLElement {
  if (answer.status !== 200) return h('p', { class: 'headroom error' }, `headroom: ${errorText(answer.body, answer.status)}`);
  const { fits, truncated } = answer.body as { fits: number; truncated: boolean };
  const text = `Headroom: ${truncated ? 'at least ' : ''}${fits.toLocaleString('en')} more of these fit`;
  return h('p', { class: 'headroom', 'data-fits': String(fits) }, text);
}

export function initWhatIf(): void {
  for (const dialect of ['volumes', 'replicas', 'placement'] as const) {
    const form = byId<HTMLFormElement>(`whatif-${dialect}`);
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      void run(dialect, form);
    });
  }
}
