// Explain traces as tables: every filter with its in/out counts, every rejected candidate with its reason, the
// ranked candidates with each weigher's raw and normalised weight. One renderer per dialect's trace shape; any
// other shape is shown as JSON rather than hidden.
import { call } from './api.ts';
import { bytes, h, num, table } from './dom.ts';
import type { Dialect } from './fleet.ts';

type Json = Record<string, unknown>;
interface FilterRow { stage?: string; name: string; in: number; out: number }
interface Rejected { candidate: string; filter: string; reason: string }
interface Ranked { candidate: string; weight: number; weighers: Record<string, { raw: number; normalized: number }> }

const isObj = (v: unknown): v is Json => v !== null && typeof v === 'object' && !Array.isArray(v);
const arr = (v: unknown): Json[] => (Array.isArray(v) ? v.filter(isObj) : []);
const n = (v: unknown): number => (typeof v === 'number' ? v : NaN);
const s = (v: unknown): string => (v === undefined || v === null ? '' : String(v));

function section(title: string, ...content: Array<Node | string | null>): HTMLElement {
  return h('section', { class: 'trace-part' }, h('h3', null, title), ...content);
}

/** A count, or a dash where the trace does not say (a search stage has no "in"). */
const count = (x: number): string => (Number.isFinite(x) ? num(x) : '—');

function filtersTable(rows: FilterRow[]): HTMLElement {
  const staged = rows.some((r) => r.stage);
  return table('trace-filters', [...(staged ? ['Stage'] : []), 'Filter', 'In', 'Out', 'Rejected'], rows.map((r) => [
    ...(staged ? [r.stage ?? ''] : []), h('code', null, r.name), count(r.in), count(r.out),
    h('span', { class: r.in > r.out ? 'warn' : 'muted' }, count(r.in - r.out)),
  ]));
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** A candidate's name; provider uuids are marked so that labelProviders can show their names. */
export function candidate(id: string): HTMLElement {
  return h('code', UUID.test(id) ? { 'data-provider': id, title: id } : null, id);
}

function rejectedTable(rows: Rejected[], expected: number): HTMLElement {
  if (rows.length === 0) return h('p', { class: 'muted' }, 'No candidate was rejected.');
  const note = expected > rows.length ? h('p', { class: 'muted' }, `Showing ${num(rows.length)} of ${num(expected)} rejected candidates.`) : null;
  return h('div', null, table('trace-rejected', ['Candidate', 'Filter', 'Reason'], rows.map((r) => [
    candidate(r.candidate), h('code', null, r.filter), r.reason,
  ])), note);
}

function rankedTable(rows: Ranked[], total?: number): HTMLElement {
  if (rows.length === 0) return h('p', { class: 'muted' }, 'No candidate passed every filter.');
  const weighers = [...new Set(rows.flatMap((r) => Object.keys(r.weighers)))];
  const head = ['Rank', 'Candidate', 'Weight', ...weighers.flatMap((w) => [h('span', null, h('code', null, w), ' raw'), 'normalised'])];
  const body = rows.map((r, i) => [
    i === 0 ? h('strong', null, '1 ✓') : String(i + 1), candidate(r.candidate), num(r.weight),
    ...weighers.flatMap((w) => {
      const x = r.weighers[w];
      return x ? [num(x.raw), num(x.normalized)] : ['', ''];
    }),
  ]);
  const note = total !== undefined && total > rows.length ? h('p', { class: 'muted' }, `Showing ${num(rows.length)} of ${num(total)} ranked candidates.`) : null;
  return h('div', null, table('trace-ranked', head, body), note);
}

const rankedFrom = (list: Json[], key: string): Ranked[] => list.map((w) => ({
  candidate: s(w[key]), weight: n(w.weight), weighers: (isObj(w.weighers) ? w.weighers : {}) as Ranked['weighers'],
}));

function volumesTrace(t: Json): HTMLElement[] {
  const filters = arr(t.filters);
  const rejected = filters.flatMap((f) => arr(f.rejected).map((r) => ({ candidate: s(r.pool), filter: s(f.name), reason: s(r.reason) })));
  const expected = filters.reduce((sum, f) => sum + n(f.in) - n(f.out), 0);
  const weighed = arr(t.weighed);
  const passed = filters.length > 0 ? n(filters[filters.length - 1]!.out) : weighed.length;
  return [
    section('Filters', filtersTable(filters.map((f) => ({ name: s(f.name), in: n(f.in), out: n(f.out) })))),
    section('Rejected candidates', rejectedTable(rejected, expected)),
    section('Ranked candidates', rankedTable(rankedFrom(weighed, 'pool'), passed)),
  ];
}

function placementTrace(t: Json): HTMLElement[] {
  const groups = arr(t.groups);
  const filters = arr(t.filters);
  const rows: FilterRow[] = groups.map((g) => ({
    stage: `group '${s(g.suffix)}'`, name: `${s(g.path)} search`, in: NaN, out: n(g.candidates),
  }));
  for (const f of filters) rows.push({ stage: 'merged', name: s(f.name), in: n(f.in), out: n(f.out) });
  const parts: HTMLElement[] = [];
  const summary = [`${num(n(t.total))} candidates passed`, `${num(n(t.returned))} returned`];
  if (typeof t.stopped === 'string') summary.push(`search stopped: ${t.stopped}`);
  parts.push(section('Search', h('p', null, summary.join(' · ')), rows.length > 0 ? filtersTable(rows) : null));
  const iso = t.isolate_aggregates;
  parts.push(section('isolate_aggregates', Array.isArray(iso)
    ? (iso.length === 0 ? h('p', { class: 'muted' }, 'No aggregate isolated.')
      : table('trace-isolated', ['Aggregate', 'Reason'], arr(iso).map((a) => [h('code', null, s(a.uuid)), s(a.reason)])))
    : h('p', { class: 'muted' }, s(iso))));
  const rejected = filters.flatMap((f) => arr(f.rejected).map((r) => ({ candidate: s(r.root_provider_uuid), filter: s(f.name), reason: s(r.reason) })));
  parts.push(section('Rejected candidates', rejectedTable(rejected, filters.reduce((sum, f) => sum + n(f.in) - n(f.out), 0))));
  parts.push(section('Ranked candidates', Array.isArray(t.weighed)
    ? rankedTable(rankedFrom(arr(t.weighed), 'root_provider_uuid'), n(t.total))
    : h('p', { class: 'muted' }, `Order: ${s(t.weighed)} (randomize_allocation_candidates)`)));
  return parts;
}

function stepRows(stage: string, steps: Json[]): FilterRow[] {
  return steps.map((st) => ({ stage, name: s(st.name), in: n(st.in), out: n(st.out) }));
}

function stepRejected(steps: Json[]): Rejected[] {
  return steps.flatMap((st) => arr(st.rejected).map((r) => ({
    candidate: r.disk !== undefined ? `${s(r.node)}/${s(r.disk)}` : s(r.node),
    filter: s(r.filter ?? st.name),
    reason: `${r.reason ? `${s(r.reason)}: ` : ''}${s(r.message)}`,
  })));
}

function balanceTable(title: string, rows: Json[], key: string, chosen: string | null): HTMLElement {
  // Longhorn's balance selection takes the lowest score; a null score was skipped (does not fit).
  const sorted = [...rows].sort((a, b) => (a.score === null ? 1 : b.score === null ? -1 : n(a.score) - n(b.score)));
  return h('div', null, h('h4', null, title), table('trace-ranked', ['Rank', key === 'node' ? 'Node' : 'Disk', 'Usable (raw)', 'Score (lower wins)'],
    sorted.map((r, i) => [
      s(r[key]) === chosen ? h('strong', null, `${i + 1} ✓`) : String(i + 1), h('code', null, s(r[key])), bytes(n(r.usable)),
      r.score === null ? h('span', { class: 'muted' }, 'skipped') : num(n(r.score)),
    ])));
}

function replicasTrace(t: Json): HTMLElement[] {
  const nodeSteps = arr(t.schedulableNodes);
  const tagStep = isObj(t.nodeTags) ? [t.nodeTags] : [];
  const diskSteps = arr(t.diskPrefilter);
  const steps = [...nodeSteps, ...tagStep, ...diskSteps];
  const rows = [...stepRows('nodes', nodeSteps), ...stepRows('node tags', tagStep), ...stepRows('disks', diskSteps)];
  const parts: HTMLElement[] = [
    section('Filters', h('p', null, `${num(n(t.missingReplicas))} replica(s) missing`), filtersTable(rows)),
    section('Rejected candidates', rejectedTable(stepRejected(steps), rows.reduce((sum, r) => sum + (Number.isFinite(r.in - r.out) ? r.in - r.out : 0), 0))),
  ];
  for (const rep of arr(t.replicas)) {
    const result = isObj(rep.result) ? rep.result : {};
    const title = result.node !== undefined
      ? `Replica ${num(n(rep.index) + 1)} → ${s(result.node)}/${s(result.disk)} (tier ${s(result.tier)})`
      : `Replica ${num(n(rep.index) + 1)}: not placed — ${s(result.reason)}`;
    const tiers = arr(rep.tiers);
    const tierRows: FilterRow[] = tiers.flatMap((tier) => [
      ...stepRows(s(tier.tier), arr(tier.checks)),
      ...(isObj(tier.antiAffinity) ? [{ stage: s(tier.tier), name: `anti-affinity${tier.antiAffinity.soft ? ' (soft)' : ''}`, in: n(tier.antiAffinity.in), out: n(tier.antiAffinity.out) }] : []),
    ]);
    const dropped = tiers.flatMap((tier) => arr(isObj(tier.antiAffinity) ? tier.antiAffinity.dropped : []).map((d) => ({
      candidate: `${s(d.node)}/${s(d.disk)}`, filter: `anti-affinity (${s(tier.tier)})`, reason: `${num(n(d.replicasOfVolume))} replica(s) of the volume already there`,
    })));
    const balance = isObj(rep.balance) ? rep.balance : null;
    parts.push(section(title,
      tiers.length > 0 ? h('p', { class: 'muted' }, tiers.map((tier) => `${s(tier.tier)}: ${s(tier.description)} → ${num(n(tier.candidates))} candidate(s)`).join(' · ')) : null,
      tierRows.length > 0 ? filtersTable(tierRows) : null,
      rejectedTable([...stepRejected(tiers.flatMap((tier) => arr(tier.checks))), ...dropped], 0),
      balance ? h('p', null, `Balance selection: ${s(balance.how)}`) : null,
      balance && arr(balance.nodeStage).length > 0 ? balanceTable('Ranked nodes', arr(balance.nodeStage), 'node', s(balance.chosenNode)) : null,
      balance && arr(balance.diskStage).length > 0 ? balanceTable('Ranked disks', arr(balance.diskStage), 'disk', s(result.disk)) : null));
  }
  return parts;
}

/** The rendered trace of a decision of `dialect`. */
export function renderTrace(dialect: Dialect, explain: unknown, omitted = 0): HTMLElement {
  const box = h('div', { class: 'trace', 'data-dialect': dialect });
  if (!isObj(explain)) {
    box.append(h('p', { class: 'muted' }, 'This decision was not traced (ask with explain=true).'));
    return box;
  }
  let parts: HTMLElement[];
  if (dialect === 'volumes' && Array.isArray(explain.filters) && Array.isArray(explain.weighed)) parts = volumesTrace(explain);
  else if (dialect === 'placement' && Array.isArray(explain.groups)) parts = placementTrace(explain);
  else if (dialect === 'replicas' && Array.isArray(explain.replicas)) parts = replicasTrace(explain);
  else parts = [section('Trace', h('pre', null, JSON.stringify(explain, null, 2)))];
  if (omitted > 0) box.append(h('p', { class: 'muted' }, `${num(omitted)} list item(s) were left out of the stored trace to keep it small; a what-if shows it whole.`));
  box.append(...parts);
  return box;
}

/**
 * Provider uuids read badly: look their names up (one fleet request for all of them) and show "name" with the uuid
 * as its tooltip.
 */
export async function labelProviders(root: HTMLElement): Promise<void> {
  const cells = [...root.querySelectorAll<HTMLElement>('[data-provider]')];
  const ids = [...new Set(cells.map((c) => c.dataset.provider!))];
  if (ids.length === 0) return;
  const q = new URLSearchParams({ dialect: 'placement', ids: ids.join(','), limit: '1000' });
  const answer = await call(`console/api/fleet?${q}`);
  if (!answer.ok) return;
  const names = new Map((answer.body as { rows: Array<{ id: string; name: string }> }).rows.map((r) => [r.id, r.name]));
  for (const c of cells) {
    const name = names.get(c.dataset.provider!);
    if (name !== undefined) c.textContent = name;
  }
}
