// Builders for the pure tests: node and disk views with sensible defaults, volumes, settings.
import { diskId, type DiskView, type NodeView, type ReplicaRef, type VolumeSpec } from '../../src/replicas/model.ts';
import { scheduleVolume, type ScheduleInput } from '../../src/replicas/scheduler.ts';
import { defaultSettings, type ReplicaSettings } from '../../src/replicas/settings.ts';

export const GiB = 1024 ** 3;

export type DiskSpec = Partial<Omit<DiskView, 'id' | 'node' | 'name'>>;

export function disk(node: string, name: string, spec: DiskSpec = {}): DiskView {
  return {
    id: diskId(node, name), node, name,
    path: `/var/lib/longhorn/${name}`, type: 'filesystem', tags: [], allowScheduling: true, evictionRequested: false,
    storageMaximum: 100 * GiB, storageAvailable: 100 * GiB, storageReserved: 0, storageScheduled: 0,
    ...spec,
  };
}

/** A disk as the property tests generate it: its available space as a share (%) of its maximum. */
export interface GeneratedDisk {
  type: 'filesystem' | 'block';
  tags: string[];
  allowScheduling: boolean;
  evictionRequested: boolean;
  storageMaximum: number;
  availableShare: number;
  storageReserved: number;
  storageScheduled: number;
}

/** The disks of node `node` (d0, d1, …) from generated ones. */
export function generatedDisks(node: string, disks: readonly GeneratedDisk[]): DiskView[] {
  return disks.map((d, k) => disk(node, `d${k}`, {
    type: d.type, tags: d.tags, allowScheduling: d.allowScheduling, evictionRequested: d.evictionRequested,
    storageMaximum: d.storageMaximum, storageAvailable: Math.floor((d.storageMaximum * d.availableShare) / 100),
    storageReserved: d.storageReserved, storageScheduled: d.storageScheduled,
  }));
}

export function node(name: string, spec: Partial<Omit<NodeView, 'name' | 'disks'>> = {}, disks: Record<string, DiskSpec> = { d1: {} }): NodeView {
  return {
    name, zone: '', region: '', tags: [], cordoned: false, ready: true, allowScheduling: true, evictionRequested: false,
    reportedAt: 0,
    ...spec,
    disks: Object.keys(disks).sort().map((d) => disk(name, d, disks[d])),
  };
}

export function volume(spec: Partial<VolumeSpec> = {}): VolumeSpec {
  return {
    name: 'vol', size: 10 * GiB, actualSize: 0, numberOfReplicas: 1, nodeSelector: [], diskSelector: [], dataEngine: 'v1',
    replicaSoftAntiAffinity: 'ignored', replicaZoneSoftAntiAffinity: 'ignored', replicaDiskSoftAntiAffinity: 'ignored',
    replicaAutoBalance: 'ignored',
    ...spec,
  };
}

export function existing(nodeName: string, diskName: string, spec: Partial<ReplicaRef> = {}): ReplicaRef {
  return { node: nodeName, disk: diskName, failed: false, evictionRequested: false, size: 10 * GiB, inStatus: true, ...spec };
}

export function settings(changes: Partial<ReplicaSettings> = {}): ReplicaSettings {
  return { ...defaultSettings(), ...changes };
}

export function schedule(input: Partial<ScheduleInput> & { nodes: NodeView[] }) {
  return scheduleVolume({
    settings: settings(), volume: volume(), replicas: [], now: 0, staleAfterSeconds: 0, explain: true,
    ...input,
    nodes: input.nodes.slice().sort((a, b) => (a.name < b.name ? -1 : 1)),
  });
}

/** "node/disk" of each placement. */
export const placed = (r: ReturnType<typeof schedule>) => r.placements.map((p) => p.disk.id);
