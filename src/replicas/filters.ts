// The named checks of Longhorn's replica scheduler as engine filters (reference/longhorn.md §3, §5): node filters over
// the node list, the disk pre-filter and the disk checks over the disk table. Each rejects with a stable code and
// names the Longhorn reason key its rejections add to a scheduling failure (null: Longhorn drops them silently).
// Pure: the clock and settings come in through the request. Sentences are built only when read (explain, a miss).
import type { BoundFilter, Filter } from '../pipeline/pipeline.ts';
import { KEPT_ROWS, type DiskPrefilterRequest, type DiskRequest, type DiskTable, type NodeRequest, type NodeView } from './model.ts';
import { checkDiskSpace, describeSpaceCheck, selectorsInTags, spaceFailure, spaceFailureWithin } from './space.ts';

/** Longhorn's failure reason keys (ErrorReplicaSchedule*), the words a user sees in the volume condition. */
export const FAILURE_REASON = {
  insufficientStorage: 'insufficient storage',
  disksUnavailable: 'disks are unavailable',
  tagsNotFulfilled: 'tags not fulfilled',
  nodesUnavailable: 'nodes are unavailable',
  schedulingFailed: 'replica scheduling failed',
} as const;
type FailureReason = (typeof FAILURE_REASON)[keyof typeof FAILURE_REASON];

// Rejection codes: what clients, metrics and tests branch on — part of every answer's contract, so exported even where
// no module imports them (@public tells knip).
/** @public */
export const NODE_STATS_STALE = 'node_stats_stale';
/** @public */
export const NODE_NOT_READY = 'node_not_ready';
/** @public */
export const NODE_CORDONED = 'node_cordoned';
/** @public */
export const NODE_SCHEDULING_DISABLED = 'node_scheduling_disabled';
/** @public */
export const NODE_EVICTION_REQUESTED = 'node_eviction_requested';
/** @public */
export const NODE_TAGS_NOT_FULFILLED = 'node_tags_not_fulfilled';
/** @public */
export const DISK_SCHEDULING_DISABLED = 'disk_scheduling_disabled';
/** @public */
export const DISK_EVICTION_REQUESTED = 'disk_eviction_requested';
/** @public */
export const DISK_PRESSURE = 'disk_pressure';
/** @public */
export const DISK_TYPE_MISMATCH = 'disk_type_mismatch';
/** @public */
export const DISK_TAGS_NOT_FULFILLED = 'disk_tags_not_fulfilled';
/** @public */
export const INSUFFICIENT_STORAGE = 'insufficient_storage';
/** @public */
export const DISK_HOLDS_REPLICA = 'disk_holds_replica';

/** The codes of the verdict rows below (row value → code). */
const TYPE_CODES = ['', DISK_TYPE_MISMATCH];
const TAG_CODES = ['', DISK_TAGS_NOT_FULFILLED];
const SPACE_CODES = ['', INSUFFICIENT_STORAGE];

/** A filter that also names the Longhorn reason key its rejections add to a failure (null: silently dropped). */
interface ReplicaFilter<S extends { readonly length: number }, R> extends Filter<S, R> {
  readonly reasonKey: FailureReason | null;
}
type NodeFilter = ReplicaFilter<readonly NodeView[], NodeRequest>;
type DiskPrefilter = ReplicaFilter<DiskTable, DiskPrefilterRequest>;
type DiskFilter = ReplicaFilter<DiskTable, DiskRequest>;

/** A check and its sentence, bound to one request. */
function bound(check: (i: number) => string | null, reason: (i: number) => string): BoundFilter {
  return { check, reason };
}

// ---------------------------------------------------------------------------------------------------------------
// Schedulable nodes (ListSchedulableNodes). Longhorn drops these nodes without a reason of their own; when none is
// left the replica fails with "nodes are unavailable".

export const nodeReportAgeSeconds = (node: NodeView, now: number): number => Math.max(0, (now - node.reportedAt) / 1000);

/** Berth's own check (reliability issue): a node whose last report is too old is not trusted. */
const NodeReportFresh: NodeFilter = {
  name: 'NodeReportFresh',
  reasonKey: null,
  prepare(nodes, r) {
    const { now, staleAfterSeconds } = r;
    if (staleAfterSeconds <= 0) return null;
    return bound(
      (i) => (nodeReportAgeSeconds(nodes[i]!, now) > staleAfterSeconds ? NODE_STATS_STALE : null),
      (i) => `node ${nodes[i]!.name} last reported ${nodeReportAgeSeconds(nodes[i]!, now).toFixed(3)} s ago, ` +
        `more than stats_stale_after_seconds = ${staleAfterSeconds}`,
    );
  },
};

const NodeReady: NodeFilter = {
  name: 'NodeReady',
  reasonKey: null,
  prepare: (nodes) => bound(
    (i) => (nodes[i]!.ready ? null : NODE_NOT_READY),
    (i) => `node ${nodes[i]!.name} is not ready (condition Ready = False)`,
  ),
};

const NodeNotCordoned: NodeFilter = {
  name: 'NodeNotCordoned',
  reasonKey: null,
  prepare(nodes, r) {
    if (!r.settings['disable-scheduling-on-cordoned-node']) return null;
    return bound(
      (i) => (nodes[i]!.cordoned ? NODE_CORDONED : null),
      (i) => `node ${nodes[i]!.name} is cordoned and disable-scheduling-on-cordoned-node is true ` +
        '(condition Schedulable = False, reason KubernetesNodeCordoned)',
    );
  },
};

const NodeSchedulingAllowed: NodeFilter = {
  name: 'NodeSchedulingAllowed',
  reasonKey: null,
  prepare: (nodes) => bound(
    (i) => (nodes[i]!.allowScheduling ? null : NODE_SCHEDULING_DISABLED),
    (i) => `node ${nodes[i]!.name} has allowScheduling = false`,
  ),
};

/** Longhorn's webhook forbids evictionRequested with allowScheduling; Berth accepts the report and never targets it. */
const NodeNotEvicting: NodeFilter = {
  name: 'NodeNotEvicting',
  reasonKey: null,
  prepare: (nodes) => bound(
    (i) => (nodes[i]!.evictionRequested ? NODE_EVICTION_REQUESTED : null),
    (i) => `node ${nodes[i]!.name} has evictionRequested = true`,
  ),
};

/** The node tag filter of the tier lists (not applied to the "used nodes" tier, as in Longhorn). */
export const NodeTags: NodeFilter = {
  name: 'NodeTags',
  reasonKey: null,
  prepare(nodes, r) {
    const selector = r.nodeSelector;
    const allowEmpty = r.settings['allow-empty-node-selector-volume'];
    return bound(
      (i) => (selectorsInTags(nodes[i]!.tags, selector, allowEmpty) ? null : NODE_TAGS_NOT_FULFILLED),
      (i) => {
        const node = nodes[i]!;
        return selector.length === 0
          ? `node ${node.name} has tags ${JSON.stringify(node.tags)} and allow-empty-node-selector-volume is false`
          : `node ${node.name} tags ${JSON.stringify(node.tags)} do not match volume node selector ${JSON.stringify(selector)}`;
      },
    );
  },
};

// ---------------------------------------------------------------------------------------------------------------
// Disk pre-filter (FindDiskCandidates): spec allows scheduling, no eviction, condition Schedulable = True.
// Disks dropped here are silent in Longhorn; a node left with none gives "disks are unavailable" in its tier.

const DiskSchedulingAllowed: DiskPrefilter = {
  name: 'DiskSchedulingAllowed',
  reasonKey: null,
  prepare: ({ disks }) => bound(
    (i) => (disks[i]!.allowScheduling ? null : DISK_SCHEDULING_DISABLED),
    (i) => `disk ${disks[i]!.name} on node ${disks[i]!.node} has allowScheduling = false`,
  ),
};

const DiskNotEvicting: DiskPrefilter = {
  name: 'DiskNotEvicting',
  reasonKey: null,
  prepare: ({ disks }) => bound(
    (i) => (disks[i]!.evictionRequested ? DISK_EVICTION_REQUESTED : null),
    (i) => `disk ${disks[i]!.name} on node ${disks[i]!.node} has evictionRequested = true`,
  ),
};

/** The disk's Schedulable condition: IsSchedulableToDisk(0, 0) (the node is ready, or it would not be here). */
const DiskSchedulableCondition: DiskPrefilter = {
  name: 'DiskSchedulableCondition',
  reasonKey: null,
  prepare({ disks }, r) {
    const minPct = r.settings['storage-minimal-available-percentage'];
    const opPct = r.settings['storage-over-provisioning-percentage'];
    return bound(
      (i) => (spaceFailure(disks[i]!, 0, 0, 0, minPct, opPct) === null ? null : DISK_PRESSURE),
      (i) => {
        const d = disks[i]!;
        return `disk ${d.name} on node ${d.node} is not schedulable (condition Schedulable = False, reason DiskPressure): ` +
          describeSpaceCheck(checkDiskSpace(d, 0, 0, minPct, opPct), d, minPct);
      },
    );
  },
};

/**
 * The verdicts (0 passes, 1 rejects) of a check that reads only what a table keeps (a disk's type, tags) and what
 * `key` says of the request, computed once per table and key; null when it rejects no disk (nothing to check).
 */
function fixedRow(table: DiskTable, key: string, rejects: (i: number) => boolean): Uint8Array | null {
  let entry = table.rows.get(key);
  if (!entry) {
    const row = new Uint8Array(table.length);
    let any = false;
    for (let i = 0; i < row.length; i++) {
      if (!rejects(i)) continue;
      row[i] = 1;
      any = true;
    }
    if (table.rows.size >= KEPT_ROWS) table.rows.clear();
    table.rows.set(key, (entry = { row, rejects: any }));
  }
  return entry.rejects ? entry.row : null;
}

// ---------------------------------------------------------------------------------------------------------------
// Disk checks within a tier (filterNodeDisksForReplica / IsDiskEligibleForVolume), in Longhorn's order, then disk
// anti-affinity (filterDisksWithMatchingReplicas).

const DiskTypeMatchesEngine: DiskFilter = {
  name: 'DiskTypeMatchesEngine',
  reasonKey: FAILURE_REASON.disksUnavailable,
  prepare(table, r) {
    const { disks } = table;
    const engine = r.volume.dataEngine;
    const want = engine === 'v2' ? 'block' : 'filesystem';
    const row = fixedRow(table, `DiskTypeMatchesEngine ${want}`, (i) => disks[i]!.type !== want);
    if (!row) return null;
    return {
      row,
      codes: TYPE_CODES,
      reason: (i) => `disk ${disks[i]!.name} on node ${disks[i]!.node} is a ${disks[i]!.type} disk; data engine ${engine} needs ${want}`,
    };
  },
};

const DiskTags: DiskFilter = {
  name: 'DiskTags',
  reasonKey: FAILURE_REASON.tagsNotFulfilled,
  prepare(table, r) {
    const { disks } = table;
    const selector = r.volume.diskSelector;
    const allowEmpty = r.settings['allow-empty-disk-selector-volume'];
    const row = fixedRow(table, `DiskTags ${allowEmpty} ${JSON.stringify(selector)}`, (i) => !selectorsInTags(disks[i]!.tags, selector, allowEmpty));
    if (!row) return null;
    return {
      row,
      codes: TAG_CODES,
      reason: (i) => `disk ${disks[i]!.name} on node ${disks[i]!.node}: disk tags ${JSON.stringify(disks[i]!.tags)} ` +
        `do not match volume disk selector ${JSON.stringify(selector)}` +
        (selector.length === 0 ? ' (allow-empty-disk-selector-volume is false)' : ''),
    };
  },
};

const DiskSpaceForReplica: DiskFilter = {
  name: 'DiskSpaceForReplica',
  reasonKey: FAILURE_REASON.insufficientStorage,
  prepare(table, r) {
    const { disks, maximum, available, scheduled } = table;
    const { inPass, volume } = r;
    const { size, actualSize } = volume;
    const minPct = r.settings['storage-minimal-available-percentage'];
    const opPct = r.settings['storage-over-provisioning-percentage'];
    const { minimal, limit } = table.thresholds(minPct, opPct);
    const fails = (i: number, extra: number): number =>
      spaceFailureWithin(maximum[i]!, available[i]!, scheduled[i]!, extra, size, actualSize, minimal[i]!, limit[i]!) === null ? 0 : 1;
    // Status figures once per request (kept on it for its next replicas); a disk that took a replica earlier in the
    // pass is checked again with it.
    // Those of the table's kept row (moved on from the last request's), copied: the placed disks change in it.
    let row = r.space;
    if (!row) row = r.space = table.statusSpace(`${actualSize} ${minPct} ${opPct}`, size, limit, (i) => fails(i, 0)).slice();
    for (const i of r.placed) row[i] = fails(i, inPass[i]!);
    return {
      row,
      codes: SPACE_CODES,
      reason: (i) => {
        const d = disks[i]!;
        const added = inPass[i]!;
        const space = { ...d, storageScheduled: d.storageScheduled + added };
        return `disk ${d.name} on node ${d.node} does not have enough storage available for replica of ${volume.name} with size ${size}: ` +
          describeSpaceCheck(checkDiskSpace(space, size, actualSize, minPct, opPct), space, minPct) +
          (added > 0 ? ` (storageScheduled includes ${added} bytes placed earlier in this pass)` : '');
      },
    };
  },
};

/**
 * Hard disk anti-affinity: a disk holding a replica of the volume is no target. Under soft anti-affinity it stays
 * a candidate and the tiers prefer the free disks instead. Like Longhorn, it adds no reason key.
 */
export const DiskAntiAffinity: DiskFilter = {
  name: 'DiskAntiAffinity',
  reasonKey: null,
  prepare({ disks }, r) {
    if (r.diskSoft) return null;
    const { replicasOnDisk } = r;
    return bound(
      (i) => (replicasOnDisk[i]! > 0 ? DISK_HOLDS_REPLICA : null),
      (i) => `disk ${disks[i]!.name} on node ${disks[i]!.node} holds ${replicasOnDisk[i]} replica(s) of volume ${r.volume.name} ` +
        'and disk anti-affinity is hard (replica-disk-soft-anti-affinity)',
    );
  },
};

export const NODE_FILTERS = [NodeReportFresh, NodeReady, NodeNotCordoned, NodeSchedulingAllowed, NodeNotEvicting] as const;
export const DISK_PREFILTERS = [DiskSchedulingAllowed, DiskNotEvicting, DiskSchedulableCondition] as const;
export const DISK_CHECKS = [DiskTypeMatchesEngine, DiskTags, DiskSpaceForReplica] as const;

/** Every filter of the dialect by name, in decision order. */
export const REPLICA_FILTERS = Object.fromEntries(
  [...NODE_FILTERS, NodeTags, ...DISK_PREFILTERS, ...DISK_CHECKS, DiskAntiAffinity].map((f) => [f.name, f]),
) as Readonly<Record<string, { readonly name: string; readonly reasonKey: FailureReason | null }>>;
