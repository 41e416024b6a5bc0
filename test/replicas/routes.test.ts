import t from 'tap';
import { effectiveAutoBalance } from '../../src/replicas/settings.ts';
import { build } from '../helper.ts';
import { diskBody, GiB, putNode, scheduleVolume, snapshot } from './http.ts';

t.test('nodes: PUT, GET, list, DELETE; defaults; Schedulable condition as Longhorn derives it', async (t) => {
  const app = await build(t);
  const put = await putNode(app, 'n1', {
    zone: 'z1', region: 'r1', tags: ['ssd'],
    disks: {
      ok: diskBody({ storageReserved: 10 * GiB, storageScheduled: 5 * GiB, tags: ['fast'] }),
      full: diskBody({ storageAvailable: 25 * GiB }),
      over: diskBody({ storageScheduled: 101 * GiB }),
    },
  });
  t.equal(put.statusCode, 200);
  const n = put.json();
  t.match(n, { name: 'n1', zone: 'z1', region: 'r1', tags: ['ssd'], cordoned: false, ready: true, allowScheduling: true, evictionRequested: false, schedulable: true, stale: false });
  t.match(n.disks.ok, { type: 'filesystem', allowScheduling: true, storageReserved: 10 * GiB, storageScheduled: 5 * GiB, storageScheduledReported: 5 * GiB, storageScheduledByBerth: 0 });
  const cond = (d: string) => n.disks[d].conditions.find((c: { type: string }) => c.type === 'Schedulable');
  t.match(cond('ok'), { status: 'True' });
  t.match(cond('full'), { status: 'False', reason: 'DiskPressure', message: /CurrentAvailable = 26843545600 is less than or equal to MinimalAvailable = 26843545600 \(25% of Storage Max\)/ });
  t.match(cond('over'), { status: 'False', reason: 'DiskPressure', message: /ScheduledTotal = 108447924224 is greater than ProvisionedLimit = 107374182400/ });

  const got = await app.inject({ method: 'GET', url: '/nodes/n1' });
  t.equal(got.statusCode, 200);
  t.same(Object.keys(got.json().disks), ['full', 'ok', 'over']);
  await putNode(app, 'n0');
  t.same((await app.inject({ method: 'GET', url: '/nodes' })).json().nodes.map((x: { name: string }) => x.name), ['n0', 'n1']);

  const notReady = (await putNode(app, 'n2', { ready: false })).json();
  t.match(notReady.conditions[0], { type: 'Ready', status: 'False' });
  t.match(notReady.disks.d1.conditions[1], { type: 'Schedulable', status: 'False', reason: 'DiskNotReady' });
  t.equal(notReady.schedulable, false);

  t.equal((await app.inject({ method: 'DELETE', url: '/nodes/n2' })).statusCode, 204);
  const gone = await app.inject({ method: 'GET', url: '/nodes/n2' });
  t.equal(gone.statusCode, 404);
  t.equal(gone.headers['content-type'], 'application/problem+json; charset=utf-8');
  t.equal((await app.inject({ method: 'DELETE', url: '/nodes/n2' })).statusCode, 404);
});

t.test('cordon follows disable-scheduling-on-cordoned-node', async (t) => {
  const app = await build(t);
  const n = (await putNode(app, 'n1', { cordoned: true })).json();
  t.match(n.conditions[1], { type: 'Schedulable', status: 'False', reason: 'KubernetesNodeCordoned' });
  const refused = await scheduleVolume(app, { name: 'v', numberOfReplicas: 1 });
  t.equal(refused.statusCode, 409);
  t.equal(refused.json().detail, 'nodes are unavailable');
  await app.inject({ method: 'PUT', url: '/replicas/settings', payload: { 'disable-scheduling-on-cordoned-node': false } });
  t.match((await app.inject({ method: 'GET', url: '/nodes/n1' })).json().conditions[1], { status: 'True' });
  t.equal((await scheduleVolume(app, { name: 'v', numberOfReplicas: 1 })).statusCode, 200);
});

t.test('malformed node reports: 400 naming the field, nothing stored', async (t) => {
  const app = await build(t);
  await putNode(app, 'n1', { zone: 'before' });
  const before = await snapshot(app);
  const cases: Array<[string, unknown, string]> = [
    ['negative bytes', { disks: { d1: diskBody({ storageMaximum: -1 }) } }, 'body.disks.d1.storageMaximum'],
    ['fractional bytes', { disks: { d1: diskBody({ storageAvailable: 1.5 }) } }, 'body.disks.d1.storageAvailable'],
    ['unsafe integer', { disks: { d1: diskBody({ storageReserved: 2 ** 53 }) } }, 'body.disks.d1.storageReserved'],
    ['bytes as a string', { disks: { d1: diskBody({ storageScheduled: '10' }) } }, 'body.disks.d1.storageScheduled'],
    ['missing storageMaximum', { disks: { d1: { path: '/x', storageAvailable: 1 } } }, 'body.disks.d1.storageMaximum'],
    ['bad disk type', { disks: { d1: diskBody({ type: 'nfs' }) } }, 'body.disks.d1.type'],
    ['unknown field', { zone: 'z', zones: 'typo' }, 'body'],
    ['tags not strings', { tags: [1] }, 'body.tags.0'],
    ['ready not boolean', { ready: 'yes' }, 'body.ready'],
    ['bad disk name', { disks: { 'bad name': diskBody() } }, 'body.disks'],
  ];
  for (const [name, body, path] of cases) {
    const res = await app.inject({ method: 'PUT', url: '/nodes/n1', payload: body as object });
    t.equal(res.statusCode, 400, name);
    t.equal(res.headers['content-type'], 'application/problem+json; charset=utf-8', `${name}: problem+json`);
    t.ok(res.json().errors.some((e: { path: string }) => e.path.startsWith(path)), `${name}: names ${path} (${JSON.stringify(res.json().errors)})`);
  }
  t.equal((await app.inject({ method: 'PUT', url: '/nodes/bad%2Fname', payload: {} })).statusCode, 400, 'node name with a slash');
  t.same(await snapshot(app), before, 'nothing stored');
});

t.test('settings: Longhorn names and defaults; subsets; refused values change nothing', async (t) => {
  const app = await build(t);
  const defaults = (await app.inject({ method: 'GET', url: '/replicas/settings' })).json();
  t.same(defaults, {
    'replica-soft-anti-affinity': false,
    'replica-zone-soft-anti-affinity': true,
    'replica-disk-soft-anti-affinity': true,
    'storage-minimal-available-percentage': 25,
    'storage-over-provisioning-percentage': 100,
    'allow-empty-node-selector-volume': true,
    'allow-empty-disk-selector-volume': true,
    'disable-scheduling-on-cordoned-node': true,
    'allow-volume-creation-with-degraded-availability': true,
    'default-replica-count': 3,
    'replica-auto-balance': 'disabled',
    'replica-auto-balance-disk-pressure-percentage': 90,
    'replica-replenishment-wait-interval': 600,
    'storage-reserved-percentage-for-default-disk': 30,
  });
  const put = await app.inject({ method: 'PUT', url: '/replicas/settings', payload: { 'storage-over-provisioning-percentage': 200, 'replica-soft-anti-affinity': true } });
  t.equal(put.statusCode, 200);
  t.match(put.json(), { 'storage-over-provisioning-percentage': 200, 'replica-soft-anti-affinity': true, 'storage-minimal-available-percentage': 25 });
  const after = (await app.inject({ method: 'GET', url: '/replicas/settings' })).json();
  const refused: Array<[string, Record<string, unknown>]> = [
    ['storage-minimal-available-percentage', { 'storage-minimal-available-percentage': 101 }],
    ['storage-minimal-available-percentage', { 'storage-minimal-available-percentage': -1 }],
    ['storage-over-provisioning-percentage', { 'storage-over-provisioning-percentage': 1.5 }],
    ['replica-soft-anti-affinity', { 'replica-soft-anti-affinity': 'true', 'replica-zone-soft-anti-affinity': false }],
    ['default-replica-count', { 'default-replica-count': 21 }],
    ['replica-auto-balance', { 'replica-auto-balance': 'always' }],
    ['replica-auto-balance-disk-pressure-percentage', { 'replica-auto-balance-disk-pressure-percentage': 101 }],
    ['no-such-setting', { 'no-such-setting': true }],
  ];
  for (const [name, body] of refused) {
    const res = await app.inject({ method: 'PUT', url: '/replicas/settings', payload: body });
    t.equal(res.statusCode, 400, JSON.stringify(body));
    t.match(res.json().detail, name, `names ${name}`);
  }
  t.same((await app.inject({ method: 'GET', url: '/replicas/settings' })).json(), after, 'unchanged');
});

t.test('schedule: placement, names, listing, existing Berth replicas count, DELETE releases space', async (t) => {
  const app = await build(t);
  for (const [n, z] of [['a', 'z1'], ['b', 'z2'], ['c', 'z3']] as const) await putNode(app, n, { zone: z, disks: { d1: diskBody({ storageScheduled: GiB }) } });
  const res = await scheduleVolume(app, { name: 'pvc-1' });
  t.equal(res.statusCode, 200);
  const replicas = res.json().replicas as Array<{ name: string; node: string; disk: string; diskPath: string; size: number; volume: string }>;
  t.equal(replicas.length, 3, 'default-replica-count 3');
  t.same(replicas.map((r) => r.node).sort(), ['a', 'b', 'c']);
  for (const r of replicas) {
    t.match(r.name, /^pvc-1-r-[0-9a-f]{8}$/);
    t.match(r, { volume: 'pvc-1', disk: 'd1', diskPath: '/var/lib/longhorn', size: 10 * GiB });
  }
  t.equal(new Set(replicas.map((r) => r.name)).size, 3);
  const node = (await app.inject({ method: 'GET', url: '/nodes/a' })).json();
  t.equal(node.disks.d1.storageScheduled, 11 * GiB, 'reported + Berth');
  t.equal(node.disks.d1.storageScheduledByBerth, 10 * GiB);
  t.equal(node.disks.d1.scheduledReplicas.length, 1);

  const again = await scheduleVolume(app, { name: 'pvc-1' });
  t.equal(again.statusCode, 200);
  t.same(again.json().replicas, [], 'Berth\'s own replicas count as existing: nothing missing');
  const more = await scheduleVolume(app, { name: 'pvc-1', numberOfReplicas: 4 }, '?explain=true');
  t.equal(more.statusCode, 409, 'no fourth node and node soft anti-affinity is off');
  t.equal(more.json().detail, 'replica scheduling failed');

  const list = (await app.inject({ method: 'GET', url: '/replicas?volume=pvc-1' })).json().replicas;
  t.equal(list.length, 3);
  t.same((await app.inject({ method: 'GET', url: '/replicas?volume=other' })).json().replicas, []);
  t.equal((await app.inject({ method: 'GET', url: `/replicas/${list[0].name}` })).statusCode, 200);

  const nodeName = list[0].node;
  const del = await app.inject({ method: 'DELETE', url: `/replicas/${list[0].name}` });
  t.equal(del.statusCode, 204);
  t.equal((await app.inject({ method: 'GET', url: `/nodes/${nodeName}` })).json().disks.d1.storageScheduled, GiB, 'space released');
  t.equal((await app.inject({ method: 'DELETE', url: `/replicas/${list[0].name}` })).statusCode, 404);
  const refill = await scheduleVolume(app, { name: 'pvc-1' });
  t.same(refill.json().replicas.map((r: { node: string }) => r.node), [nodeName], 'only the missing one is placed again');
});

t.test('schedule: dry_run claims nothing; explain has tiers, rejected disks with numbers, balance scores', async (t) => {
  const app = await build(t);
  await putNode(app, 'a', { disks: { d1: diskBody(), small: diskBody({ storageMaximum: 8 * GiB, storageAvailable: 8 * GiB }) } });
  await putNode(app, 'b', { disks: { d1: diskBody({ storageAvailable: 60 * GiB }) } });
  const before = await snapshot(app);
  const res = await scheduleVolume(app, { name: 'v', numberOfReplicas: 2 }, '?dry_run=true&explain=true');
  t.equal(res.statusCode, 200);
  const body = res.json();
  t.equal(body.dryRun, true);
  t.equal(body.replicas.length, 2);
  for (const r of body.replicas) {
    t.same(Object.keys(r), ['volume', 'node', 'disk', 'diskPath', 'size'], 'where it would go, and nothing that looks like a claim (no name, no createdAt)');
  }
  t.same(Object.keys(body.explain), ['missingReplicas', 'effective', 'schedulableNodes', 'nodeTags', 'diskPrefilter', 'replicas'], 'trace sections in decision order');
  t.same(Object.keys(body.explain.replicas[0]), ['index', 'usedNodes', 'usedZones', 'tiers', 'balance', 'result'], 'each replica: tiers, then balance, then the result');
  t.same(await snapshot(app), before, 'nothing claimed');
  const first = body.explain.replicas[0];
  t.equal(first.tiers[0].tier, 'NN');
  const space = first.tiers[0].checks.find((c: { name: string }) => c.name === 'DiskSpaceForReplica');
  t.match(space.rejected[0], { node: 'a', disk: 'small', reason: 'insufficient storage', code: 'insufficient_storage', message: /ScheduledTotal = 10737418240 is greater than ProvisionedLimit = 8589934592/ });
  t.ok(first.balance.nodeStage.length === 2 && typeof first.balance.nodeStage[0].score === 'number');
  t.equal(body.explain.effective.tierOrder.join(','), 'NN,N,E');
  const real = await scheduleVolume(app, { name: 'v', numberOfReplicas: 2 });
  t.equal(real.json().dryRun, false, 'a claiming answer says it is not a dry run');
  t.match(real.json().replicas[0], { name: /^v-r-[0-9a-f]{8}$/, createdAt: String });
  t.same(real.json().replicas.map((r: { node: string; disk: string }) => `${r.node}/${r.disk}`), body.replicas.map((r: { node: string; disk: string }) => `${r.node}/${r.disk}`), 'the dry run predicted the placement');
});

t.test('degraded availability: 200 with unscheduled, or 409 with nothing claimed', async (t) => {
  const app = await build(t);
  await putNode(app, 'a', { zone: 'z1' });
  await putNode(app, 'b', { zone: 'z2', disks: { d1: diskBody({ storageMaximum: GiB, storageAvailable: GiB }) } });
  const res = await scheduleVolume(app, { name: 'v', numberOfReplicas: 3 });
  t.equal(res.statusCode, 200);
  t.equal(res.json().replicas.length, 1);
  t.same(res.json().unscheduled, [{ reason: 'insufficient storage' }, { reason: 'insufficient storage' }]);

  await app.inject({ method: 'PUT', url: '/replicas/settings', payload: { 'allow-volume-creation-with-degraded-availability': false } });
  const before = await snapshot(app);
  const refused = await scheduleVolume(app, { name: 'w', numberOfReplicas: 3 });
  t.equal(refused.statusCode, 409);
  t.equal(refused.headers['content-type'], 'application/problem+json; charset=utf-8');
  const p = refused.json();
  t.match(p.type, /\/replica-scheduling-failure$/);
  t.equal(p.detail, 'insufficient storage');
  t.equal(p.placeable, 1);
  t.same(await snapshot(app), before, 'the placeable replica was not claimed');
});

t.test('409 detail: distinct reason keys sorted and joined with "; "', async (t) => {
  const app = await build(t);
  await putNode(app, 'a', { zone: 'z1', disks: { d1: diskBody({ tags: ['hdd'] }) } });
  await putNode(app, 'b', { zone: 'z2', disks: { d1: diskBody({ tags: ['ssd'], storageMaximum: GiB, storageAvailable: GiB }) } });
  await putNode(app, 'c', { zone: 'z3', disks: { d1: diskBody({ type: 'block', tags: ['ssd'] }) } });
  await putNode(app, 'd', { zone: 'z4', disks: {} });
  const res = await scheduleVolume(app, { name: 'v', numberOfReplicas: 1, diskSelector: ['ssd'] });
  t.equal(res.statusCode, 409);
  t.equal(res.json().detail, 'disks are unavailable; insufficient storage; tags not fulfilled');
});

t.test('existingReplicas in the request occupy their nodes and disks', async (t) => {
  const app = await build(t);
  await putNode(app, 'a', { zone: 'z1' });
  await putNode(app, 'b', { zone: 'z2' });
  const res = await scheduleVolume(app, { name: 'v', numberOfReplicas: 2 }, '', { existingReplicas: [{ node: 'a', disk: 'd1' }] });
  t.same(res.json().replicas.map((r: { node: string }) => r.node), ['b']);
  const none = await scheduleVolume(app, { name: 'w', numberOfReplicas: 2 }, '', { existingReplicas: [{ node: 'a', disk: 'd1' }, { node: 'b', disk: 'd1' }] });
  t.same(none.json().replicas, []);
});

t.test('nodes with Berth replicas: DELETE refused, dropping the disk refused, report update keeps the claim', async (t) => {
  const app = await build(t);
  await putNode(app, 'a');
  const placed = (await scheduleVolume(app, { name: 'v', numberOfReplicas: 1 })).json().replicas[0];
  const del = await app.inject({ method: 'DELETE', url: '/nodes/a' });
  t.equal(del.statusCode, 409);
  t.match(del.json().detail, placed.name);
  const drop = await putNode(app, 'a', { disks: { other: diskBody() } });
  t.equal(drop.statusCode, 409);
  t.match(drop.json().detail, /disk d1 on node a holds 1 replica/);
  const update = await putNode(app, 'a', { disks: { d1: diskBody({ storageScheduled: 3 * GiB }) } });
  t.equal(update.json().disks.d1.storageScheduled, 13 * GiB, 'new report + Berth\'s replica');
  await app.inject({ method: 'DELETE', url: `/replicas/${placed.name}` });
  t.equal((await app.inject({ method: 'DELETE', url: '/nodes/a' })).statusCode, 204);
});

t.test('metrics: decisions, rejections, failures by reason, per-disk gauges', async (t) => {
  const app = await build(t);
  await putNode(app, 'a', { disks: { d1: diskBody({ storageReserved: 7, storageScheduled: 5 }) } });
  await scheduleVolume(app, { name: 'v', numberOfReplicas: 1, size: 100 });
  await scheduleVolume(app, { name: 'w', numberOfReplicas: 1, size: 1000 * GiB });
  const text = (await app.inject({ method: 'GET', url: '/metrics' })).body;
  t.match(text, 'berth_decisions_total{domain="replicas",outcome="placed"} 1');
  t.match(text, 'berth_decisions_total{domain="replicas",outcome="no_valid_target"} 1');
  t.match(text, 'berth_filter_rejections_total{domain="replicas",filter="DiskSpaceForReplica"}');
  t.match(text, 'berth_replica_scheduling_failures_total{reason="insufficient storage"} 1');
  t.match(text, 'berth_decision_duration_seconds_count{domain="replicas"} 2');
  t.match(text, `berth_disk_storage_maximum_bytes{node="a",disk="d1"} ${100 * GiB}`);
  t.match(text, `berth_disk_storage_available_bytes{node="a",disk="d1"} ${100 * GiB}`);
  t.match(text, 'berth_disk_storage_reserved_bytes{node="a",disk="d1"} 7');
  t.match(text, 'berth_disk_storage_scheduled_bytes{node="a",disk="d1"} 105');
});

t.test('stale reports with an injected clock: not schedulable, explained, age gauge', async (t) => {
  let now = 1_000_000;
  const app = await build(t, { stats_stale_after_seconds: 60 }, undefined, () => now);
  await putNode(app, 'a');
  now += 60_000;
  t.equal((await scheduleVolume(app, { name: 'v1', numberOfReplicas: 1 }, '?dry_run=true')).statusCode, 200, 'at 60 s still fresh');
  now += 1_000;
  const res = await scheduleVolume(app, { name: 'v', numberOfReplicas: 1 }, '?explain=true');
  t.equal(res.statusCode, 409);
  t.equal(res.json().detail, 'nodes are unavailable');
  const step = res.json().explain.schedulableNodes.find((s: { name: string }) => s.name === 'NodeReportFresh');
  t.match(step.rejected[0], { node: 'a', code: 'node_stats_stale' });
  const node = (await app.inject({ method: 'GET', url: '/nodes/a' })).json();
  t.match(node, { stale: true, schedulable: false, reportAgeSeconds: 61 });
  t.match((await app.inject({ method: 'GET', url: '/metrics' })).body, 'berth_node_report_age_seconds{node="a"} 61');
  await putNode(app, 'a');
  t.equal((await scheduleVolume(app, { name: 'v', numberOfReplicas: 1 })).statusCode, 200, 'a new report makes it fresh again');
});

t.test('bad schedule requests: 400 problem+json, nothing claimed', async (t) => {
  const app = await build(t);
  await putNode(app, 'a');
  const cases: Array<[string, unknown, string]> = [
    ['no volume', {}, '/replicas/schedule'],
    ['size 0', { volume: { name: 'v', size: 0 } }, '/replicas/schedule'],
    ['size fractional', { volume: { name: 'v', size: 1.5 } }, '/replicas/schedule'],
    ['bad name', { volume: { name: 'V!', size: 1 } }, '/replicas/schedule'],
    ['bad engine', { volume: { name: 'v', size: 1, dataEngine: 'v3' } }, '/replicas/schedule'],
    ['bad override', { volume: { name: 'v', size: 1, replicaSoftAntiAffinity: 'maybe' } }, '/replicas/schedule'],
    ['too many replicas', { volume: { name: 'v', size: 1, numberOfReplicas: 21 } }, '/replicas/schedule'],
    ['bad existing replica', { volume: { name: 'v', size: 1 }, existingReplicas: [{ node: 'a' }] }, '/replicas/schedule'],
    ['bad flag', { volume: { name: 'v', size: 1 } }, '/replicas/schedule?dry_run=yes'],
  ];
  for (const [name, body, url] of cases) {
    const res = await app.inject({ method: 'POST', url, payload: body as object });
    t.equal(res.statusCode, 400, name);
    t.equal(res.headers['content-type'], 'application/problem+json; charset=utf-8', name);
  }
  t.same((await app.inject({ method: 'GET', url: '/replicas' })).json().replicas, []);
});

t.test('Longhorn edges: a replica without a disk still holds its node and zone; empty and padded auto-balance values', async (t) => {
  const app = await build(t);
  await putNode(app, 'a', { zone: 'z1' });
  await putNode(app, 'b', { zone: 'z2' });
  const res = await scheduleVolume(app, { name: 'v', numberOfReplicas: 2 }, '?dry_run=true', { existingReplicas: [{ node: 'a', disk: '' }] });
  t.equal(res.statusCode, 200);
  t.same(res.json().replicas.map((r: { node: string }) => r.node), ['b'], 'node a is taken by the disk-less replica');
  const evicted = await scheduleVolume(app, { name: 'w', numberOfReplicas: 2 }, '?dry_run=true',
    { existingReplicas: [{ node: 'a', disk: '', evictionRequested: true }, { node: 'b', disk: '' }] });
  t.equal(evicted.statusCode, 200);
  t.same(evicted.json().replicas.map((r: { node: string }) => r.node), ['a'], 'a node whose only replica is being evicted is usable again (Longhorn\'s after-eviction tiers)');
  const both = await scheduleVolume(app, { name: 'w', numberOfReplicas: 2 }, '?dry_run=true', { existingReplicas: [{ node: 'a', disk: '' }, { node: 'b', disk: '' }] });
  t.same(both.json().replicas, [], 'both nodes hold a replica: nothing left under hard node anti-affinity');
  const bad = await scheduleVolume(app, { name: 'x' }, '', { existingReplicas: [{ node: 'a', disk: 'no/such' }] });
  t.equal(bad.statusCode, 400, 'a disk name is still checked when one is given');

  const padded = await app.inject({ method: 'PUT', url: '/replicas/settings', payload: { 'replica-auto-balance': ' best-effort ' } });
  t.equal(padded.statusCode, 200, 'Longhorn trims a string setting');
  t.equal(padded.json()['replica-auto-balance'], 'best-effort');
  const viaSettings = await app.inject({ method: 'PUT', url: '/settings/replicas', payload: { 'replica-auto-balance': 'least-effort\n' } });
  t.equal(viaSettings.statusCode, 200);
  t.equal(viaSettings.json().settings['replica-auto-balance'], 'least-effort');
  const caps = await app.inject({ method: 'PUT', url: '/replicas/settings', payload: { 'replica-auto-balance': 'Best-Effort' } });
  t.equal(caps.statusCode, 400, 'the choices are case-sensitive, as in Longhorn');
  const empty = await scheduleVolume(app, { name: 'y', numberOfReplicas: 1, replicaAutoBalance: '' }, '?dry_run=true');
  t.equal(empty.statusCode, 200, 'an empty volume value is Longhorn\'s "ignored"');
  t.equal(effectiveAutoBalance('', 'best-effort'), 'best-effort', 'empty defers to the global setting, as ignored does');
  t.equal(effectiveAutoBalance('disabled', 'best-effort'), 'disabled');
});
