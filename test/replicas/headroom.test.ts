// POST /replicas/headroom equals what a client gets by really scheduling and claiming such volumes one after
// another until the first that cannot get every replica placed: checked on generated fleets (zones, node and disk
// tags, reserved and scheduled space, cordoned nodes, full disks) under generated settings (zone/node/disk
// anti-affinity tiers, the space percentages, empty selectors, degraded availability), all through HTTP.
import type { FastifyInstance } from 'fastify';
import t from 'tap';
import { incrementalHeadroom, replicaHeadroom, sequentialHeadroom, surelyPlaced } from '../../src/replicas/headroom.ts';
import type { DiskView, NodeView, VolumeSpec } from '../../src/replicas/model.ts';
import { defaultSettings, type ReplicaSettings } from '../../src/replicas/settings.ts';
import { build } from '../helper.ts';
import { GiB, snapshot } from './http.ts';
import { mulberry32 as prng } from '../random.ts';

interface Case {
  nodes: Array<[string, Record<string, unknown>]>;
  settings: Record<string, unknown>;
  volume: Record<string, unknown>;
}

function generate(seed: number): Case {
  const rand = prng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
  const some = (xs: readonly string[]) => xs.filter(() => rand() < 0.4);
  const nodes: Case['nodes'] = [];
  const nodeCount = 2 + Math.floor(rand() * 5);
  for (let n = 0; n < nodeCount; n++) {
    const disks: Record<string, unknown> = {};
    const diskCount = 1 + Math.floor(rand() * 3);
    for (let d = 0; d < diskCount; d++) {
      const max = pick([20, 50, 100, 200]) * GiB;
      disks[`d${d}`] = {
        path: `/mnt/d${d}`, tags: some(['ssd', 'fast']), storageMaximum: max,
        storageAvailable: Math.floor(max * (0.3 + 0.7 * rand())),
        storageReserved: Math.floor(max * 0.2 * rand()), storageScheduled: Math.floor(max * 0.3 * rand()),
        allowScheduling: rand() < 0.95,
      };
    }
    nodes.push([`n${n}`, { zone: pick(['', 'z1', 'z2', 'z3']), tags: some(['storage', 'edge']), cordoned: rand() < 0.1, disks }]);
  }
  const settings = {
    'replica-soft-anti-affinity': rand() < 0.5,
    'replica-zone-soft-anti-affinity': rand() < 0.7,
    'replica-disk-soft-anti-affinity': rand() < 0.7,
    'storage-minimal-available-percentage': pick([0, 10, 25]),
    'storage-over-provisioning-percentage': pick([100, 150, 300]),
    'allow-empty-node-selector-volume': rand() < 0.8,
    'allow-empty-disk-selector-volume': rand() < 0.8,
    'allow-volume-creation-with-degraded-availability': rand() < 0.5,
  };
  const volume = {
    size: (2 + Math.floor(rand() * 20)) * GiB,
    numberOfReplicas: 1 + Math.floor(rand() * 3),
    nodeSelector: rand() < 0.3 ? ['storage'] : [],
    diskSelector: rand() < 0.3 ? ['ssd'] : [],
    ...(rand() < 0.3 ? { replicaDiskSoftAntiAffinity: pick(['enabled', 'disabled']) } : {}),
  };
  return { nodes, settings, volume };
}

async function fleet(t: Parameters<typeof build>[0], c: Case): Promise<FastifyInstance> {
  const app = await build(t);
  for (const [name, body] of c.nodes) {
    const res = await app.inject({ method: 'PUT', url: `/nodes/${name}`, payload: body });
    if (res.statusCode !== 200) throw new Error(res.body);
  }
  await app.inject({ method: 'PUT', url: '/replicas/settings', payload: c.settings });
  return app;
}

/** Schedules and claims volumes one after another until one does not get every replica placed. */
async function sequential(app: FastifyInstance, volume: Record<string, unknown>, max: number): Promise<{ fits: number; limit: string | null }> {
  for (let i = 0; i < max; i++) {
    const res = await app.inject({ method: 'POST', url: '/replicas/schedule', payload: { volume: { ...volume, name: `seq-${i}` } } });
    const body = res.json();
    if (res.statusCode === 409) return { fits: i, limit: body.detail };
    if (res.statusCode !== 200) throw new Error(res.body);
    if (body.unscheduled) {
      // Degraded availability: placed some, not all. The reason keys of the replicas left out, as a 409 gives them.
      const keys = [...new Set((body.unscheduled as Array<{ reason: string }>).flatMap((u) => u.reason.split('; ')))]
        .filter((k) => k !== 'replica scheduling failed').sort();
      return { fits: i, limit: keys.length > 0 ? keys.join('; ') : 'replica scheduling failed' };
    }
  }
  return { fits: max, limit: null };
}

t.test('headroom equals the sequential real claims on generated fleets', async (t) => {
  let counted = 0;
  let someFit = 0;
  let degradedOrRefused = 0;
  for (let seed = 1; seed <= 40; seed++) {
    const c = generate(seed);
    const app = await fleet(t, c);
    const before = await snapshot(app);
    const res = await app.inject({ method: 'POST', url: '/replicas/headroom', payload: { volume: { name: 'template', ...c.volume }, max: 500 } });
    t.equal(res.statusCode, 200, `seed ${seed}`);
    const headroom = res.json() as { fits: number; truncated: boolean; limit: string | null };
    t.same(await snapshot(app), before, `seed ${seed}: headroom changes nothing`);
    const real = await sequential(app, c.volume, 500);
    t.same({ fits: headroom.fits, limit: headroom.limit }, real, `seed ${seed}: ${JSON.stringify(c.volume)}`);
    t.equal(headroom.truncated, real.limit === null, 'truncated exactly when max was reached');
    counted++;
    if (real.fits > 0) someFit++;
    if (real.limit !== null) degradedOrRefused++;
  }
  t.ok(someFit > 10, `fleets where some fit: ${someFit} of ${counted}`);
  t.ok(degradedOrRefused > counted / 2, `fleets that ran out before max: ${degradedOrRefused}`);
});

t.test('max truncates the count; the metric counts the question', async (t) => {
  const app = await build(t);
  await app.inject({ method: 'PUT', url: '/nodes/a', payload: { zone: 'z1', disks: { d1: { path: '/d', storageMaximum: 1000 * GiB, storageAvailable: 1000 * GiB } } } });
  const capped = (await app.inject({ method: 'POST', url: '/replicas/headroom', payload: { volume: { name: 'v', size: GiB, numberOfReplicas: 1 }, max: 7 } })).json();
  t.same(capped, { fits: 7, truncated: true, limit: null });
  const all = (await app.inject({ method: 'POST', url: '/replicas/headroom', payload: { volume: { name: 'v', size: 100 * GiB, numberOfReplicas: 1 } } })).json();
  t.same(all, { fits: 10, truncated: false, limit: 'insufficient storage' }, '10 × 100 GiB ≤ 1000 GiB (over-provisioning 100 %)');
  const two = (await app.inject({ method: 'POST', url: '/replicas/headroom', payload: { volume: { name: 'v', size: GiB, numberOfReplicas: 2 } } })).json();
  t.same(two, { fits: 0, truncated: false, limit: 'replica scheduling failed' }, 'one node, node anti-affinity hard: no volume gets both replicas');
  const text = (await app.inject({ method: 'GET', url: '/metrics' })).body;
  t.match(text, 'berth_headroom_requests_total{domain="replicas",truncated="true"} 1');
  t.match(text, 'berth_headroom_requests_total{domain="replicas",truncated="false"} 2');
});

t.test('bad headroom requests: 400 naming the field, nothing changed', async (t) => {
  const app = await build(t);
  await app.inject({ method: 'PUT', url: '/nodes/a', payload: { disks: { d1: { path: '/d', storageMaximum: 100 * GiB, storageAvailable: 100 * GiB } } } });
  const before = await snapshot(app);
  const volume = { name: 'v', size: GiB };
  for (const [body, path] of [
    [{ volume, max: 0 }, 'body.max'],
    [{ volume, max: 1_000_001 }, 'body.max'],
    [{ volume, max: 2.5 }, 'body.max'],
    [{ volume, max: '10' }, 'body.max'],
    [{ volume: { name: 'v', size: -1 } }, 'body.volume.size'],
    [{ volume: { name: 'v', size: GiB, numberOfReplicas: 0 } }, 'body.volume.numberOfReplicas'],
    [{ volume, existingReplicas: [] }, 'body'],
    [{}, 'body.volume'],
  ] as const) {
    const res = await app.inject({ method: 'POST', url: '/replicas/headroom', payload: body });
    t.equal(res.statusCode, 400, JSON.stringify(body));
    t.equal(res.headers['content-type'], 'application/problem+json; charset=utf-8');
    t.ok((res.json().errors as Array<{ path: string }>).some((e) => e.path.startsWith(path)), `names ${path}: ${res.body}`);
  }
  t.same(await snapshot(app), before);
});

// The walk (src/replicas/headroom.ts) against the reference, the scheduler deciding each volume on a copy, on
// generated clusters: many zones or one, identical nodes (the balance selection's ties), over-provisioning beyond
// the usable space (degenerate scores), tags, hard and soft tiers, one replica (the closed form) to five.
/** A generated cluster, settings and volume for the walk's tests (seed 1000 + n). */
function walkCase(seed: number) {
  const rand = prng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
  const identical = rand() < 0.25;
  const zones = pick([1, 2, 3, 5, 40]);
  const nodeCount = 1 + Math.floor(rand() * 12);
  const nodes: NodeView[] = [];
  for (let n = 0; n < nodeCount; n++) {
    const name = `n${String(n).padStart(2, '0')}`;
    const disks: DiskView[] = [];
    const diskCount = identical ? 2 : 1 + Math.floor(rand() * 4);
    for (let d = 0; d < diskCount; d++) {
      const max = (identical ? 100 : pick([20, 50, 100, 200])) * GiB;
      disks.push({
        id: `${name}/d${d}`, node: name, name: `d${d}`, path: `/mnt/d${d}`, type: rand() < 0.95 ? 'filesystem' : 'block',
        tags: identical ? [] : ['ssd', 'fast'].filter(() => rand() < 0.3), allowScheduling: rand() < 0.95, evictionRequested: false,
        storageMaximum: max, storageAvailable: identical ? max : Math.floor(max * (0.3 + 0.7 * rand())),
        storageReserved: identical ? 0 : Math.floor(max * 0.2 * rand()), storageScheduled: identical ? 0 : Math.floor(max * 0.3 * rand()),
      });
    }
    nodes.push({
      name, zone: `z${Math.floor(rand() * zones)}`, region: '', tags: identical ? [] : ['storage'].filter(() => rand() < 0.5),
      cordoned: false, ready: rand() < 0.95, allowScheduling: true, evictionRequested: false, reportedAt: 0, disks,
    });
  }
  const settings: ReplicaSettings = {
    ...defaultSettings(),
    'replica-soft-anti-affinity': rand() < 0.5,
    'replica-zone-soft-anti-affinity': rand() < 0.7,
    'replica-disk-soft-anti-affinity': rand() < 0.7,
    'storage-minimal-available-percentage': pick([0, 10, 25]),
    'storage-over-provisioning-percentage': pick([100, 150, 300, 1000]),
    'allow-empty-node-selector-volume': rand() < 0.8,
    'allow-empty-disk-selector-volume': rand() < 0.8,
  };
  const volume: VolumeSpec = {
    name: 'v', size: pick([1, 3, 7, 20]) * GiB + (rand() < 0.3 ? 12345 : 0), actualSize: 0,
    numberOfReplicas: 1 + Math.floor(rand() * 5), nodeSelector: rand() < 0.2 ? ['storage'] : [],
    diskSelector: rand() < 0.2 ? ['ssd'] : [], dataEngine: 'v1',
    replicaSoftAntiAffinity: 'ignored', replicaZoneSoftAntiAffinity: 'ignored',
    replicaDiskSoftAntiAffinity: pick(['ignored', 'ignored', 'enabled', 'disabled'] as const), replicaAutoBalance: '',
  };
  const input = { nodes, settings, volume, max: pick([5, 50, 2000]), now: 0, staleAfterSeconds: 0 };
  return { input, nodeCount, zones };
}

t.test('the incremental walk counts what the scheduler decides volume after volume', async (t) => {
  let walked = 0;
  let ranOut = 0;
  for (let seed = 1; seed <= 300; seed++) {
    const { input, nodeCount, zones } = walkCase(1000 + seed);
    const { nodes, volume } = input;
    const before = JSON.stringify(nodes);
    const walkPlaced: string[][] = [];
    const fast = incrementalHeadroom({ ...input, placed: (disks) => walkPlaced.push([...disks]) });
    t.ok(fast, `seed ${seed}: the walk applies`);
    const referencePlaced: string[][] = [];
    const reference = sequentialHeadroom({ ...input, placed: (disks) => referencePlaced.push([...disks]) });
    const what = `seed ${seed}: ${nodeCount} nodes in ${zones} zone(s), ${volume.numberOfReplicas} replica(s)`;
    t.same(fast, reference, what);
    // One replica per volume is counted in closed form, without placing them one by one.
    if (volume.numberOfReplicas > 1) t.same(walkPlaced, referencePlaced, `${what}: the same disks, volume after volume`);
    else t.equal(walkPlaced.length, 0, `${what}: counted in closed form`);
    t.equal(JSON.stringify(nodes), before, `seed ${seed}: the nodes are not changed`);
    walked++;
    if (fast && !fast.truncated) ranOut++;
  }
  t.ok(ranOut > walked / 3, `clusters that ran out before max: ${ranOut} of ${walked}`);
});

t.test('a count with room for max volumes however they are placed needs no walk, and is the scheduler\'s', async (t) => {
  let bounded = 0;
  let compared = 0;
  let surePositive = 0;
  for (let seed = 1; seed <= 300; seed++) {
    const { input } = walkCase(1000 + seed);
    if (input.volume.numberOfReplicas < 2) continue;
    // Without `placed`, the bound may answer; the reference decides every volume.
    for (const max of [1, 5, 50]) {
      const reference = sequentialHeadroom({ ...input, max });
      t.same(incrementalHeadroom({ ...input, max }), reference, `seed ${seed}, max ${max}`);
      compared++;
    }
    // The bound never claims more than the scheduler places.
    const sure = surelyPlaced(input);
    if (sure > 0) {
      const all = sequentialHeadroom({ ...input, max: 100_000 });
      t.ok(sure <= all.fits, `seed ${seed}: ${sure} surely placed of ${all.fits}`);
      surePositive++;
    }
  }
  // Fleets where the bound answers: large disks, small volumes, hard anti-affinity of each kind.
  const disk = (node: string, d: number, gib: number): DiskView => ({
    id: `${node}/d${d}`, node, name: `d${d}`, path: `/mnt/d${d}`, type: 'filesystem', tags: [], allowScheduling: true,
    evictionRequested: false, storageMaximum: gib * GiB, storageAvailable: gib * GiB, storageReserved: 0, storageScheduled: 0,
  });
  const nodes: NodeView[] = Array.from({ length: 6 }, (_, n) => ({
    name: `n${n}`, zone: `z${n % 3}`, region: '', tags: [], cordoned: false, ready: true, allowScheduling: true,
    evictionRequested: false, reportedAt: 0, disks: [disk(`n${n}`, 0, 100 + 10 * n), disk(`n${n}`, 1, 50)],
  }));
  const base = { ...defaultSettings(), 'storage-over-provisioning-percentage': 100, 'storage-minimal-available-percentage': 0 };
  const hard: Array<[string, ReplicaSettings]> = [
    ['zone', { ...base, 'replica-zone-soft-anti-affinity': false }],
    ['node', { ...base, 'replica-zone-soft-anti-affinity': true, 'replica-soft-anti-affinity': false }],
    ['disk', { ...base, 'replica-zone-soft-anti-affinity': true, 'replica-soft-anti-affinity': true, 'replica-disk-soft-anti-affinity': false }],
  ];
  for (const [unit, settings] of hard) {
    const volume: VolumeSpec = {
      name: 'v', size: GiB, actualSize: 0, numberOfReplicas: 3, nodeSelector: [], diskSelector: [], dataEngine: 'v1',
      replicaSoftAntiAffinity: 'ignored', replicaZoneSoftAntiAffinity: 'ignored', replicaDiskSoftAntiAffinity: 'ignored', replicaAutoBalance: '',
    };
    const input = { nodes, settings, volume, now: 0, staleAfterSeconds: 0 };
    // 1,050 slots of 1 GiB, per unit: zones 330, 350, 370 (two nodes each); nodes 150 … 200; disks 50 and 100 … 150.
    // All but the two largest units' slots, over 3 replicas.
    t.equal(surelyPlaced({ ...input, max: 100 }), { zone: 110, node: 220, disk: 253 }[unit], `${unit}: the bound`);
    // The walk places from the first volume on; the bound answers without telling any placement.
    const told: string[][] = [];
    const counted = incrementalHeadroom({ ...input, max: 100, placed: (d) => told.push([...d]) });
    t.equal(told.length, 100, `${unit}: the walk tells its placements`);
    t.same(incrementalHeadroom({ ...input, max: 100 }), counted, `${unit}: the bound answers as the walk`);
    t.same(counted, sequentialHeadroom({ ...input, max: 100 }), `${unit}: and as the scheduler`);
    // All the slots: zone hard, 3 zones each of 2 nodes × (100..150 + 50) GiB → 1 GiB replicas, no zone spare.
    const all = sequentialHeadroom({ ...input, max: 100_000 });
    t.same(replicaHeadroom({ ...input, max: 100_000 }), all, `${unit}: run out, as the scheduler (${all.fits} volumes)`);
    t.same(replicaHeadroom({ ...input, max: all.fits }), { fits: all.fits, truncated: true, limit: null }, `${unit}: max at the exact count`);
    bounded++;
  }
  t.ok(compared > 300 && bounded === 3, `${compared} generated counts compared`);
  t.ok(surePositive > 20, `generated fleets with a bound: ${surePositive}`);
});

t.test('best-effort auto-balance with a disk under pressure is left to the reference', async (t) => {
  const disk: DiskView = {
    id: 'a/d', node: 'a', name: 'd', path: '/d', type: 'filesystem', tags: [], allowScheduling: true, evictionRequested: false,
    storageMaximum: 100 * GiB, storageAvailable: 10 * GiB, storageReserved: 0, storageScheduled: 0,
  };
  const nodes: NodeView[] = [{ name: 'a', zone: '', region: '', tags: [], cordoned: false, ready: true, allowScheduling: true, evictionRequested: false, reportedAt: 0, disks: [disk] }];
  const settings: ReplicaSettings = { ...defaultSettings(), 'replica-auto-balance': 'best-effort', 'replica-auto-balance-disk-pressure-percentage': 80 };
  const volume: VolumeSpec = {
    name: 'v', size: GiB, actualSize: 0, numberOfReplicas: 2, nodeSelector: [], diskSelector: [], dataEngine: 'v1',
    replicaSoftAntiAffinity: 'ignored', replicaZoneSoftAntiAffinity: 'ignored', replicaDiskSoftAntiAffinity: 'ignored', replicaAutoBalance: '',
  };
  const input = { nodes, settings, volume, max: 100, now: 0, staleAfterSeconds: 0 };
  t.equal(incrementalHeadroom(input), null);
  t.same(replicaHeadroom(input), sequentialHeadroom(input));
});

// The walk's fast path (the NN tier's node stage read off per-zone heaps) against the reference on larger clusters
// run to the end: totals in a narrow band (the largest minus the size falls below the least, ties at the top), nodes
// and disks filling up and leaving the set, zones hard and soft, node and disk anti-affinity, tags and selectors,
// auto-balance, stale nodes and the space percentages.
t.test('the walk\'s fast path decides as the scheduler on larger clusters run out', async (t) => {
  let applied = 0;
  for (let seed = 1; seed <= 80; seed++) {
    const rand = prng(5000 + seed);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
    // A band: every node's total within a few sizes of the others' (whole sizes apart now and then: ties). Tight:
    // little usable space under a high provisioned limit (totals below the size, degenerate scores). Steps: free
    // space in a few whole sizes (ties between nodes and between a node's disks).
    const kind = pick(['spread', 'band', 'tight', 'steps'] as const);
    const band = kind === 'band';
    const zones = pick([1, 2, 3, 4, 10]);
    const nodeCount = 8 + Math.floor(rand() * 40);
    const size = pick([5, 10, 20]) * GiB + (rand() < 0.3 ? 777 : 0);
    const nodes: NodeView[] = [];
    for (let n = 0; n < nodeCount; n++) {
      const name = `n${String(n).padStart(2, '0')}`;
      const disks: DiskView[] = [];
      const diskCount = band ? 2 : 1 + Math.floor(rand() * 4);
      for (let d = 0; d < diskCount; d++) {
        const max = (band ? 200 : kind === 'steps' ? 400 : pick([50, 100, 200, 400])) * GiB;
        const free = band ? max - Math.floor(rand() * 3 * size) - (rand() < 0.3 ? 0 : Math.floor(rand() * GiB))
          : kind === 'tight' ? Math.floor(rand() * 3 * size) + 1 : kind === 'steps' ? pick([2, 8, 10]) * size
          : Math.floor(max * (0.3 + 0.7 * rand()));
        disks.push({
          id: `${name}/d${d}`, node: name, name: `d${d}`, path: `/mnt/d${d}`, type: 'filesystem',
          tags: ['ssd'].filter(() => rand() < 0.8), allowScheduling: rand() < 0.97, evictionRequested: false,
          storageMaximum: max, storageAvailable: free, storageReserved: kind === 'spread' ? Math.floor(max * 0.1 * rand()) : 0,
          storageScheduled: kind === 'spread' || kind === 'tight' ? Math.floor(max * 0.3 * rand()) : 0,
        });
      }
      nodes.push({
        name, zone: `z${n % zones}`, region: '', tags: ['storage'].filter(() => rand() < 0.8), cordoned: rand() < 0.05,
        ready: true, allowScheduling: true, evictionRequested: false, reportedAt: rand() < 0.1 ? 0 : 50_000, disks,
      });
    }
    const settings: ReplicaSettings = {
      ...defaultSettings(),
      'replica-soft-anti-affinity': rand() < 0.3,
      'replica-zone-soft-anti-affinity': rand() < 0.7,
      'replica-disk-soft-anti-affinity': rand() < 0.7,
      'storage-minimal-available-percentage': kind === 'tight' ? 0 : pick([0, 10, 25]),
      'storage-over-provisioning-percentage': kind === 'tight' ? pick([100, 300]) : pick([100, 100, 150, 300]),
      'replica-auto-balance': pick(['disabled', 'least-effort', 'best-effort'] as const),
      'replica-auto-balance-disk-pressure-percentage': pick([0, 90]),
    };
    const volume: VolumeSpec = {
      name: 'v', size, actualSize: 0, numberOfReplicas: pick([2, 3, 3, 4]), nodeSelector: rand() < 0.3 ? ['storage'] : [],
      diskSelector: rand() < 0.3 ? ['ssd'] : [], dataEngine: 'v1',
      replicaSoftAntiAffinity: 'ignored', replicaZoneSoftAntiAffinity: pick(['ignored', 'ignored', 'enabled', 'disabled'] as const),
      replicaDiskSoftAntiAffinity: pick(['ignored', 'enabled', 'disabled'] as const), replicaAutoBalance: '',
    };
    const input = { nodes, settings, volume, max: 5000, now: 100_000, staleAfterSeconds: 60 };
    const walkPlaced: string[][] = [];
    const fast = incrementalHeadroom({ ...input, placed: (disks) => walkPlaced.push([...disks]) });
    const referencePlaced: string[][] = [];
    const reference = sequentialHeadroom({ ...input, placed: (disks) => referencePlaced.push([...disks]) });
    const what = `seed ${seed}: ${nodeCount} nodes in ${zones} zone(s), ${kind}, ${volume.numberOfReplicas} replicas`;
    if (fast === null) {
      t.same(replicaHeadroom(input), reference, `${what}: left to the reference`);
      continue;
    }
    applied++;
    t.same(fast, reference, what);
    t.same(walkPlaced, referencePlaced, `${what}: the same disks, volume after volume`);
    t.notOk(reference.truncated, `${what}: runs out`);
  }
  t.ok(applied > 60, `the walk applies on ${applied} of 80`);
});
