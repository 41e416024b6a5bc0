// The replica dialect's vocabulary: node and disk reports (Longhorn's node CR, flattened), volumes, replicas.

export type DiskType = 'filesystem' | 'block';
export type DataEngine = 'v1' | 'v2';
export type SoftOverride = 'ignored' | 'enabled' | 'disabled';

/** A disk as reported in PUT /nodes/{name}. Bytes are safe non-negative integers. */
export interface DiskReport {
  path: string;
  type: DiskType;
  tags: string[];
  allowScheduling: boolean;
  evictionRequested: boolean;
  storageMaximum: number;
  storageAvailable: number;
  storageReserved: number;
  /** Space scheduled outside Berth; Berth adds its own replicas to it. */
  storageScheduled: number;
}

export interface NodeReport {
  zone: string;
  region: string;
  tags: string[];
  cordoned: boolean;
  ready: boolean;
  allowScheduling: boolean;
  evictionRequested: boolean;
  disks: Record<string, DiskReport>;
}

/** A disk as the scheduler sees it: the report plus Berth's own scheduled bytes folded into storageScheduled. */
export interface DiskView {
  /** "<node>/<disk>": node names cannot contain "/", so this is unique (Longhorn uses the disk UUID). */
  readonly id: string;
  readonly node: string;
  readonly name: string;
  readonly path: string;
  readonly type: DiskType;
  readonly tags: readonly string[];
  readonly allowScheduling: boolean;
  readonly evictionRequested: boolean;
  readonly storageMaximum: number;
  readonly storageAvailable: number;
  readonly storageReserved: number;
  /** Reported + Berth's replicas on this disk. */
  readonly storageScheduled: number;
}

export interface NodeView {
  readonly name: string;
  readonly zone: string;
  readonly region: string;
  readonly tags: readonly string[];
  readonly cordoned: boolean;
  readonly ready: boolean;
  readonly allowScheduling: boolean;
  readonly evictionRequested: boolean;
  /** Milliseconds since the epoch of the last PUT. */
  readonly reportedAt: number;
  /** Sorted by disk name. */
  readonly disks: readonly DiskView[];
}

export interface VolumeSpec {
  name: string;
  /** Bytes (Longhorn's spec.size). */
  size: number;
  /** Bytes actually written (Longhorn's status.actualSize); 0 for a new volume. */
  actualSize: number;
  numberOfReplicas: number;
  nodeSelector: string[];
  diskSelector: string[];
  dataEngine: DataEngine;
  replicaSoftAntiAffinity: SoftOverride;
  replicaZoneSoftAntiAffinity: SoftOverride;
  replicaDiskSoftAntiAffinity: SoftOverride;
  /** Overrides replica-auto-balance unless `ignored`. */
  replicaAutoBalance: 'ignored' | 'disabled' | 'least-effort' | 'best-effort';
}

/**
 * A replica of the volume that takes part in the decision: existing ones from the request, the ones Berth placed
 * earlier (both already inside the disks' storageScheduled) and the ones placed earlier in the same pass
 * (`inStatus: false`, added to their disk for the space check only, like Longhorn's in-cycle accounting).
 */
export interface ReplicaRef {
  node: string;
  disk: string;
  failed: boolean;
  evictionRequested: boolean;
  size: number;
  inStatus: boolean;
}

/** A replica Berth placed (hard state, persisted). */
/** Where a replica would go: a dry run's answer, which claims nothing and so names nothing. */
export type ProposedReplica = Omit<ReplicaRecord, 'name' | 'createdAt' | 'createdBy'>;

export interface ReplicaRecord {
  name: string;
  volume: string;
  node: string;
  disk: string;
  diskPath: string;
  size: number;
  createdAt: string;
  /** Who claimed it: the token name or JWT subject; null without authentication (or placed before it existed). */
  createdBy: string | null;
}

export const diskId = (node: string, disk: string): string => `${node}/${disk}`;
