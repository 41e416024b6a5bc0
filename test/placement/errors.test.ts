// Every entry of test/fixtures/placement-errors.json (what Placement 8 answered) through app.inject: status, title, code and detail compared
// exactly (request_id differs); the 200 entries by candidate count (and allocations of the first where the
// fixture makes it unique).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { build } from '../helper.ts';
import { call, createProviders, u } from './fixtures.ts';

interface Entry {
  request: { microversion: string; query: string };
  answer: {
    status: number;
    title?: string;
    detail?: string;
    code?: string | null;
    max_version?: string;
    min_version?: string;
    candidates?: number;
  };
}

const fixture = join(import.meta.dirname, '..', 'fixtures', 'placement-errors.json');
const entries = (JSON.parse(readFileSync(fixture, 'utf8')) as { cases: Entry[] }).cases;
const AGG = { agg1: '11111111-1111-1111-1111-111111111111', agg2: '85814087-732e-5ae4-a0a6-25733d1d4a05' };

t.test('placement-errors.json, table-driven', async (t) => {
  const app = await build(t);
  // gold: VCPU 8 + CUSTOM_GOLD; silver: VCPU 8 + CUSTOM_SILVER; small1/small2: VCPU 2. So VCPU:3 fits 2,
  // !CUSTOM_GOLD leaves 3, SILVER-not-GOLD is 1, GOLD is 1.
  await createProviders(app, [
    { uuid: u('gold'), inventories: { VCPU: 8 }, traits: ['CUSTOM_GOLD'], aggregates: [AGG.agg1] },
    { uuid: u('silver'), inventories: { VCPU: 8 }, traits: ['CUSTOM_SILVER'], aggregates: [AGG.agg2] },
    { uuid: u('small1'), inventories: { VCPU: 2 } },
    { uuid: u('small2'), inventories: { VCPU: 2 } },
  ]);
  t.equal(entries.length, 58);
  for (const { request, answer: e } of entries) {
    const qs = request.query.replace(/@agg:(agg[12])/g, (_m, name: 'agg1' | 'agg2') => AGG[name]);
    const r = await call(app, 'GET', `/allocation_candidates?${qs}`, undefined, request.microversion);
    const label = `mv ${request.microversion} ?${request.query}`;
    t.equal(r.status, e.status, `${label}: status`);
    if (e.status === 200) {
      t.equal(r.body.allocation_requests.length, e.candidates, `${label}: candidates`);
      continue;
    }
    const err = r.body.errors?.[0];
    t.ok(err, `${label}: Placement error shape`);
    if (!err) continue;
    t.equal(err.status, e.status, `${label}: errors[0].status`);
    t.equal(err.title, e.title, `${label}: title`);
    t.equal(err.detail, e.detail, `${label}: detail`);
    t.equal(err.code, e.code ?? undefined, `${label}: code`);
    t.match(err.request_id, /^req-/, `${label}: request_id`);
    if (e.max_version) t.equal(err.max_version, e.max_version);
    if (e.min_version) t.equal(err.min_version, e.min_version);
  }
});
