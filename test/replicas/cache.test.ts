// What a decision keeps for the next (ScheduleCache, DiskTable.refresh) against deciding afresh: over random clusters
// and random sequences of claims, releases (each told to the cache, as the service tells it), new node reports,
// settings changes and clock readings, a decision that reuses the last one's cluster answers exactly what a fresh
// one does — placements, tiers, how, refusals, the rejection counts (and their order) and the candidate counts; and
// the same through the service, whose claims, releases and reports move its memory.
import fc from 'fast-check';
import t from 'tap';
import { DiskTable, type DiskView, type NodeReport, type NodeView } from '../../src/replicas/model.ts';
import { ScheduleCache, scheduleVolume, type ScheduleInput, type ScheduleResult } from '../../src/replicas/scheduler.ts';
import { ReplicaService } from '../../src/replicas/service.ts';
import { openSqliteStore } from '../../src/store/sqlite.ts';
import type { ReplicaSettings } from '../../src/replicas/settings.ts';
import { disk, generatedDisks, settings as makeSettings, volume as makeVolume } from './fixtures.ts';

type MutableDisk = { -readonly [K in keyof DiskView]: DiskView[K] };

const tag = fc.constantFrom('ssd', 'hdd');
const soft = fc.constantFrom('ignored', 'enabled', 'disabled') as fc.Arbitrary<'ignored' | 'enabled' | 'disabled'>;

const diskArb = fc.record({
  type: fc.constantFrom('filesystem', 'filesystem', 'filesystem', 'block') as fc.Arbitrary<'filesystem' | 'block'>,
  tags: fc.uniqueArray(tag, { maxLength: 2 }),
  allowScheduling: fc.constantFrom(true, true, true, false),
  evictionRequested: fc.constantFrom(false, false, false, true),
  storageMaximum: fc.integer({ min: 0, max: 1000 }),
  availableShare: fc.integer({ min: 0, max: 110 }),
  storageReserved: fc.integer({ min: 0, max: 200 }),
  storageScheduled: fc.integer({ min: 0, max: 900 }),
});

const nodeArb = fc.record({
  zone: fc.constantFrom('', 'z1', 'z2', 'z3'),
  tags: fc.uniqueArray(tag, { maxLength: 2 }),
  ready: fc.constantFrom(true, true, true, false),
  cordoned: fc.constantFrom(false, false, true),
  reportedAt: fc.integer({ min: 0, max: 20_000 }),
  disks: fc.array(diskArb, { minLength: 0, maxLength: 3 }),
});

type NodeSpec = typeof nodeArb extends fc.Arbitrary<infer T> ? T : never;

function makeNode(name: string, s: NodeSpec): NodeView {
  return {
    name, zone: s.zone, region: '', tags: s.tags, cordoned: s.cordoned, ready: s.ready, allowScheduling: true,
    evictionRequested: false, reportedAt: s.reportedAt,
    disks: generatedDisks(name, s.disks),
  };
}

const settingsArb = fc.record({
  'replica-soft-anti-affinity': fc.boolean(),
  'replica-zone-soft-anti-affinity': fc.boolean(),
  'replica-disk-soft-anti-affinity': fc.boolean(),
  'storage-minimal-available-percentage': fc.integer({ min: 0, max: 50 }),
  'storage-over-provisioning-percentage': fc.integer({ min: 50, max: 300 }),
  'allow-empty-disk-selector-volume': fc.boolean(),
  'disable-scheduling-on-cordoned-node': fc.boolean(),
  'replica-auto-balance': fc.constantFrom('disabled', 'best-effort') as fc.Arbitrary<'disabled' | 'best-effort'>,
  'replica-auto-balance-disk-pressure-percentage': fc.integer({ min: 0, max: 100 }),
}).map((s) => makeSettings(s as Partial<ReplicaSettings>));

const volumeArb = fc.record({
  size: fc.integer({ min: 1, max: 300 }),
  actualSize: fc.integer({ min: 0, max: 50 }),
  numberOfReplicas: fc.integer({ min: 1, max: 4 }),
  nodeSelector: fc.uniqueArray(tag, { maxLength: 1 }),
  diskSelector: fc.uniqueArray(tag, { maxLength: 1 }),
  dataEngine: fc.constantFrom('v1', 'v1', 'v2') as fc.Arbitrary<'v1' | 'v2'>,
  replicaSoftAntiAffinity: soft,
  replicaZoneSoftAntiAffinity: soft,
  replicaDiskSoftAntiAffinity: soft,
});

const stepArb = fc.oneof(
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('schedule' as const), volume: volumeArb, existing: fc.array(fc.nat(), { maxLength: 2 }), now: fc.integer({ min: 0, max: 30_000 }) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('release' as const), at: fc.nat(), bytes: fc.integer({ min: 0, max: 400 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('report' as const), at: fc.nat(), node: nodeArb }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('settings' as const), settings: settingsArb }) },
);

/** Everything a decision without a trace answers. */
function summary(r: ScheduleResult): string {
  return JSON.stringify({
    missing: r.missing, candidates: r.candidates, passed: r.passed, unscheduled: r.unscheduled,
    placements: r.placements.map((p) => [p.disk.id, p.tier, p.how]), rejections: [...r.rejections],
  });
}

t.test('a decision reusing the last one\'s cluster answers what a fresh decision answers', async (t) => {
  let placed = 0;
  let reused = 0;
  fc.assert(fc.property(
    fc.array(nodeArb, { minLength: 1, maxLength: 6 }), settingsArb, fc.constantFrom(0, 0, 10), fc.array(stepArb, { minLength: 1, maxLength: 25 }),
    (specs, initial, staleAfterSeconds, steps) => {
      const nodes = specs.map((s, i) => makeNode(`n${i}`, s));
      let settings = initial;
      const cache = new ScheduleCache();
      for (const step of steps) {
        const disks = nodes.flatMap((n) => n.disks) as MutableDisk[];
        if (step.kind === 'release') {
          if (disks.length > 0) {
            const d = disks[step.at % disks.length]!;
            d.storageScheduled = Math.max(0, d.storageScheduled - step.bytes);
            cache.changed(d.node, d.name);
          }
        } else if (step.kind === 'report') {
          const k = step.at % nodes.length;
          nodes[k] = makeNode(nodes[k]!.name, step.node);
        } else if (step.kind === 'settings') {
          settings = step.settings;
        } else {
          const volume = makeVolume({ name: 'v', ...step.volume });
          const replicas = disks.length === 0 ? [] : step.existing.map((x) => {
            const d = disks[x % disks.length]!;
            return { node: d.node, disk: d.name, failed: false, evictionRequested: x % 3 === 0, size: volume.size, inStatus: true };
          });
          const input: ScheduleInput = { nodes, settings, volume, replicas, now: step.now, staleAfterSeconds, explain: false };
          const warm = scheduleVolume({ ...input, cache });
          const fresh = scheduleVolume(input);
          if (summary(warm) !== summary(fresh)) return false;
          if (warm.placements[0] && fresh.placements[0] && warm.placements[0].disk !== fresh.placements[0].disk) return false;
          for (const p of warm.placements) {
            (p.disk as MutableDisk).storageScheduled += volume.size;
            cache.changed(p.disk.node, p.disk.name);
          }
          placed += warm.placements.length;
          reused++;
        }
      }
      return true;
    },
  ), { numRuns: 400 });
  t.ok(placed > 0 && reused > 0, `replicas placed through the kept cluster: ${placed} in ${reused} decisions`);
});

// A volume without replicas on the nodes takes its candidates from the cluster (the tagged nodes' pre-filtered disks);
// a claim that takes a disk out of the pre-filter takes it out of those too.
t.test('the kept candidates of a volume without replicas follow the pre-filter', async (t) => {
  const nodes = [makeNode('n0', { zone: 'z1', tags: [], ready: true, cordoned: false, reportedAt: 0, disks: [] }), makeNode('n1', { zone: 'z2', tags: [], ready: true, cordoned: false, reportedAt: 0, disks: [] })]
    .map((n) => ({ ...n, disks: [disk(n.name, 'd0', { storageMaximum: 100, storageAvailable: 100 })] }));
  const settings = makeSettings({ 'storage-minimal-available-percentage': 0, 'storage-over-provisioning-percentage': 100 });
  const cache = new ScheduleCache();
  const input: ScheduleInput = { nodes, settings, volume: makeVolume({ name: 'v', size: 10 }), replicas: [], now: 0, staleAfterSeconds: 0, explain: false };
  t.equal(summary(scheduleVolume({ ...input, cache })), summary(scheduleVolume(input)));
  const full = nodes[0]!.disks[0] as MutableDisk;
  full.storageScheduled = 150;
  cache.changed(full.node, full.name);
  const warm = scheduleVolume({ ...input, cache });
  t.equal(summary(warm), summary(scheduleVolume(input)));
  t.same([...warm.rejections], [['DiskSchedulableCondition', 1]], 'refused by the pre-filter, not offered to the checks');
});

t.test('a disk table refreshed on the disks that changed holds the figures a new table reads', async (t) => {
  fc.assert(fc.property(
    fc.array(nodeArb, { minLength: 1, maxLength: 5 }),
    fc.array(fc.tuple(fc.nat(), fc.integer({ min: -500, max: 500 })), { maxLength: 20 }),
    (specs, changes) => {
      const nodes = specs.map((s, i) => makeNode(`n${i}`, s));
      const table = new DiskTable(nodes);
      const disks = table.disks as MutableDisk[];
      const touched = new Set<number>();
      for (const [at, delta] of changes) {
        if (disks.length === 0) break;
        const i = at % disks.length;
        disks[i]!.storageScheduled = Math.max(0, disks[i]!.storageScheduled + delta);
        touched.add(i);
      }
      const changed = [...touched].filter((i) => table.refresh(i));
      const again = new DiskTable(nodes);
      return changed.every((i) => table.scheduled[i] === disks[i]!.storageScheduled) &&
        JSON.stringify([...table.scheduled]) === JSON.stringify([...again.scheduled]) &&
        JSON.stringify([...table.usable]) === JSON.stringify([...again.usable]) &&
        [...touched].every((i) => !table.refresh(i));
    },
  ), { numRuns: 300 });
  t.pass('refresh = rebuild');
});

t.test('through the service: after claims, releases and reports, its decision answers what a fresh one does', async (t) => {
  const opArb = fc.oneof(
    { weight: 5, arbitrary: fc.record({ kind: fc.constant('claim' as const), size: fc.integer({ min: 1, max: 200 }), replicas: fc.integer({ min: 1, max: 3 }) }) },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('release' as const), at: fc.nat() }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('report' as const), at: fc.nat(), node: nodeArb }) },
  );
  let compared = 0;
  await fc.assert(fc.asyncProperty(fc.array(nodeArb, { minLength: 1, maxLength: 5 }), fc.array(opArb, { minLength: 1, maxLength: 15 }), async (specs, ops) => {
    const service = await ReplicaService.open(openSqliteStore(':memory:'), { values: makeSettings() });
    const report = (s: NodeSpec): NodeReport => {
      const view = makeNode('x', s);
      return {
        zone: view.zone, region: '', tags: [...view.tags], cordoned: view.cordoned, ready: view.ready, allowScheduling: true, evictionRequested: false,
        disks: Object.fromEntries(view.disks.map((d) => [d.name, {
          path: d.path, type: d.type, tags: [...d.tags], allowScheduling: d.allowScheduling, evictionRequested: d.evictionRequested,
          storageMaximum: d.storageMaximum, storageAvailable: d.storageAvailable, storageReserved: d.storageReserved, storageScheduled: d.storageScheduled,
        }])),
      };
    };
    try {
      for (const [i, s] of specs.entries()) await service.putNode(`n${i}`, report(s), 0);
      let volumes = 0;
      for (const op of ops) {
        if (op.kind === 'claim') {
          const volume = makeVolume({ name: `v${volumes++}`, size: op.size, numberOfReplicas: op.replicas });
          await service.schedule(volume, [], { dryRun: false, explain: false, now: 0, staleAfterSeconds: 0 });
        } else if (op.kind === 'release') {
          const replicas = service.replicas();
          if (replicas.length > 0) await service.deleteReplica(replicas[op.at % replicas.length]!.name);
        } else {
          await service.putNode(`n${op.at % specs.length}`, report(op.node), 0).catch(() => undefined);
        }
        const probe = makeVolume({ name: 'probe', size: 50, numberOfReplicas: 3 });
        const kept = await service.schedule(probe, [], { dryRun: true, explain: false, now: 0, staleAfterSeconds: 0 });
        const fresh = scheduleVolume({ nodes: service.nodes, settings: service.settings, volume: probe, replicas: [], now: 0, staleAfterSeconds: 0, explain: false });
        if (summary(kept.result) !== summary(fresh)) return false;
        compared++;
      }
      return true;
    } finally {
      service.close();
    }
  }), { numRuns: 60 });
  t.ok(compared > 0, `decisions compared: ${compared}`);
});
