// Every entry of reference/placement-errors.json through app.inject: status, title, code and detail compared
// exactly (request_id differs); the 200 entries by candidate count (and allocations of the first where the
// fixture makes it unique).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { build } from '../helper.ts';
import { sharedDir } from '../shared-dir.ts';
import { call, createProviders, u } from './fixtures.ts';

interface Entry {
  mv: string;
  qs: string;
  status: number;
  title?: string;
  detail?: string;
  code?: string | null;
  max_version?: string;
  min_version?: string;
  n_candidates?: number;
}

const entries = JSON.parse(readFileSync(join(sharedDir(), 'reference', 'placement-errors.json'), 'utf8')) as Entry[];
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
  for (const e of entries) {
    const qs = e.qs.replace(/@agg:(agg[12])/g, (_m, name: 'agg1' | 'agg2') => AGG[name]);
    const r = await call(app, 'GET', `/allocation_candidates?${qs}`, undefined, e.mv);
    const label = `mv ${e.mv} ?${e.qs}`;
    t.equal(r.status, e.status, `${label}: status`);
    if (e.status === 200) {
      t.equal(r.body.allocation_requests.length, e.n_candidates, `${label}: candidates`);
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
