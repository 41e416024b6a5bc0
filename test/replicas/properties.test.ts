// Properties of the pure scheduler over random clusters, settings, volumes and existing replicas.
import fc from 'fast-check';
import t from 'tap';
import type { NodeView, ReplicaRef } from '../../src/replicas/model.ts';
import { effectiveSoft, type ReplicaSettings } from '../../src/replicas/settings.ts';
import { checkDiskSpace, selectorsInTags } from '../../src/replicas/space.ts';
import { generatedDisks, schedule, settings as makeSettings, volume as makeVolume } from './fixtures.ts';

const tag = fc.constantFrom('ssd', 'hdd', 'fast');
const soft = fc.constantFrom('ignored', 'enabled', 'disabled') as fc.Arbitrary<'ignored' | 'enabled' | 'disabled'>;

const diskArb = fc.record({
  type: fc.constantFrom('filesystem', 'filesystem', 'filesystem', 'block') as fc.Arbitrary<'filesystem' | 'block'>,
  tags: fc.uniqueArray(tag, { maxLength: 2 }),
  allowScheduling: fc.constantFrom(true, true, true, true, false),
  evictionRequested: fc.constantFrom(false, false, false, true),
  storageMaximum: fc.integer({ min: 0, max: 1000 }),
  availableShare: fc.integer({ min: 0, max: 110 }),
  storageReserved: fc.integer({ min: 0, max: 300 }),
  storageScheduled: fc.integer({ min: 0, max: 1200 }),
});

const nodeArb = fc.record({
  zone: fc.constantFrom('', 'z1', 'z2', 'z3'),
  tags: fc.uniqueArray(tag, { maxLength: 2 }),
  ready: fc.constantFrom(true, true, true, false),
  cordoned: fc.constantFrom(false, false, true),
  allowScheduling: fc.constantFrom(true, true, true, false),
  disks: fc.array(diskArb, { minLength: 0, maxLength: 3 }),
});

const clusterArb = fc.array(nodeArb, { minLength: 1, maxLength: 6 }).map((specs): NodeView[] =>
  specs.map((s, i) => {
    const name = `n${i}`;
    return {
      name, zone: s.zone, region: '', tags: s.tags, cordoned: s.cordoned, ready: s.ready, allowScheduling: s.allowScheduling,
      evictionRequested: false, reportedAt: 0,
      disks: generatedDisks(name, s.disks),
    };
  }));

const settingsArb = fc.record({
  'replica-soft-anti-affinity': fc.boolean(),
  'replica-zone-soft-anti-affinity': fc.boolean(),
  'replica-disk-soft-anti-affinity': fc.boolean(),
  'storage-minimal-available-percentage': fc.integer({ min: 0, max: 100 }),
  'storage-over-provisioning-percentage': fc.integer({ min: 0, max: 300 }),
  'allow-empty-node-selector-volume': fc.boolean(),
  'allow-empty-disk-selector-volume': fc.boolean(),
  'disable-scheduling-on-cordoned-node': fc.boolean(),
}).map((s) => makeSettings(s as Partial<ReplicaSettings>));

const volumeArb = fc.record({
  size: fc.integer({ min: 1, max: 400 }),
  actualSize: fc.integer({ min: 0, max: 100 }),
  numberOfReplicas: fc.integer({ min: 1, max: 5 }),
  nodeSelector: fc.uniqueArray(tag, { maxLength: 1 }),
  diskSelector: fc.uniqueArray(tag, { maxLength: 1 }),
  dataEngine: fc.constantFrom('v1', 'v1', 'v2') as fc.Arbitrary<'v1' | 'v2'>,
  replicaSoftAntiAffinity: soft,
  replicaZoneSoftAntiAffinity: soft,
  replicaDiskSoftAntiAffinity: soft,
}).map((v) => makeVolume(v));

const caseArb = fc.tuple(clusterArb, settingsArb, volumeArb).chain(([nodes, settings, volume]) => {
  const disks = nodes.flatMap((n) => n.disks);
  const existingArb: fc.Arbitrary<ReplicaRef[]> = disks.length === 0
    ? fc.constant([])
    : fc.array(fc.record({
      at: fc.integer({ min: 0, max: disks.length - 1 }),
      failed: fc.constantFrom(false, false, true),
      evictionRequested: fc.constantFrom(false, false, true),
    }), { maxLength: 3 }).map((xs) => xs.map((x) => ({
      node: disks[x.at]!.node, disk: disks[x.at]!.name, failed: x.failed, evictionRequested: x.evictionRequested,
      size: volume.size, inStatus: true,
    })));
  return existingArb.map((existing) => ({ nodes, settings, volume, existing }));
});

t.test('every placed replica passes every check at the time it is placed; disk anti-affinity holds', async (t) => {
  let placedSome = 0;
  let placedSameDisk = 0;
  fc.assert(fc.property(caseArb, ({ nodes, settings, volume, existing }) => {
    const r = schedule({ nodes, settings, volume, replicas: existing, explain: false });
    const diskSoft = effectiveSoft(volume.replicaDiskSoftAntiAffinity, settings['replica-disk-soft-anti-affinity']);
    const minPct = settings['storage-minimal-available-percentage'];
    const opPct = settings['storage-over-provisioning-percentage'];
    const inPass = new Map<string, number>();
    // Replicas of the volume per disk: existing ones that Longhorn counts (failed+evicting ones are not reusable).
    const perDisk = new Map<string, number>();
    for (const e of existing) if (!(e.failed && e.evictionRequested)) perDisk.set(`${e.node}/${e.disk}`, (perDisk.get(`${e.node}/${e.disk}`) ?? 0) + 1);

    if (r.placements.length + r.unscheduled.length !== r.missing) return false;
    for (const p of r.placements) {
      const d = p.disk;
      const n = nodes.find((x) => x.name === d.node)!;
      // Node and disk pre-conditions.
      if (!n.ready || !n.allowScheduling || (n.cordoned && settings['disable-scheduling-on-cordoned-node'])) return false;
      if (!d.allowScheduling || d.evictionRequested) return false;
      if (!checkDiskSpace(d, 0, 0, minPct, opPct).ok) return false;
      if (d.type !== (volume.dataEngine === 'v2' ? 'block' : 'filesystem')) return false;
      if (!selectorsInTags(d.tags, volume.diskSelector, settings['allow-empty-disk-selector-volume'])) return false;
      // Both space conditions with the space taken earlier in the pass on the same disk.
      const earlier = inPass.get(d.id) ?? 0;
      const c = checkDiskSpace({ ...d, storageScheduled: d.storageScheduled + earlier }, volume.size, volume.actualSize, minPct, opPct);
      if (!c.ok) return false;
      if (!(c.currentAvailable > c.minimalAvailable) || !(c.scheduledTotal <= c.provisionedLimit)) return false;
      inPass.set(d.id, earlier + volume.size);
      // Disk anti-affinity.
      const already = perDisk.get(d.id) ?? 0;
      if (already > 0) {
        if (!diskSoft) return false;
        placedSameDisk++;
      }
      perDisk.set(d.id, already + 1);
      placedSome++;
    }
    return true;
  }), { numRuns: 600 });
  t.ok(placedSome > 0, `the generator places replicas (${placedSome})`);
  // Sharing a disk needs soft anti-affinity and no free disk; scheduler.test.ts pins it with fixed examples.
  t.comment(`replicas placed on a disk already holding one of the volume: ${placedSameDisk}`);
});

t.test('a decision without a trace answers what the traced one (the engine over every candidate) answers', async (t) => {
  // Without a trace each replica is placed by one walk of the checks and tiers (placeWithoutTrace); with one, by the
  // engine's run, whose stages the trace reads. Placements, tiers, how, refusals and the rejection counts (in their
  // order) must be the same.
  const answer = (r: ReturnType<typeof schedule>) => JSON.stringify({
    placements: r.placements.map((p) => [p.disk.id, p.tier, p.how]), unscheduled: r.unscheduled, rejections: [...r.rejections],
    candidates: r.candidates, passed: r.passed,
  });
  let placed = 0;
  let refused = 0;
  fc.assert(fc.property(caseArb, ({ nodes, settings, volume, existing }) => {
    const plain = schedule({ nodes, settings, volume, replicas: existing, explain: false });
    const traced = schedule({ nodes, settings, volume, replicas: existing, explain: true });
    placed += plain.placements.length;
    refused += plain.unscheduled.length;
    return answer(plain) === answer(traced);
  }), { numRuns: 1000 });
  t.ok(placed > 0 && refused > 0, `the generator places (${placed}) and refuses (${refused}) replicas`);
});

t.test('the scheduler is deterministic and does not mutate its input', async (t) => {
  fc.assert(fc.property(caseArb, ({ nodes, settings, volume, existing }) => {
    const before = JSON.stringify({ nodes, existing });
    const a = schedule({ nodes, settings, volume, replicas: existing });
    const b = schedule({ nodes, settings, volume, replicas: existing });
    return JSON.stringify({ nodes, existing }) === before &&
      JSON.stringify(a.placements.map((p) => p.disk.id)) === JSON.stringify(b.placements.map((p) => p.disk.id)) &&
      JSON.stringify(a.unscheduled) === JSON.stringify(b.unscheduled);
  }), { numRuns: 200 });
  t.pass('deterministic');
});

// Later replicas of a pass take in the earlier placements zone by zone (the nodes whose tier changed, their disks
// in or out of the candidates) instead of walking every node again; the trace counts each tier's disks from the
// tier lists' definition over every node. Where a tier was the winner its candidates are the disks that passed
// the checks and were not dropped by anti-affinity; before it, none. A replica left unplaced names the reasons of
// every tier (a listed node without disks among them), unless no node is schedulable.
t.test("each replica's candidates are the disks of the nodes its tiers list, replica after replica", async (t) => {
  let later = 0;
  fc.assert(fc.property(caseArb, ({ nodes, settings, volume, existing }) => {
    const r = schedule({ nodes, settings, volume: { ...volume, numberOfReplicas: volume.numberOfReplicas + 1 }, replicas: existing });
    for (const replica of r.trace!.replicas) {
      if (replica.index > 0 && 'node' in replica.result) later++;
      const winner = 'node' in replica.result ? replica.tiers.length - 1 : -1;
      for (const [k, tier] of replica.tiers.entries()) {
        const left = tier.antiAffinity.in - tier.antiAffinity.dropped.length;
        if (k === winner ? tier.candidates !== left : left !== 0) return false;
      }
      if ('reason' in replica.result && replica.tiers.length > 0) {
        const reasons = [...new Set(replica.tiers.flatMap((tier) => tier.reasons))].sort();
        if (replica.result.reason !== (reasons.length > 0 ? reasons.join('; ') : 'replica scheduling failed')) return false;
      }
    }
    return true;
  }), { numRuns: 3000 });
  t.ok(later > 0, `replicas placed after an earlier one of their pass (${later})`);
});
