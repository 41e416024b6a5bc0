// explain_target on POST /replicas/schedule: only that node's or disk's verdict, with the numbers, and nothing else.
import t from 'tap';
import { build } from '../helper.ts';
import { diskBody, GiB, putNode, scheduleVolume, snapshot } from './http.ts';

async function fleet(t: Parameters<typeof build>[0]) {
  const app = await build(t);
  await putNode(app, 'a', { zone: 'z1', disks: { d1: diskBody(), small: diskBody({ storageMaximum: 8 * GiB, storageAvailable: 8 * GiB }) } });
  await putNode(app, 'b', { zone: 'z2', disks: { d1: diskBody({ storageAvailable: 60 * GiB }), off: diskBody({ allowScheduling: false }) } });
  await putNode(app, 'c', { zone: 'z3', ready: false });
  return app;
}

t.test('a disk refused by a check: the checks it passed, the one that refused it with its numbers', async (t) => {
  const app = await fleet(t);
  const res = await scheduleVolume(app, { name: 'v', numberOfReplicas: 2 }, '?dry_run=true&explain_target=a/small');
  t.equal(res.statusCode, 200);
  const body = res.json();
  t.notOk('explain' in body, 'not the whole trace');
  const v = body.explainTarget;
  t.equal(v.node, 'a');
  t.same(v.nodeFilters.map((f: { filter: string; passed: boolean }) => [f.filter, f.passed]), [
    ['NodeReportFresh', true], ['NodeReady', true], ['NodeNotCordoned', true], ['NodeSchedulingAllowed', true],
    ['NodeNotEvicting', true], ['NodeTags', true],
  ]);
  t.same(v.diskPrefilter, [{ disk: 'small', filters: [
    { filter: 'DiskSchedulingAllowed', passed: true }, { filter: 'DiskNotEvicting', passed: true }, { filter: 'DiskSchedulableCondition', passed: true },
  ] }]);
  const first = v.replicas[0];
  t.equal(first.tier, 'NN');
  t.same(first.disks[0].filters.slice(0, 2), [{ filter: 'DiskTypeMatchesEngine', passed: true }, { filter: 'DiskTags', passed: true }]);
  t.match(first.disks[0].filters[2], {
    filter: 'DiskSpaceForReplica', passed: false, code: 'insufficient_storage', reason: 'insufficient storage',
    message: /ScheduledTotal = 10737418240 is greater than ProvisionedLimit = 8589934592/,
  });
  t.equal(first.disks[0].filters.length, 3, 'nothing after the refusal');
  t.match(first.disks[0], { candidate: false, chosen: false });
  t.notOk('score' in first.disks[0]);

  // The same sentence as the whole trace gives for that disk.
  const full = (await scheduleVolume(app, { name: 'v', numberOfReplicas: 2 }, '?dry_run=true&explain=true')).json();
  const check = full.explain.replicas[0].tiers[0].checks.find((c: { name: string }) => c.name === 'DiskSpaceForReplica');
  t.equal(first.disks[0].filters[2].message, check.rejected.find((r: { disk: string }) => r.disk === 'small').message);
});

t.test('a node: every disk, the chosen one with its balance scores; a refused node stops at its refusal', async (t) => {
  const app = await fleet(t);
  const v = (await scheduleVolume(app, { name: 'v', numberOfReplicas: 2 }, '?dry_run=true&explain_target=a')).json().explainTarget;
  t.same(v.diskPrefilter.map((d: { disk: string }) => d.disk), ['d1', 'small']);
  const [r0, r1] = v.replicas;
  t.same(r0.disks.map((d: { disk: string; candidate: boolean; chosen: boolean }) => [d.disk, d.candidate, d.chosen]), [['d1', true, true], ['small', false, false]]);
  // Node stage: a (100 GiB usable) and b (60): placing on a gives {90, 60}: 30 / 75 = 0.4. Disk stage: d1 alone.
  t.same(r0.disks[0].score, { node: 0.4, disk: 0 });
  t.same(r0.result, { node: 'a', disk: 'd1', tier: 'NN' });
  t.equal(r1.tier, null, 'node a holds the first replica: no tier lists it for the second (node anti-affinity is hard)');
  t.same(r1.disks.map((d: { filters: unknown[] }) => d.filters), [[], []], 'not considered');
  t.same(r1.result, { node: 'b', disk: 'd1', tier: 'NN' });

  const off = (await scheduleVolume(app, { name: 'v', numberOfReplicas: 1 }, '?dry_run=true&explain_target=b/off')).json().explainTarget;
  t.match(off.diskPrefilter[0].filters[0], { filter: 'DiskSchedulingAllowed', passed: false, code: 'disk_scheduling_disabled', message: 'disk off on node b has allowScheduling = false' });
  t.same(off.replicas[0].disks, [], 'a pre-filtered disk is no candidate of any replica');

  const c = (await scheduleVolume(app, { name: 'v', numberOfReplicas: 1 }, '?dry_run=true&explain_target=c')).json().explainTarget;
  t.same(c.nodeFilters, [
    { filter: 'NodeReportFresh', passed: true },
    { filter: 'NodeReady', passed: false, code: 'node_not_ready', message: 'node c is not ready (condition Ready = False)' },
  ]);
  t.same(c.diskPrefilter, []);
  t.equal(c.replicas[0].tier, null);
});

t.test('a refusal carries the verdict too', async (t) => {
  const app = await fleet(t);
  const res = await scheduleVolume(app, { name: 'huge', size: 1000 * GiB, numberOfReplicas: 1 }, '?explain_target=b/d1');
  t.equal(res.statusCode, 409);
  t.match(res.json().explainTarget.replicas[0].disks[0].filters[2], { filter: 'DiskSpaceForReplica', passed: false, code: 'insufficient_storage' });
});

t.test('unknown or malformed targets: 404 or 400 naming them, nothing claimed', async (t) => {
  const app = await fleet(t);
  const before = await snapshot(app);
  const unknownNode = await scheduleVolume(app, { name: 'v' }, '?explain_target=zz');
  t.equal(unknownNode.statusCode, 404);
  t.equal(unknownNode.json().detail, 'explain_target zz: node zz not found');
  const unknownDisk = await scheduleVolume(app, { name: 'v' }, '?explain_target=a/nope');
  t.equal(unknownDisk.statusCode, 404);
  t.equal(unknownDisk.json().detail, 'explain_target a/nope: node a has no disk nope');
  for (const bad of ['a/b/c', '', '%2Fa', 'a/']) {
    const res = await scheduleVolume(app, { name: 'v' }, `?explain_target=${bad}`);
    t.equal(res.statusCode, 400, bad);
    t.match(res.json().errors[0].path, 'explain_target');
  }
  t.same(await snapshot(app), before);
});
