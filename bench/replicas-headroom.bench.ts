// POST /replicas/headroom at scale: 1,000 nodes × 4 disks and 2,500 nodes × 4 disks (10,000 disks) in 10 zones,
// "how many more of these volumes fit?" for three replicas under Longhorn's defaults (zone soft, node hard), hard
// zone anti-affinity, large volumes that run the cluster out, and one replica (the closed form per disk); with room
// for max volumes however they are placed, the count needs no walk (the rows that run out walk every volume). The walk
// (src/replicas/headroom.ts) against the reference that decides each volume with the scheduler, measured per volume
// at a small max because it costs one full decision per volume counted.
import { sequentialHeadroom, replicaHeadroom, type HeadroomInput } from '../src/replicas/headroom.ts';
import type { DiskView, NodeView, VolumeSpec } from '../src/replicas/model.ts';
import { defaultSettings } from '../src/replicas/settings.ts';
import { mulberry32 } from '../test/random.ts';
import { timeHeadroom } from './stats.ts';

const GiB = 1024 ** 3;
const ZONES = 10;

function cluster(nodeCount: number): NodeView[] {
  const rand = mulberry32(42);
  const sizes = [512, 1024, 2048, 4096].map((g) => g * GiB);
  return Array.from({ length: nodeCount }, (_, n): NodeView => {
    const name = `node-${String(n).padStart(4, '0')}`;
    const disks = Array.from({ length: 4 }, (_, k): DiskView => {
      const max = sizes[Math.floor(rand() * sizes.length)]!;
      return {
        id: `${name}/disk-${k}`, node: name, name: `disk-${k}`, path: `/mnt/disk${k}`, type: 'filesystem', tags: [],
        allowScheduling: true, evictionRequested: false, storageMaximum: max, storageAvailable: Math.floor(max * (0.55 + 0.45 * rand())),
        storageReserved: Math.floor(max * 0.1 * rand()), storageScheduled: Math.floor(max * 0.2 * rand()),
      };
    });
    return { name, zone: `zone-${n % ZONES}`, region: '', tags: [], cordoned: false, ready: true, allowScheduling: true, evictionRequested: false, reportedAt: 0, disks };
  });
}

const volume = (size: number, numberOfReplicas: number): VolumeSpec => ({
  name: 'template', size, actualSize: 0, numberOfReplicas, nodeSelector: [], diskSelector: [], dataEngine: 'v1',
  replicaSoftAntiAffinity: 'ignored', replicaZoneSoftAntiAffinity: 'ignored', replicaDiskSoftAntiAffinity: 'ignored', replicaAutoBalance: '',
});

export async function run(): Promise<void> {
  for (const nodeCount of [1000, 2500]) {
    const nodes = cluster(nodeCount);
    const defaults = defaultSettings();
    const input = (v: VolumeSpec, max: number, settings = defaults): HeadroomInput => ({ nodes, settings, volume: v, max, now: 0, staleAfterSeconds: 0 });
    const zoneHard = { ...defaults, 'replica-zone-soft-anti-affinity': false };
    const scale = `${nodeCount} nodes × 4 disks`;
    timeHeadroom(`${scale}, 3 × 10 GiB, max 100,000 (room for all however placed: no walk)`, 20, () => replicaHeadroom(input(volume(10 * GiB, 3), 100_000)));
    timeHeadroom(`${scale}, walk, 3 × 200 GiB, runs out`, 10, () => replicaHeadroom(input(volume(200 * GiB, 3), 100_000)));
    timeHeadroom(`${scale}, walk, 3 × 200 GiB, zone anti-affinity hard`, 10, () => replicaHeadroom(input(volume(200 * GiB, 3), 100_000, zoneHard)));
    timeHeadroom(`${scale}, closed form, 1 × 50 GiB, max 1,000,000`, 20, () => replicaHeadroom(input(volume(50 * GiB, 1), 1_000_000)));
    timeHeadroom(`${scale}, walk, 3 × 10 GiB, max 1,000`, 20, () => replicaHeadroom(input(volume(10 * GiB, 3), 1_000)));
    timeHeadroom(`${scale}, reference (scheduler per volume), 3 × 10 GiB, max 100`, 5, () => sequentialHeadroom(input(volume(10 * GiB, 3), 100)));
  }
}
