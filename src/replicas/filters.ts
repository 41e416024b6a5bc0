// The named checks of Longhorn's replica scheduler as pipeline filters, each with its stable rejection code and
// the Longhorn reason key it contributes to a scheduling failure (reference/longhorn.md §3, §5).
// Pure: the clock and settings come in through the request object.
import type { Filter, Rejection } from '../pipeline/types.ts';
import type { DiskView, NodeView, VolumeSpec } from './model.ts';
import type { ReplicaSettings } from './settings.ts';
import { checkDiskSpace, describeSpaceCheck, selectorsInTags, spaceFailure } from './space.ts';

/** Longhorn's failure reason keys (ErrorReplicaSchedule*), the words a user sees in the volume condition. */
export const REASON = {
  insufficientStorage: 'insufficient storage',
  disksUnavailable: 'disks are unavailable',
  tagsNotFulfilled: 'tags not fulfilled',
  nodesUnavailable: 'nodes are unavailable',
  schedulingFailed: 'replica scheduling failed',
} as const;

/** A filter that also names the Longhorn reason key its rejections add to a failure (null: silently dropped). */
export interface ReplicaFilter<C, R> extends Filter<C, R> {
  readonly reason: string | null;
}

/** Messages are built only when read (explain, logs): a full cluster rejects thousands of disks per decision. */
function rejection(code: string, message: () => string): Rejection {
  return {
    code,
    get message() {
      return message();
    },
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Schedulable nodes (ListSchedulableNodes). Longhorn drops these nodes without a reason of their own; when none is
// left the replica fails with "nodes are unavailable".

export interface NodeFilterRequest {
  settings: ReplicaSettings;
  /** Milliseconds since the epoch. */
  now: number;
  /** 0 trusts reports forever. */
  staleAfterSeconds: number;
}

export const nodeReportAgeSeconds = (node: NodeView, now: number): number => Math.max(0, (now - node.reportedAt) / 1000);

/** Berth's own check (reliability issue): a node whose last report is too old is not trusted. */
export const NodeReportFresh: ReplicaFilter<NodeView, NodeFilterRequest> = {
  name: 'NodeReportFresh',
  reason: null,
  check(node, r) {
    if (r.staleAfterSeconds <= 0) return null;
    const age = nodeReportAgeSeconds(node, r.now);
    if (!(age > r.staleAfterSeconds)) return null;
    return rejection('node_stats_stale', () =>
      `node ${node.name} last reported ${age.toFixed(3)} s ago, more than stats_stale_after_seconds = ${r.staleAfterSeconds}`);
  },
};

export const NodeReady: ReplicaFilter<NodeView, NodeFilterRequest> = {
  name: 'NodeReady',
  reason: null,
  check: (node) => (node.ready ? null : rejection('node_not_ready', () => `node ${node.name} is not ready (condition Ready = False)`)),
};

export const NodeNotCordoned: ReplicaFilter<NodeView, NodeFilterRequest> = {
  name: 'NodeNotCordoned',
  reason: null,
  check: (node, r) =>
    node.cordoned && r.settings['disable-scheduling-on-cordoned-node']
      ? rejection('node_cordoned', () =>
        `node ${node.name} is cordoned and disable-scheduling-on-cordoned-node is true (condition Schedulable = False, reason KubernetesNodeCordoned)`)
      : null,
};

export const NodeSchedulingAllowed: ReplicaFilter<NodeView, NodeFilterRequest> = {
  name: 'NodeSchedulingAllowed',
  reason: null,
  check: (node) =>
    node.allowScheduling ? null : rejection('node_scheduling_disabled', () => `node ${node.name} has allowScheduling = false`),
};

/** Longhorn's webhook forbids evictionRequested with allowScheduling; Berth accepts the report and never targets it. */
export const NodeNotEvicting: ReplicaFilter<NodeView, NodeFilterRequest> = {
  name: 'NodeNotEvicting',
  reason: null,
  check: (node) =>
    node.evictionRequested ? rejection('node_eviction_requested', () => `node ${node.name} has evictionRequested = true`) : null,
};

export const NODE_FILTERS = [NodeReportFresh, NodeReady, NodeNotCordoned, NodeSchedulingAllowed, NodeNotEvicting] as const;

/** The node tag filter of the tier lists (not applied to the "used nodes" tier, as in Longhorn). */
export interface NodeTagRequest {
  nodeSelector: readonly string[];
  allowEmpty: boolean;
}
export const NodeTags: ReplicaFilter<NodeView, NodeTagRequest> = {
  name: 'NodeTags',
  reason: null,
  check: (node, r) =>
    selectorsInTags(node.tags, r.nodeSelector, r.allowEmpty)
      ? null
      : rejection('node_tags_not_fulfilled', () =>
        r.nodeSelector.length === 0
          ? `node ${node.name} has tags ${JSON.stringify(node.tags)} and allow-empty-node-selector-volume is false`
          : `node ${node.name} tags ${JSON.stringify(node.tags)} do not match volume node selector ${JSON.stringify(r.nodeSelector)}`),
};

// ---------------------------------------------------------------------------------------------------------------
// Disk pre-filter (FindDiskCandidates): spec allows scheduling, no eviction, condition Schedulable = True.
// Disks dropped here are silent in Longhorn; a node left with none gives "disks are unavailable" in its tier.

export interface DiskPrefilterRequest {
  settings: ReplicaSettings;
}

export const DiskSchedulingAllowed: ReplicaFilter<DiskView, DiskPrefilterRequest> = {
  name: 'DiskSchedulingAllowed',
  reason: null,
  check: (d) =>
    d.allowScheduling ? null : rejection('disk_scheduling_disabled', () => `disk ${d.name} on node ${d.node} has allowScheduling = false`),
};

export const DiskNotEvicting: ReplicaFilter<DiskView, DiskPrefilterRequest> = {
  name: 'DiskNotEvicting',
  reason: null,
  check: (d) =>
    d.evictionRequested ? rejection('disk_eviction_requested', () => `disk ${d.name} on node ${d.node} has evictionRequested = true`) : null,
};

/** The disk's Schedulable condition: IsSchedulableToDisk(0, 0) (the node is ready, or it would not be here). */
export const DiskSchedulableCondition: ReplicaFilter<DiskView, DiskPrefilterRequest> = {
  name: 'DiskSchedulableCondition',
  reason: null,
  check(d, r) {
    const minPct = r.settings['storage-minimal-available-percentage'];
    const opPct = r.settings['storage-over-provisioning-percentage'];
    if (spaceFailure(d, 0, 0, 0, minPct, opPct) === null) return null;
    return rejection('disk_pressure', () =>
      `disk ${d.name} on node ${d.node} is not schedulable (condition Schedulable = False, reason DiskPressure): ` +
      describeSpaceCheck(checkDiskSpace(d, 0, 0, minPct, opPct), d, minPct));
  },
};

export const DISK_PREFILTERS = [DiskSchedulingAllowed, DiskNotEvicting, DiskSchedulableCondition] as const;

// ---------------------------------------------------------------------------------------------------------------
// Disk checks within a tier (filterNodeDisksForReplica / IsDiskEligibleForVolume), in Longhorn's order.

export interface DiskCheckRequest {
  settings: ReplicaSettings;
  volume: VolumeSpec;
  /** Bytes of same-volume replicas placed earlier in this pass, per disk id (in-cycle accounting, v1.11.1+). */
  inPass: ReadonlyMap<string, number>;
}

export const DiskTypeMatchesEngine: ReplicaFilter<DiskView, DiskCheckRequest> = {
  name: 'DiskTypeMatchesEngine',
  reason: REASON.disksUnavailable,
  check(d, r) {
    const want = r.volume.dataEngine === 'v2' ? 'block' : 'filesystem';
    return d.type === want
      ? null
      : rejection('disk_type_mismatch', () =>
        `disk ${d.name} on node ${d.node} is a ${d.type} disk; data engine ${r.volume.dataEngine} needs ${want}`);
  },
};

export const DiskTags: ReplicaFilter<DiskView, DiskCheckRequest> = {
  name: 'DiskTags',
  reason: REASON.tagsNotFulfilled,
  check: (d, r) =>
    selectorsInTags(d.tags, r.volume.diskSelector, r.settings['allow-empty-disk-selector-volume'])
      ? null
      : rejection('disk_tags_not_fulfilled', () =>
        `disk ${d.name} on node ${d.node}: disk tags ${JSON.stringify(d.tags)} do not match volume disk selector ${JSON.stringify(r.volume.diskSelector)}` +
        (r.volume.diskSelector.length === 0 ? ' (allow-empty-disk-selector-volume is false)' : '')),
};

export const DiskSpaceForReplica: ReplicaFilter<DiskView, DiskCheckRequest> = {
  name: 'DiskSpaceForReplica',
  reason: REASON.insufficientStorage,
  check(d, r) {
    const added = r.inPass.get(d.id) ?? 0;
    const minPct = r.settings['storage-minimal-available-percentage'];
    const opPct = r.settings['storage-over-provisioning-percentage'];
    if (spaceFailure(d, added, r.volume.size, r.volume.actualSize, minPct, opPct) === null) return null;
    return rejection('insufficient_storage', () => {
      const space = { ...d, storageScheduled: d.storageScheduled + added };
      return `disk ${d.name} on node ${d.node} does not have enough storage available for replica of ${r.volume.name} with size ${r.volume.size}: ` +
        describeSpaceCheck(checkDiskSpace(space, r.volume.size, r.volume.actualSize, minPct, opPct), space, minPct) +
        (added > 0 ? ` (storageScheduled includes ${added} bytes placed earlier in this pass)` : '');
    });
  },
};

export const DISK_CHECKS = [DiskTypeMatchesEngine, DiskTags, DiskSpaceForReplica] as const;

/** Reason key per filter name, for the failure detail. */
export const REASON_BY_FILTER: ReadonlyMap<string, string | null> = new Map(
  [...NODE_FILTERS, NodeTags, ...DISK_PREFILTERS, ...DISK_CHECKS].map((f) => [f.name, f.reason] as [string, string | null]),
);
