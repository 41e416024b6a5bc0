// The fleet view: one dialect's pools, disks or provider trees as capacity bars, a page at a time from
// GET /console/api/fleet (filtered and ordered by Berth, so 10,000 items cost one small request).
import { call, errorText } from './api.ts';
import { amount, byId, clear, h, num } from './dom.ts';

export type Dialect = 'volumes' | 'placement' | 'replicas';

interface Bar { label: string; unit: string; used: number; free: number; headroom: number; over: boolean; unbounded?: string }
interface Row {
  id: string; name: string; group: string; depth: number; state: string; tags: string[]; bars: Bar[];
  figures: Record<string, number | string | boolean | null>;
}
interface Page {
  dialect: Dialect; items: string; total: number; offset: number; limit: number;
  totals: Record<string, { unit: string; used: number; free: number; headroom: number }>; rows: Row[];
}

const PAGE_SIZE = 100;
const state = { dialect: 'volumes' as Dialect, name: '', order: 'name', offset: 0, seq: 0, total: 0 };

function bar(b: Bar): HTMLElement {
  if (b.unbounded) return h('div', { class: 'barline' }, h('span', { class: 'muted' }, `${b.label}: ${b.unbounded}`));
  const whole = b.used + b.free + b.headroom;
  const pct = (n: number) => `${whole > 0 ? (100 * n) / whole : 0}%`;
  const seg = (cls: string, n: number) => {
    const s = h('span', { class: cls });
    s.style.width = pct(n);
    return s;
  };
  const text = [`${amount(b.unit, b.used)} used`, `${amount(b.unit, b.free)} free`];
  if (b.headroom > 0) text.push(`+${amount(b.unit, b.headroom)} over-subscribed`);
  const track = h('div', { class: `bar${b.over ? ' over' : ''}`, title: text.join(' · ') },
    seg('used', b.used), seg('free', b.free), seg('headroom', b.headroom));
  return h('div', { class: 'barline' },
    h('span', { class: 'barlabel' }, b.label), track,
    h('span', { class: 'bartext' }, `${text.join(' · ')}${b.over ? ' · past the scheduling limit' : ''}`));
}

function figuresTitle(f: Row['figures']): string {
  return Object.entries(f).map(([k, v]) => `${k} = ${typeof v === 'number' ? num(v) : String(v)}`).join('\n');
}

function rowElement(r: Row): HTMLTableRowElement {
  const name = h('td', { class: 'name', title: `${r.id}\n${figuresTitle(r.figures)}` }, r.name);
  name.style.paddingLeft = `${0.5 + r.depth * 1.25}rem`;
  if (r.depth > 0) name.prepend(h('span', { class: 'muted' }, '└ '));
  return h('tr', { 'data-id': r.id },
    name,
    h('td', { class: 'muted' }, r.group, ...r.tags.map((t) => h('span', { class: 'tag' }, t))),
    h('td', { class: r.state === 'ok' ? 'ok' : 'warn' }, r.state),
    h('td', { class: 'bars' }, ...(r.bars.length > 0 ? r.bars.map(bar) : [h('span', { class: 'muted' }, 'no inventory')])));
}

async function load(): Promise<void> {
  const seq = ++state.seq;
  performance.mark('fleet-start');
  const q = new URLSearchParams({ dialect: state.dialect, order: state.order, offset: String(state.offset), limit: String(PAGE_SIZE) });
  if (state.name !== '') q.set('name', state.name);
  const answer = await call(`console/api/fleet?${q}`);
  if (seq !== state.seq) return; // a newer request (typing in the filter) superseded this one
  const tbody = byId('fleet-rows');
  const totals = byId('fleet-totals');
  clear(tbody);
  clear(totals);
  if (!answer.ok) {
    byId('fleet-range').textContent = '';
    tbody.append(h('tr', null, h('td', { colspan: 4, class: 'error' }, errorText(answer.body, answer.status))));
    return;
  }
  const page = answer.body as Page;
  state.total = page.total;
  const first = page.total === 0 ? 0 : page.offset + 1;
  byId('fleet-range').textContent = `${num(first)}–${num(page.offset + Math.min(page.limit, page.total - page.offset))} of ${num(page.total)} ${page.items}`;
  byId<HTMLButtonElement>('fleet-prev').disabled = page.offset === 0;
  byId<HTMLButtonElement>('fleet-next').disabled = page.offset + page.limit >= page.total;
  for (const [label, t] of Object.entries(page.totals)) {
    totals.append(h('div', { class: 'total' }, bar({ label: `Σ ${label}`, ...t, over: false })));
  }
  const rows = document.createDocumentFragment();
  for (const r of page.rows) rows.append(rowElement(r));
  if (page.rows.length === 0) rows.append(h('tr', null, h('td', { colspan: 4, class: 'muted' }, state.name ? `nothing matches “${state.name}”` : 'nothing reported yet')));
  tbody.append(rows);
  performance.measure('fleet-render', 'fleet-start');
  document.body.dataset.fleetLoads = String(seq);
}

export function showFleet(dialect?: Dialect): void {
  if (dialect && dialect !== state.dialect) {
    state.dialect = dialect;
    state.offset = 0;
  }
  for (const b of document.querySelectorAll<HTMLButtonElement>('#fleet-dialects button')) {
    b.setAttribute('aria-pressed', String(b.dataset.dialect === state.dialect));
  }
  void load();
}

export function initFleet(): void {
  for (const b of document.querySelectorAll<HTMLButtonElement>('#fleet-dialects button')) {
    b.addEventListener('click', () => {
      location.hash = `#fleet/${b.dataset.dialect}`;
    });
  }
  let timer: number | undefined;
  byId<HTMLInputElement>('fleet-filter').addEventListener('input', (e) => {
    clearTimeout(timer);
    timer = window.setTimeout(() => {
      state.name = (e.target as HTMLInputElement).value.trim();
      state.offset = 0;
      void load();
    }, 150);
  });
  byId<HTMLSelectElement>('fleet-order').addEventListener('change', (e) => {
    state.order = (e.target as HTMLSelectElement).value;
    state.offset = 0;
    void load();
  });
  byId('fleet-prev').addEventListener('click', () => {
    state.offset = Math.max(0, state.offset - PAGE_SIZE);
    void load();
  });
  byId('fleet-next').addEventListener('click', () => {
    if (state.offset + PAGE_SIZE < state.total) state.offset += PAGE_SIZE;
    void load();
  });
}
