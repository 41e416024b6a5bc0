// Longhorn's ScheduleReplica, called once per missing replica of a volume, each call seeing the earlier ones
// (reference/longhorn.md §3). Pure: the cluster view, settings, clock reading and existing replicas come in; the
// placements, failure reasons and an optional trace go out. Nothing here mutates the views.
import { runFilters } from '../pipeline/engine.ts';
import type { FilterTrace, Rejection } from '../pipeline/types.ts';
import { selectByBalance, type BalanceHow, type BalanceResult } from './balance.ts';
import {
  DISK_CHECKS, DISK_PREFILTERS, NODE_FILTERS, NodeTags, REASON, REASON_BY_FILTER,
  type DiskCheckRequest,
} from './filters.ts';
import { diskId, type DiskView, type NodeView, type ReplicaRef, type VolumeSpec } from './model.ts';
import { effectiveSoft, type ReplicaSettings } from './settings.ts';
import { usableStorage } from './space.ts';

/** The node/zone tiers (reference §3.4): new node in new zone, new node, only-evicting node (in an only-evicting zone), used node. */
export type TierName = 'NN' | 'N' | 'E' | 'EZ' | 'U';

export const TIER_DESCRIPTIONS: Record<TierName, string> = {
  NN: 'new node in a new zone',
  N: 'new node (zone may already hold a replica)',
  E: 'node whose replicas of this volume are all being evicted',
  EZ: 'node and zone whose replicas of this volume are all being evicted',
  U: 'node that already holds a replica of this volume',
};

/** Longhorn's tier order for the effective zone/node soft anti-affinity. */
export function tierOrder(zoneSoft: boolean, nodeSoft: boolean): TierName[] {
  if (!zoneSoft) return ['NN', 'EZ'];
  return nodeSoft ? ['NN', 'N', 'U'] : ['NN', 'N', 'E'];
}

export interface ScheduleInput {
  /** Every node Berth knows, sorted by name; each node's disks sorted by name. */
  nodes: readonly NodeView[];
  settings: ReplicaSettings;
  volume: VolumeSpec;
  /** Existing replicas of the volume (from the request and Berth's own). */
  replicas: readonly ReplicaRef[];
  now: number;
  staleAfterSeconds: number;
  explain: boolean;
}

export interface Placement {
  disk: DiskView;
  tier: TierName;
  how: BalanceHow;
}

export interface Unscheduled {
  /** Distinct reason keys, sorted. */
  reasons: string[];
  /** The keys joined with "; " (Longhorn's JoinReasons), or "replica scheduling failed" when there are none. */
  reason: string;
}

export interface RejectedEntry {
  node: string;
  disk?: string;
  filter: string;
  code: string;
  reason?: string;
  message: string;
}

export interface FilterStep {
  name: string;
  in: number;
  out: number;
  rejected: RejectedEntry[];
}

export interface TierTrace {
  tier: TierName;
  description: string;
  nodes: number;
  nodesWithoutDisks: string[];
  checks: FilterStep[];
  antiAffinity: { in: number; out: number; dropped: Array<{ node: string; disk: string; replicasOfVolume: number }>; soft: boolean };
  candidates: number;
  reasons: string[];
}

export interface ReplicaTrace {
  index: number;
  usedNodes: string[];
  usedZones: string[];
  tiers: TierTrace[];
  balance?: {
    how: BalanceHow;
    nodeStage: BalanceResult['nodeScores'];
    chosenNode: string | null;
    diskStage: BalanceResult['diskScores'];
  };
  result: { node: string; disk: string; tier: TierName } | { reason: string };
}

export interface ScheduleTrace {
  missingReplicas: number;
  effective: { replicaSoftAntiAffinity: boolean; replicaZoneSoftAntiAffinity: boolean; replicaDiskSoftAntiAffinity: boolean; tierOrder: TierName[] };
  schedulableNodes: FilterStep[];
  nodeTags: FilterStep;
  diskPrefilter: FilterStep[];
  replicas: ReplicaTrace[];
}

export interface ScheduleResult {
  missing: number;
  placements: Placement[];
  unscheduled: Unscheduled[];
  /** Rejections per filter name, for metrics. */
  rejections: Map<string, number>;
  /** Nodes considered and nodes found schedulable (for the decision log line). */
  candidates: number;
  passed: number;
  trace?: ScheduleTrace;
}

export function joinReasons(reasons: Iterable<string>): Unscheduled {
  const sorted = [...new Set(reasons)].sort();
  return { reasons: sorted, reason: sorted.length > 0 ? sorted.join('; ') : REASON.schedulingFailed };
}

/** A failed replica that Longhorn would not reuse (eviction requested; Berth's refs always have node and disk). */
const ignoredFailed = (r: ReplicaRef): boolean => r.failed && r.evictionRequested;

function nodeStep(t: FilterTrace<NodeView>): FilterStep {
  return {
    name: t.name, in: t.in, out: t.out,
    rejected: t.rejected.map((x) => ({ node: x.candidate.name, filter: t.name, code: x.rejection.code, message: x.rejection.message })),
  };
}

function diskStep(t: FilterTrace<DiskView>): FilterStep {
  const reason = REASON_BY_FILTER.get(t.name) ?? undefined;
  return {
    name: t.name, in: t.in, out: t.out,
    rejected: t.rejected.map((x) => ({
      node: x.candidate.node, disk: x.candidate.name, filter: t.name, code: x.rejection.code,
      ...(reason ? { reason } : {}), message: x.rejection.message,
    })),
  };
}

function count(map: Map<string, number>, rejected: ReadonlyArray<{ filter: string }>): void {
  for (const r of rejected) map.set(r.filter, (map.get(r.filter) ?? 0) + 1);
}

export function scheduleVolume(input: ScheduleInput): ScheduleResult {
  const { settings, volume, explain } = input;
  const nodeSoft = effectiveSoft(volume.replicaSoftAntiAffinity, settings['replica-soft-anti-affinity']);
  const zoneSoft = effectiveSoft(volume.replicaZoneSoftAntiAffinity, settings['replica-zone-soft-anti-affinity']);
  const diskSoft = effectiveSoft(volume.replicaDiskSoftAntiAffinity, settings['replica-disk-soft-anti-affinity']);
  const order = tierOrder(zoneSoft, nodeSoft);
  const rejections = new Map<string, number>();

  // Longhorn replenishes until the usable replicas (not failed, not being evicted) reach numberOfReplicas.
  const refs: ReplicaRef[] = input.replicas.slice();
  const usable = refs.filter((r) => !r.failed && !r.evictionRequested).length;
  const missing = Math.max(0, volume.numberOfReplicas - usable);

  // Once per request: schedulable nodes, node tags, disk pre-filter. They depend on reported status only.
  const nodeRun = runFilters(input.nodes, { settings, now: input.now, staleAfterSeconds: input.staleAfterSeconds }, NODE_FILTERS);
  count(rejections, nodeRun.rejected);
  const schedulable = nodeRun.passed;
  const schedulableByName = new Map(schedulable.map((n) => [n.name, n]));
  const tagRun = runFilters(schedulable, { nodeSelector: volume.nodeSelector, allowEmpty: settings['allow-empty-node-selector-volume'] }, [NodeTags]);
  count(rejections, tagRun.rejected);
  const tagged = tagRun.passed;
  const allDisks: DiskView[] = [];
  for (const n of schedulable) for (const d of n.disks) allDisks.push(d);
  const diskRun = runFilters(allDisks, { settings }, DISK_PREFILTERS);
  count(rejections, diskRun.rejected);
  const prefiltered = new Map<string, DiskView[]>();
  for (const d of diskRun.passed) {
    let list = prefiltered.get(d.node);
    if (!list) prefiltered.set(d.node, (list = []));
    list.push(d);
  }

  const trace: ScheduleTrace | undefined = explain
    ? {
      missingReplicas: missing,
      effective: { replicaSoftAntiAffinity: nodeSoft, replicaZoneSoftAntiAffinity: zoneSoft, replicaDiskSoftAntiAffinity: diskSoft, tierOrder: order },
      schedulableNodes: nodeRun.trace.map(nodeStep),
      nodeTags: tagRun.trace[0] ? nodeStep(tagRun.trace[0]) : { name: NodeTags.name, in: 0, out: 0, rejected: [] },
      diskPrefilter: diskRun.trace.map(diskStep),
      replicas: [],
    }
    : undefined;

  const placements: Placement[] = [];
  const unscheduled: Unscheduled[] = [];
  const inPass = new Map<string, number>();

  for (let index = 0; index < missing; index++) {
    const counted = refs.filter((r) => !ignoredFailed(r));
    const usedNodes = new Set<string>();
    const usedZones = new Set<string>();
    const nodeOnlyEvicting = new Map<string, boolean>();
    const zoneOnlyEvicting = new Map<string, boolean>();
    const perDisk = new Map<string, number>();
    for (const r of counted) {
      const id = diskId(r.node, r.disk);
      perDisk.set(id, (perDisk.get(id) ?? 0) + 1);
      const node = schedulableByName.get(r.node);
      if (!node) continue;
      if (r.evictionRequested) {
        if (!nodeOnlyEvicting.has(node.name)) nodeOnlyEvicting.set(node.name, true);
        if (!zoneOnlyEvicting.has(node.zone)) zoneOnlyEvicting.set(node.zone, true);
      } else {
        nodeOnlyEvicting.set(node.name, false);
        zoneOnlyEvicting.set(node.zone, false);
      }
      usedNodes.add(node.name);
      usedZones.add(node.zone);
    }
    const tierNodes = (tier: TierName): readonly NodeView[] => {
      switch (tier) {
        case 'NN': return tagged.filter((n) => !usedZones.has(n.zone));
        case 'N': return tagged.filter((n) => !usedNodes.has(n.name));
        case 'E': return tagged.filter((n) => nodeOnlyEvicting.get(n.name) === true);
        case 'EZ': return tagged.filter((n) => nodeOnlyEvicting.get(n.name) === true && zoneOnlyEvicting.get(n.zone) === true);
        case 'U': return schedulable.filter((n) => usedNodes.has(n.name));
      }
    };

    const reasons = new Set<string>();
    const replicaTrace: ReplicaTrace | undefined = explain
      ? { index, usedNodes: [...usedNodes].sort(), usedZones: [...usedZones].sort(), tiers: [], result: { reason: '' } }
      : undefined;
    if (schedulable.length === 0) reasons.add(REASON.nodesUnavailable);

    let candidates: DiskView[] = [];
    let winner: TierName | null = null;
    const checkRequest: DiskCheckRequest = { settings, volume, inPass };
    for (const tier of schedulable.length === 0 ? [] : order) {
      const nodes = tierNodes(tier);
      const tierReasons = new Set<string>();
      const nodesWithoutDisks: string[] = [];
      const disks: DiskView[] = [];
      for (const n of nodes) {
        const list = prefiltered.get(n.name);
        if (!list || list.length === 0) {
          nodesWithoutDisks.push(n.name);
          tierReasons.add(REASON.disksUnavailable);
        } else for (const d of list) disks.push(d);
      }
      const checks = runFilters(disks, checkRequest, DISK_CHECKS);
      count(rejections, checks.rejected);
      for (const r of checks.rejected) {
        const reason = REASON_BY_FILTER.get(r.filter);
        if (reason) tierReasons.add(reason);
      }
      // Disk anti-affinity (filterDisksWithMatchingReplicas): prefer disks without a replica of this volume.
      const free = checks.passed.filter((d) => !perDisk.has(d.id));
      const kept = free.length > 0 ? free : diskSoft ? checks.passed : [];
      for (const r of tierReasons) reasons.add(r);
      if (replicaTrace) {
        const dropped = checks.passed.filter((d) => !kept.includes(d))
          .map((d) => ({ node: d.node, disk: d.name, replicasOfVolume: perDisk.get(d.id) ?? 0 }));
        replicaTrace.tiers.push({
          tier, description: TIER_DESCRIPTIONS[tier], nodes: nodes.length, nodesWithoutDisks,
          checks: checks.trace.map(diskStep),
          antiAffinity: { in: checks.passed.length, out: kept.length, dropped, soft: diskSoft },
          candidates: kept.length, reasons: [...tierReasons].sort(),
        });
      }
      if (kept.length > 0) {
        candidates = kept;
        winner = tier;
        break;
      }
    }

    if (winner === null) {
      const u = joinReasons(reasons);
      unscheduled.push(u);
      if (replicaTrace) {
        replicaTrace.result = { reason: u.reason };
        trace!.replicas.push(replicaTrace);
      }
      continue;
    }
    const balance = selectByBalance(candidates.map((d) => ({ node: d.node, disk: d.name, usable: usableStorage(d) })), volume.size);
    const disk = candidates[balance.chosen]!;
    placements.push({ disk, tier: winner, how: balance.how });
    refs.push({ node: disk.node, disk: disk.name, failed: false, evictionRequested: false, size: volume.size, inStatus: false });
    inPass.set(disk.id, (inPass.get(disk.id) ?? 0) + volume.size);
    if (replicaTrace) {
      replicaTrace.balance = { how: balance.how, nodeStage: balance.nodeScores, chosenNode: balance.chosenNode, diskStage: balance.diskScores };
      replicaTrace.result = { node: disk.node, disk: disk.name, tier: winner };
      trace!.replicas.push(replicaTrace);
    }
  }

  return {
    missing, placements, unscheduled, rejections,
    candidates: input.nodes.length, passed: schedulable.length,
    ...(trace ? { trace } : {}),
  };
}

export type { Rejection };
