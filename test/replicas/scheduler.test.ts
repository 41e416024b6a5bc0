import t from 'tap';
import { tierOrder } from '../../src/replicas/scheduler.ts';
import { existing, GiB, node, placed, schedule, settings, volume } from './fixtures.ts';

t.test('tier order per zone/node soft anti-affinity (reference §3.4)', async (t) => {
  t.same(tierOrder(false, false), ['NN', 'EZ']);
  t.same(tierOrder(false, true), ['NN', 'EZ']);
  t.same(tierOrder(true, false), ['NN', 'N', 'E']);
  t.same(tierOrder(true, true), ['NN', 'N', 'U']);
});

// Zone z1 holds the volume's replica on n1/d1. n2 is a new node in that zone, n3 a new node in a new zone.
// Each row: which nodes exist besides n1, the two settings, and the node that must be chosen (or the failure).
t.test('seed/reference zone–node table: every row', async (t) => {
  const n1 = node('n1', { zone: 'z1' }, { d1: {}, d2: {} });
  const n2 = node('n2', { zone: 'z1' });
  const n3 = node('n3', { zone: 'z2' });
  type Row = [situation: string, nodes: ReturnType<typeof node>[], zoneSoft: boolean, nodeSoft: boolean, want: string];
  const rows: Row[] = [];
  for (const [zoneSoft, nodeSoft] of [[false, false], [false, true], [true, false], [true, true]] as const) {
    // New node in a new zone is tried first whatever the settings.
    rows.push(['new node in new zone available', [n1, n2, n3], zoneSoft, nodeSoft, 'n3/d1']);
    // Only a new node in an existing zone: needs zone soft anti-affinity.
    rows.push(['only new node in existing zone', [n1, n2], zoneSoft, nodeSoft, zoneSoft ? 'n2/d1' : 'fail']);
    // Only the existing node: needs both (zone soft alone does not let a node be reused).
    rows.push(['only existing node', [n1], zoneSoft, nodeSoft, zoneSoft && nodeSoft ? 'n1/d2' : 'fail']);
  }
  for (const [situation, nodes, zoneSoft, nodeSoft, want] of rows) {
    const r = schedule({
      nodes,
      settings: settings({ 'replica-zone-soft-anti-affinity': zoneSoft, 'replica-soft-anti-affinity': nodeSoft }),
      volume: volume({ numberOfReplicas: 2 }),
      replicas: [existing('n1', 'd1')],
    });
    const got = r.placements.length === 1 ? placed(r)[0] : 'fail';
    t.equal(got, want, `${situation}, zoneSoft=${zoneSoft} nodeSoft=${nodeSoft}`);
    if (want === 'fail') t.equal(r.unscheduled[0]!.reason, 'replica scheduling failed', 'no tier had candidates and no disk check failed');
  }
});

t.test('volume overrides win over the global settings', async (t) => {
  const nodes = [node('n1', { zone: 'z1' }, { d1: {}, d2: {} }), node('n2', { zone: 'z1' })];
  const base = { nodes, replicas: [existing('n1', 'd1')], settings: settings({ 'replica-zone-soft-anti-affinity': false }) };
  t.equal(schedule({ ...base, volume: volume({ numberOfReplicas: 2 }) }).placements.length, 0, 'global zone soft false');
  t.same(placed(schedule({ ...base, volume: volume({ numberOfReplicas: 2, replicaZoneSoftAntiAffinity: 'enabled' }) })), ['n2/d1']);
  const both = schedule({
    nodes: [nodes[0]!], replicas: [existing('n1', 'd1')],
    volume: volume({ numberOfReplicas: 2, replicaZoneSoftAntiAffinity: 'enabled', replicaSoftAntiAffinity: 'enabled' }),
    settings: settings({ 'replica-zone-soft-anti-affinity': false, 'replica-soft-anti-affinity': false }),
  });
  t.same(placed(both), ['n1/d2']);
  const disabled = schedule({
    nodes: [nodes[0]!], replicas: [existing('n1', 'd1')],
    volume: volume({ numberOfReplicas: 2, replicaSoftAntiAffinity: 'disabled' }),
    settings: settings({ 'replica-soft-anti-affinity': true }),
  });
  t.equal(disabled.placements.length, 0, 'disabled override beats a true global');
});

t.test('eviction tiers: E (zone soft) and EZ (zone hard)', async (t) => {
  const nodes = [node('n1', { zone: 'z1' }, { d1: {}, d2: {} })];
  const evicting = [existing('n1', 'd1', { evictionRequested: true })];
  for (const zoneSoft of [true, false]) {
    const r = schedule({ nodes, replicas: evicting, volume: volume({ numberOfReplicas: 1 }), settings: settings({ 'replica-zone-soft-anti-affinity': zoneSoft }) });
    t.same(placed(r), ['n1/d2'], `only-evicting node is a target (zoneSoft=${zoneSoft})`);
    t.equal(r.trace!.replicas[0]!.result && 'tier' in r.trace!.replicas[0]!.result ? r.trace!.replicas[0]!.result.tier : '', zoneSoft ? 'E' : 'EZ');
  }
  // A node with an evicting and a healthy replica is not only-evicting.
  const mixed = schedule({
    nodes: [node('n1', { zone: 'z1' }, { d1: {}, d2: {}, d3: {} })],
    replicas: [existing('n1', 'd1', { evictionRequested: true }), existing('n1', 'd2')],
    volume: volume({ numberOfReplicas: 2 }),
  });
  t.equal(mixed.placements.length, 0);
});

t.test('missing replicas: usable = neither failed nor evicting', async (t) => {
  const nodes = ['a', 'b', 'c', 'd'].map((n) => node(n, { zone: n }));
  const cases: Array<[string, ReturnType<typeof existing>[], number]> = [
    ['none', [], 3],
    ['two healthy', [existing('a', 'd1'), existing('b', 'd1')], 1],
    ['failed does not count as usable', [existing('a', 'd1', { failed: true }), existing('b', 'd1')], 2],
    ['evicting does not count as usable', [existing('a', 'd1', { evictionRequested: true }), existing('b', 'd1'), existing('c', 'd1')], 1],
    ['already enough', [existing('a', 'd1'), existing('b', 'd1'), existing('c', 'd1')], 0],
  ];
  for (const [name, replicas, missing] of cases) {
    const r = schedule({ nodes, replicas, volume: volume({ numberOfReplicas: 3 }) });
    t.equal(r.missing, missing, name);
  }
});

t.test('existing replicas: failed-but-reusable and evicting ones occupy their node; failed+evicting ones do not', async (t) => {
  const nodes = [node('a', { zone: 'z' }), node('b', { zone: 'z' })];
  const s = settings({ 'replica-zone-soft-anti-affinity': true, 'replica-soft-anti-affinity': false });
  t.same(placed(schedule({ nodes, settings: s, replicas: [existing('a', 'd1', { failed: true })], volume: volume({ numberOfReplicas: 1 }) })), ['b/d1'], 'failed replica keeps its node used');
  t.same(placed(schedule({ nodes, settings: s, replicas: [existing('a', 'd1', { failed: true, evictionRequested: true })], volume: volume({ numberOfReplicas: 1 }) })), ['a/d1'], 'not reusable: ignored, a wins the tie by name');
});

t.test('multiple replicas see the earlier ones: one per zone, then fall through', async (t) => {
  const nodes = [node('a', { zone: 'z1' }), node('b', { zone: 'z1' }), node('c', { zone: 'z2' })];
  const r = schedule({ nodes, volume: volume({ numberOfReplicas: 3 }) });
  t.equal(r.placements.length, 3);
  t.same(r.placements.map((p) => p.tier), ['NN', 'NN', 'N']);
  t.equal(new Set(placed(r)).size, 3, 'three different nodes');
  const zones = r.placements.slice(0, 2).map((p) => nodes.find((n) => n.name === p.disk.node)!.zone);
  t.same(zones.sort(), ['z1', 'z2'], 'the first two replicas in different zones');
});

t.test('schedulable nodes: ready, cordon (per setting), allowScheduling, eviction', async (t) => {
  const cases: Array<[string, Parameters<typeof node>[1], Partial<ReturnType<typeof settings>>, boolean]> = [
    ['ready', {}, {}, true],
    ['not ready', { ready: false }, {}, false],
    ['cordoned, setting true', { cordoned: true }, {}, false],
    ['cordoned, setting false', { cordoned: true }, { 'disable-scheduling-on-cordoned-node': false }, true],
    ['scheduling disabled', { allowScheduling: false }, {}, false],
    ['eviction requested', { evictionRequested: true, allowScheduling: false }, {}, false],
  ];
  for (const [name, spec, s, ok] of cases) {
    const r = schedule({ nodes: [node('n1', spec)], settings: settings(s) });
    t.equal(r.placements.length, ok ? 1 : 0, name);
    if (!ok) t.equal(r.unscheduled[0]!.reason, 'nodes are unavailable', `${name}: reason`);
  }
});

t.test('stale reports: not schedulable, own rejection code, explained', async (t) => {
  const nodes = [node('old', { reportedAt: 0 }), node('fresh', { reportedAt: 100_000 })];
  const r = schedule({ nodes, now: 130_000, staleAfterSeconds: 60 });
  t.same(placed(r), ['fresh/d1']);
  const step = r.trace!.schedulableNodes.find((s) => s.name === 'NodeReportFresh')!;
  t.same(step.rejected.map((x) => [x.node, x.code]), [['old', 'node_stats_stale']]);
  t.match(step.rejected[0]!.message, /130\.000 s ago, more than stats_stale_after_seconds = 60/);
  t.equal(r.rejections.get('NodeReportFresh'), 1);
  t.equal(schedule({ nodes: [node('edge', { reportedAt: 0 })], now: 60_000, staleAfterSeconds: 60 }).placements.length, 1, 'exactly at the limit is still fresh');
  t.equal(schedule({ nodes: [node('old', { reportedAt: 0 })], now: 10_000_000, staleAfterSeconds: 0 }).placements.length, 1, '0 turns the check off');
});

t.test('node tags: all selector tags; empty selector per allow-empty-node-selector-volume', async (t) => {
  const nodes = [node('plain'), node('ssd', { tags: ['ssd'] }), node('fast-ssd', { tags: ['ssd', 'fast'] })];
  const cases: Array<[string[], boolean, string[]]> = [
    [['ssd', 'fast'], true, ['fast-ssd/d1']],
    [['ssd'], true, ['fast-ssd/d1', 'ssd/d1']],
    [[], true, ['fast-ssd/d1', 'plain/d1', 'ssd/d1']],
    [[], false, ['plain/d1']],
    [['nvme'], true, []],
  ];
  for (const [selector, allowEmpty, want] of cases) {
    const r = schedule({ nodes, settings: settings({ 'allow-empty-node-selector-volume': allowEmpty }), volume: volume({ nodeSelector: selector, numberOfReplicas: 3 }) });
    t.same(placed(r).sort(), want, `${JSON.stringify(selector)} allowEmpty=${allowEmpty}`);
  }
});

t.test('disk checks, reason keys and their order', async (t) => {
  const cases: Array<[string, Parameters<typeof node>[2], Partial<ReturnType<typeof volume>>, Partial<ReturnType<typeof settings>>, string | null]> = [
    ['fits', { d1: {} }, {}, {}, null],
    ['v2 needs a block disk', { d1: {} }, { dataEngine: 'v2' }, {}, 'disks are unavailable'],
    ['v2 on a block disk', { d1: { type: 'block' } }, { dataEngine: 'v2' }, {}, null],
    ['v1 on a block disk', { d1: { type: 'block' } }, {}, {}, 'disks are unavailable'],
    ['disk tags missing', { d1: { tags: ['hdd'] } }, { diskSelector: ['ssd'] }, {}, 'tags not fulfilled'],
    ['tagged disk, empty selector, allow-empty false', { d1: { tags: ['hdd'] } }, {}, { 'allow-empty-disk-selector-volume': false }, 'tags not fulfilled'],
    ['too big', { d1: {} }, { size: 101 * GiB }, {}, 'insufficient storage'],
    ['type is checked before tags', { d1: { tags: ['hdd'] } }, { dataEngine: 'v2', diskSelector: ['ssd'] }, {}, 'disks are unavailable'],
    ['tags and space on two disks', { d1: { tags: ['hdd'] }, d2: { tags: ['ssd'], storageMaximum: GiB, storageAvailable: GiB } }, { diskSelector: ['ssd'] }, {}, 'insufficient storage; tags not fulfilled'],
    ['disk scheduling disabled: node has no disks', { d1: { allowScheduling: false } }, {}, {}, 'disks are unavailable'],
    ['disk evicting', { d1: { evictionRequested: true } }, {}, {}, 'disks are unavailable'],
    ['disk under pressure (condition Schedulable false)', { d1: { storageAvailable: 25 * GiB } }, {}, {}, 'disks are unavailable'],
    ['over-provisioned disk', { d1: { storageScheduled: 101 * GiB } }, {}, {}, 'disks are unavailable'],
    ['actualSize counts', { d1: { storageAvailable: 40 * GiB } }, { actualSize: 15 * GiB, size: GiB }, {}, 'insufficient storage'],
  ];
  for (const [name, disks, v, changes, reason] of cases) {
    const r = schedule({ nodes: [node('n1', {}, disks)], volume: volume(v), settings: settings(changes) });
    t.equal(r.unscheduled[0]?.reason ?? null, reason, name);
  }
});

t.test('disk anti-affinity: hard, soft, and the seed Disk X / Disk Y story', async (t) => {
  // Node A with disk X (holds a replica of the volume) and disk Y; zone and node soft so node A is a candidate.
  const soft = settings({ 'replica-soft-anti-affinity': true });
  const both = node('A', {}, { X: {}, Y: {} });
  const r1 = schedule({ nodes: [both], settings: soft, volume: volume({ numberOfReplicas: 2 }), replicas: [existing('A', 'X')] });
  t.same(placed(r1), ['A/Y'], 'Y preferred (hard or soft)');
  const yTagged = node('A', {}, { X: { tags: ['ssd'] }, Y: { tags: ['hdd'] } });
  const hard = schedule({
    nodes: [yTagged], settings: settings({ 'replica-soft-anti-affinity': true, 'replica-disk-soft-anti-affinity': false }),
    volume: volume({ numberOfReplicas: 2, diskSelector: ['ssd'] }), replicas: [existing('A', 'X')],
  });
  t.equal(hard.placements.length, 0, 'hard: Y unsuitable (tags) → fails');
  t.equal(hard.unscheduled[0]!.reason, 'tags not fulfilled');
  const softR = schedule({ nodes: [yTagged], settings: soft, volume: volume({ numberOfReplicas: 2, diskSelector: ['ssd'] }), replicas: [existing('A', 'X')] });
  t.same(placed(softR), ['A/X'], 'soft: falls back to X');
  const antiAffinityOnly = schedule({
    nodes: [node('A', {}, { X: {} })], settings: settings({ 'replica-soft-anti-affinity': true, 'replica-disk-soft-anti-affinity': false }),
    volume: volume({ numberOfReplicas: 2 }), replicas: [existing('A', 'X')],
  });
  t.equal(antiAffinityOnly.unscheduled[0]!.reason, 'replica scheduling failed', 'anti-affinity adds no reason');
});

t.test('in-pass accounting: each replica sees the space the earlier ones took on the same disk', async (t) => {
  const s = settings({ 'replica-soft-anti-affinity': true, 'storage-minimal-available-percentage': 0 });
  const oneFits = node('n1', {}, { d1: { storageMaximum: 15 * GiB, storageAvailable: 15 * GiB } });
  const r = schedule({ nodes: [oneFits], settings: s, volume: volume({ numberOfReplicas: 2 }) });
  t.same(placed(r), ['n1/d1']);
  t.equal(r.unscheduled[0]!.reason, 'insufficient storage', 'the second replica does not fit beside the first');
  const twoFit = node('n1', {}, { d1: { storageMaximum: 20 * GiB, storageAvailable: 20 * GiB } });
  t.same(placed(schedule({ nodes: [twoFit], settings: s, volume: volume({ numberOfReplicas: 2 }) })), ['n1/d1', 'n1/d1'], 'exactly at the limit (≤)');
});

t.test('seed: the two-node example through the whole scheduler picks node B, disk B2', async (t) => {
  const d = (usable: number) => ({ storageMaximum: 2 * usable * GiB, storageAvailable: usable * GiB });
  const nodes = [node('A', {}, { A1: d(900), A2: d(100) }), node('B', {}, { B1: d(600), B2: d(700) })];
  const r = schedule({ nodes, volume: volume({ size: 100 * GiB }) });
  t.same(placed(r), ['B/B2']);
  const b = r.trace!.replicas[0]!.balance!;
  t.equal(b.chosenNode, 'B');
  t.same(b.diskStage.map((x) => x.disk), ['B1', 'B2'], 'the disk stage scores node B\'s disks only');
});

t.test('no schedulable node gives "nodes are unavailable"; no node at all too', async (t) => {
  t.equal(schedule({ nodes: [] , volume: volume({ numberOfReplicas: 2 }) }).unscheduled.map((u) => u.reason).join('|'), 'nodes are unavailable|nodes are unavailable');
});

t.test('replica-auto-balance best-effort: a used node with a disk under pressure counts as new; EZ takes any only-evicting node', async (t) => {
  // n1 holds the replica on d1, which is under pressure (5 % free); d2 has room. Zone soft, node hard.
  const nodes = [node('n1', { zone: 'z1' }, { d1: { storageAvailable: 5 * GiB, storageMaximum: 100 * GiB, storageScheduled: 0 }, d2: {} })];
  const s = { 'replica-zone-soft-anti-affinity': true, 'replica-soft-anti-affinity': false };
  const base = { nodes, replicas: [existing('n1', 'd1')], volume: volume({ numberOfReplicas: 2 }) };
  t.equal(schedule({ ...base, settings: settings(s) }).placements.length, 0, 'disabled: the used node is not a target');
  t.same(placed(schedule({ ...base, settings: settings({ ...s, 'replica-auto-balance': 'best-effort' }) })), ['n1/d2'], 'best-effort: the node counts as new');
  t.equal(schedule({ ...base, settings: settings({ ...s, 'replica-auto-balance': 'best-effort', 'replica-auto-balance-disk-pressure-percentage': 0 }) }).placements.length, 0, 'pressure 0 disables');
  t.same(placed(schedule({ ...base, volume: volume({ numberOfReplicas: 2, replicaAutoBalance: 'best-effort' }), settings: settings(s) })), ['n1/d2'], 'volume override');
  t.equal(schedule({ ...base, volume: volume({ numberOfReplicas: 2, replicaAutoBalance: 'least-effort' }), settings: settings({ ...s, 'replica-auto-balance': 'best-effort' }) }).placements.length, 0, 'least-effort does not widen');

  // Zone hard: n1 only-evicting, but its zone also holds a healthy replica on n2 → not EZ unless best-effort.
  const zoned = [node('n1', { zone: 'z1' }, { d1: {}, d2: {} }), node('n2', { zone: 'z1' }, { d1: {}, d2: {} })];
  const replicas = [existing('n1', 'd1', { evictionRequested: true }), existing('n2', 'd1')];
  const hard = { 'replica-zone-soft-anti-affinity': false };
  t.equal(schedule({ nodes: zoned, replicas, volume: volume({ numberOfReplicas: 2 }), settings: settings(hard) }).placements.length, 0);
  t.same(placed(schedule({ nodes: zoned, replicas, volume: volume({ numberOfReplicas: 2 }), settings: settings({ ...hard, 'replica-auto-balance': 'best-effort' }) })), ['n1/d2']);
});

t.test('over-provisioning: no node holds the replica in usable terms → the candidate with the most usable space', async (t) => {
  // Both disks pass the space conditions (limit 300 % of 100 GiB) but have less usable space than the replica.
  const nodes = [
    node('a', { zone: 'z1' }, { d1: { storageScheduled: 70 * GiB } }),
    node('b', { zone: 'z2' }, { d1: { storageScheduled: 50 * GiB } }),
  ];
  const r = schedule({ nodes, settings: settings({ 'storage-over-provisioning-percentage': 300 }), volume: volume({ size: 60 * GiB }) });
  t.same(placed(r), ['b/d1'], 'usable 50 GiB beats 30 GiB');
  t.equal(r.placements[0]!.how, 'most_usable_no_node_fits');
  t.same(r.trace!.replicas[0]!.balance!.nodeStage.map((n) => n.score), [null, null], 'both nodes skipped in the node stage');
});

// A pass's later replicas take in its earlier placements: a node without disks that no tier lists after a placement
// in its zone no longer adds "disks are unavailable" to the next replica's failure.
t.test('a node without disks left unlisted by an earlier placement of the pass adds no reason', async (t) => {
  const nodes = [
    node('a', { zone: 'z1' }),
    node('b', { zone: 'z1' }, {}),
    node('c', { zone: 'z2' }, { d1: { storageMaximum: GiB, storageAvailable: GiB } }),
  ];
  for (const explain of [false, true]) {
    const r = schedule({ nodes, settings: settings({ 'replica-zone-soft-anti-affinity': false }), volume: volume({ numberOfReplicas: 2 }), explain });
    t.same(placed(r), ['a/d1']);
    t.same(r.unscheduled.map((u) => u.reason), ['insufficient storage'], `explain=${explain}`);
  }
});
