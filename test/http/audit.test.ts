// The audit guarantee, line by line: every request that changes state leaves exactly one line with the audit fields,
// refused ones included. On the decision routes that line is the route's one line (msg "decision", or "request
// completed" when nothing was decided), so a claim writes one line, not two; every other route keeps its own
// msg "audit" line beside Fastify's request lines. Reads and planning POSTs carry no audit fields.
import { EventEmitter, once } from 'node:events';
import { Writable } from 'node:stream';
import t, { type Test } from 'tap';
import { buildApp } from '../../src/app.ts';
import { parseConfig } from '../../src/config.ts';
import { openSqliteStore } from '../../src/store/sqlite.ts';
import type { AsyncStore, StoreExpectation, StoreWrite } from '../../src/store/store.ts';
import { TOKENS, writeTokens } from './auth-helper.ts';

type Line = Record<string, unknown> & { msg: string; reqId?: string };

/** A store whose volume claims fail with a plain error (a 500) while `failing.on` is true. */
function storeFailingClaims(failing: { on: boolean }): AsyncStore {
  const engine = openSqliteStore(':memory:');
  const commit = engine.commit.bind(engine);
  engine.commit = async (writes: readonly StoreWrite[], expect: readonly StoreExpectation[] = []) => {
    if (failing.on && expect.some((e) => e.kind === 'volumes.volume')) throw new Error('disk full');
    return commit(writes, expect);
  };
  return engine;
}

async function logged(t: Test) {
  const lines: Line[] = [];
  const written = new EventEmitter();
  const stream = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n')) {
        if (line.trim() === '') continue;
        lines.push(JSON.parse(line) as Line);
        written.emit('line');
      }
      done();
    },
  });
  const failing = { on: false };
  const store = storeFailingClaims(failing);
  const app = await buildApp({
    config: parseConfig({ data_dir: ':memory:', max_event_loop_delay_ms: 0, auth_tokens_file: writeTokens(t.testdir()) }),
    store, processMetrics: false, logger: { level: 'info', stream },
  });
  t.teardown(async () => {
    await app.close();
    await store.close();
  });
  let n = 0;
  /** Sends one request under a fresh request id; answers its status and every line logged under that id. */
  const send = async (method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, token: keyof typeof TOKENS | null, payload?: object,
    extra: Record<string, string> = {}) => {
    const id = `audit-${++n}`;
    const headers: Record<string, string> = { 'x-request-id': id, ...(token ? { 'x-auth-token': TOKENS[token] } : {}), ...extra };
    const res = await app.inject({ method, url, headers, ...(payload ? { payload } : {}) });
    return { status: res.statusCode, lines: lines.filter((l) => l.reqId === id), id };
  };
  /** The lines of request `id` once there are `count` (a GET decision's line is written after the answer). */
  const linesOf = async (id: string, count: number) => {
    const of = () => lines.filter((l) => l.reqId === id);
    while (of().length < count) await once(written, 'line');
    return of();
  };
  return { send, linesOf, failing };
}

const REPORT = { pools: [{ pool_name: 'a', total_capacity_gb: 100, free_capacity_gb: 50 }] };
const NODE = { disks: { d1: { path: '/d1', storageMaximum: 100 * 2 ** 30, storageAvailable: 100 * 2 ** 30 } } };
const audited = (lines: Line[]) => lines.filter((l) => l.audit === true);

t.test('a claimed decision is one line: the decision line, carrying the audit fields', async (t) => {
  const { send } = await logged(t);
  await send('PUT', '/backends/h@x', 'reporter', REPORT);
  const claim = await send('POST', '/volumes/schedule', 'scheduler', { id: 'v1', size: 10 });
  t.equal(claim.status, 200);
  t.same(claim.lines.map((l) => l.msg), ['decision'], 'one line for the claim');
  t.match(claim.lines[0], {
    audit: true, who: 'scheduler', via: 'token', action: 'POST /volumes/schedule', target: {}, outcome: 200, request_id: claim.id,
    domain: 'volumes', decision: 'placed', volume: 'v1', size: 10, chosen: 'h@x#a', res: { statusCode: 200 },
  });
  t.notOk('openstack_request_id' in claim.lines[0]!, 'no Placement id on a volumes claim');

  const dry = await send('POST', '/volumes/schedule?dry_run=true', 'scheduler', { size: 1 });
  t.same(dry.lines.map((l) => l.msg), ['decision'], 'a dry run: one line too');
  t.match(dry.lines[0], { audit: true, outcome: 200, decision: 'dry_run' }, 'audited as before (a POST on a scheduling route)');

  await send('PUT', '/nodes/n1', 'reporter', NODE);
  const replicas = await send('POST', '/replicas/schedule', 'scheduler', { volume: { name: 'pvc-1', size: 2 ** 30, numberOfReplicas: 1 } });
  t.equal(replicas.status, 200);
  t.same(replicas.lines.map((l) => l.msg), ['decision']);
  t.match(replicas.lines[0], { audit: true, who: 'scheduler', action: 'POST /replicas/schedule', outcome: 200, decision: 'placed', chosen: ['n1/d1'] });
});

t.test('refusals on a decision route are audited once, whatever refused them', async (t) => {
  const { send, failing } = await logged(t);
  await send('PUT', '/backends/h@x', 'reporter', REPORT);
  await send('POST', '/volumes/schedule', 'scheduler', { id: 'taken', size: 1 });
  failing.on = true;
  const failed = await send('POST', '/volumes/schedule', 'scheduler', { id: 'v-fail', size: 1 });
  failing.on = false;
  const cases = [
    { name: 'no credentials', r: await send('POST', '/volumes/schedule', null, { size: 1 }), status: 401, who: null, via: 'none' },
    { name: 'a role without scheduler', r: await send('POST', '/volumes/schedule', 'reader', { size: 1 }), status: 403, who: 'reader', via: 'token' },
    { name: 'an invalid body', r: await send('POST', '/volumes/schedule', 'scheduler', { size: -1 }), status: 400, who: 'scheduler', via: 'token' },
    { name: 'a volume id that exists', r: await send('POST', '/volumes/schedule', 'scheduler', { id: 'taken', size: 1 }), status: 409, who: 'scheduler', via: 'token' },
    { name: 'nothing fits (decided)', r: await send('POST', '/volumes/schedule', 'scheduler', { size: 5000 }), status: 409, who: 'scheduler', via: 'token' },
    { name: 'the store failed', r: failed, status: 500, who: 'scheduler', via: 'token' },
    { name: 'replicas, a role without scheduler', r: await send('POST', '/replicas/schedule', 'reporter', { volume: { name: 'x', size: 1, numberOfReplicas: 1 } }), status: 403, who: 'reporter', via: 'token' },
  ];
  for (const { name, r, status, who, via } of cases) {
    t.equal(r.status, status, name);
    const audits = audited(r.lines);
    t.equal(audits.length, 1, `${name}: one line with the audit fields`);
    t.match(audits[0], { who, via, action: /^POST \/(volumes|replicas)\/schedule$/, target: {}, outcome: status, request_id: r.id }, name);
    t.notOk(r.lines.some((l) => l.msg === 'audit'), `${name}: no separate audit line`);
  }
  t.equal(audited(cases[4]!.r.lines)[0]!.msg, 'decision', 'a decided refusal: its decision line');
  t.equal(audited(cases[0]!.r.lines)[0]!.msg, 'request completed', 'refused before deciding: its request line');
});

t.test('other state-changing routes keep their own audit line; reads and planning carry no audit fields', async (t) => {
  const { send, linesOf } = await logged(t);
  const report = await send('PUT', '/backends/h@x', 'reporter', REPORT);
  t.same(report.lines.map((l) => l.msg), ['incoming request', 'audit', 'request completed'], 'Fastify\'s two lines around the audit line');
  t.match(report.lines[1], { audit: true, who: 'reporter', action: 'PUT /backends/:host', target: { host: 'h@x' }, outcome: 200, request_id: report.id });
  t.equal(audited(report.lines).length, 1);
  await send('POST', '/volumes/schedule', 'scheduler', { id: 'v1', size: 1 });
  const released = await send('DELETE', '/volumes/v1', 'reader');
  t.equal(released.status, 403);
  t.same(audited(released.lines).map((l) => [l.msg, l.outcome, l.target]), [['audit', 403, { id: 'v1' }]], 'a refused DELETE: its audit line');
  const placement = await send('PUT', '/resource_providers/2ee6b0a5-8a64-4b3e-9b6e-0c9f6f0b1b11', 'reporter', { name: 'x' });
  t.match(audited(placement.lines), [{ msg: 'audit', outcome: 404, openstack_request_id: placement.id }], 'Placement\'s id, set by its own hook, is read after it');

  t.same(audited((await send('GET', '/pools', 'reader')).lines), [], 'a read');
  t.same(audited((await send('POST', '/volumes/headroom', 'reader', { size: 1 })).lines), [], 'a planning POST');
  const candidates = await send('GET', '/allocation_candidates?resources=VCPU:1', 'reader', undefined,
    { 'openstack-api-version': 'placement 1.39' });
  // Its line comes after the answer, with whatever else was deferred with it (one batch, written at once).
  const decided = await linesOf(candidates.id, 1);
  t.same(decided.map((l) => l.msg), ['decision'], 'a decision that changes nothing: its one line');
  t.notOk('audit' in decided[0]!, 'without audit fields');
});
