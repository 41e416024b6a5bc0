// The latest decisions (GET /console/api/decisions, newest first); a row opens its rendered trace.
import { call, errorText } from './api.ts';
import { byId, clear, h, num } from './dom.ts';
import type { Dialect } from './fleet.ts';
import { candidate, labelProviders, renderTrace } from './trace.ts';

export interface Decision {
  id: number; at: string; dialect: Dialect; outcome: string; status: number; dry_run: boolean;
  request: Record<string, unknown>; targets: string[]; duration_ms: number; counts?: Record<string, number>;
  detail?: string; explained: boolean; explain?: unknown; explain_omitted?: number; request_id?: string;
}

const GOOD = new Set(['placed', 'candidates', 'dry_run', 'nothing_missing']);

function outcomeBadge(outcome: string): HTMLElement {
  return h('span', { class: `badge ${GOOD.has(outcome) ? 'good' : outcome === 'degraded' ? 'warn' : 'bad'}` }, outcome.replaceAll('_', ' '));
}

function requestText(r: Record<string, unknown>): string {
  return Object.entries(r).map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`).join(' ');
}

/** The heading of a decision or what-if answer: outcome, targets, counts, detail. */
export function decisionSummary(d: Pick<Decision, 'outcome' | 'targets' | 'detail' | 'counts' | 'duration_ms' | 'dry_run'>): HTMLElement {
  const counts = d.counts ? Object.entries(d.counts).map(([k, v]) => `${k} ${num(v)}`).join(' · ') : '';
  return h('div', { class: 'summary' },
    outcomeBadge(d.outcome),
    d.targets.length > 0 ? h('span', { class: 'targets' }, ' → ', ...d.targets.flatMap((t, i) => [i > 0 ? ', ' : '', candidate(t)])) : h('span', { class: 'muted' }, ' no target'),
    counts ? h('span', { class: 'muted' }, ` · ${counts}`) : null,
    h('span', { class: 'muted' }, ` · ${num(d.duration_ms)} ms${d.dry_run ? ' · dry run' : ''}`),
    d.detail ? h('p', { class: 'detail' }, d.detail) : null);
}

let selected: number | null = null;
let timer: number | undefined;
/** The ids last rendered: polling redraws the table only when something changed. */
let rendered = '';

async function showDetail(id: number): Promise<void> {
  selected = id;
  const box = byId('decision-detail');
  const answer = await call(`console/api/decisions/${id}`);
  if (selected !== id) return;
  clear(box);
  if (!answer.ok) {
    box.append(h('p', { class: 'error' }, errorText(answer.body, answer.status)));
    return;
  }
  const d = answer.body as Decision;
  box.append(h('h2', null, `Decision ${d.id} · ${d.dialect} · ${new Date(d.at).toLocaleTimeString()}`),
    h('p', { class: 'muted' }, requestText(d.request), d.request_id ? ` · request ${d.request_id}` : ''),
    decisionSummary(d), renderTrace(d.dialect, d.explain, d.explain_omitted ?? 0));
  if (d.dialect === 'placement') void labelProviders(box);
  for (const tr of document.querySelectorAll<HTMLElement>('#decisions-rows tr')) tr.classList.toggle('selected', tr.dataset.id === String(id));
}

async function loadDecisions(): Promise<void> {
  const answer = await call('console/api/decisions?limit=200');
  const tbody = byId('decisions-rows');
  if (!answer.ok) {
    rendered = '';
    clear(tbody);
    tbody.append(h('tr', null, h('td', { colspan: 7, class: 'error' }, errorText(answer.body, answer.status))));
    return;
  }
  const { capacity, decisions } = answer.body as { capacity: number; decisions: Decision[] };
  const key = decisions.map((d) => d.id).join(',');
  if (key === rendered && tbody.firstChild) return;
  rendered = key;
  clear(tbody);
  byId('decisions-count').textContent = `${num(decisions.length)} of the latest ${num(capacity)} kept`;
  if (decisions.length === 0) tbody.append(h('tr', null, h('td', { colspan: 7, class: 'muted' }, 'No decision yet: schedule something, or run a what-if.')));
  for (const d of decisions) {
    const tr = h('tr', { 'data-id': d.id, class: `clickable${d.id === selected ? ' selected' : ''}`, tabindex: 0, title: d.explained ? 'Show the trace' : 'Not traced: show the answer' },
      h('td', null, String(d.id)), h('td', null, new Date(d.at).toLocaleTimeString()), h('td', null, d.dialect),
      h('td', null, outcomeBadge(d.outcome), d.explained ? h('span', { class: 'muted', title: 'traced' }, ' ◆') : null),
      h('td', { class: 'request', title: requestText(d.request) }, requestText(d.request)),
      h('td', { class: 'targets' }, ...d.targets.flatMap((t, i) => [i > 0 ? ', ' : '', candidate(t)])), h('td', null, num(d.duration_ms)));
    tr.addEventListener('click', () => void showDetail(d.id));
    tr.addEventListener('keydown', (e) => {
      if (e.key === 'Enter') void showDetail(d.id);
    });
    tbody.append(tr);
  }
  void labelProviders(tbody);
}

export function showDecisions(id?: number): void {
  void loadDecisions().then(() => (id !== undefined ? showDetail(id) : undefined));
  schedule();
}

function schedule(): void {
  clearInterval(timer);
  const auto = byId<HTMLInputElement>('decisions-auto');
  if (auto.checked) {
    timer = window.setInterval(() => {
      if (!byId('view-decisions').hidden && document.visibilityState === 'visible') void loadDecisions();
    }, 5000);
  }
}

export function initDecisions(): void {
  byId('decisions-refresh').addEventListener('click', () => void loadDecisions());
  byId('decisions-auto').addEventListener('change', schedule);
}
