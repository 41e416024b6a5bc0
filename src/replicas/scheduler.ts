// Longhorn's ScheduleReplica, called once per missing replica of a volume, each call seeing the earlier ones
// (reference/longhorn.md §3). Pure: the cluster view, settings, clock reading and existing replicas come in; the
// placements, failure reasons and an optional trace go out. Nothing here mutates the views.
import { runFilters } from '../pipeline/engine.ts';
import type { FilterTrace, Rejection } from '../pipeline/types.ts';
import { selectByBalance, type BalanceDisk, type BalanceHow, type BalanceResult } from './balance.ts';
import {
  DISK_CHECKS, DISK_PREFILTERS, NODE_FILTERS, NodeTags, REASON, REASON_BY_FILTER,
  type DiskCheckRequest,
} from './filters.ts';
import { diskId, type DiskView, type NodeView, type ReplicaRef, type VolumeSpec } from './model.ts';
import { effectiveAutoBalance, effectiveSoft, type ReplicaSettings } from './settings.ts';
import { diskUnderPressure, usableStorage } from './space.ts';

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
  /** The final choice among the winning tier's disks; default Longhorn v1.11's balance selection (the bench swaps in ≤ v1.10's). */
  select?: (candidates: readonly DiskView[], size: number) => BalanceResult;
}

/** Longhorn v1.11+: balance selection over usable = avail − reserved − scheduled (status figures), clamped at 0. */
export function selectBalanced(candidates: readonly DiskView[], size: number): BalanceResult {
  return selectByBalance(candidates.map((d) => ({ node: d.node, disk: d.name, usable: usableStorage(d) })), size);
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
  effective: { replicaSoftAntiAffinity: boolean; replicaZoneSoftAntiAffinity: boolean; replicaDiskSoftAntiAffinity: boolean; replicaAutoBalanceBestEffort: boolean; tierOrder: TierName[] };
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

/** The first disk check (in Longhorn's order) a disk fails, or null. */
interface FailedCheck {
  disk: DiskView;
  filter: (typeof DISK_CHECKS)[number];
  rejection: Rejection;
}

function firstFailedCheck(disk: DiskView, request: DiskCheckRequest): FailedCheck | null {
  for (const filter of DISK_CHECKS) {
    const rejection = filter.check(disk, request);
    if (rejection !== null) return { disk, filter, rejection };
  }
  return null;
}

/** One node's pre-filtered disks, checked: those that pass with their balance inputs, and the failures. */
interface NodeDisks {
  disks: readonly DiskView[];
  balance: readonly BalanceDisk[];
  passed: DiskView[];
  passedBalance: BalanceDisk[];
  failed: FailedCheck[];
}

function checkNodeDisks(disks: readonly DiskView[], request: DiskCheckRequest, balance?: readonly BalanceDisk[]): NodeDisks {
  const inputs = balance ?? disks.map((d) => ({ node: d.node, disk: d.name, usable: usableStorage(d) }));
  const out: NodeDisks = { disks, balance: inputs, passed: [], passedBalance: [], failed: [] };
  for (let i = 0; i < disks.length; i++) {
    const d = disks[i]!;
    const failure = firstFailedCheck(d, request);
    if (failure === null) {
      out.passed.push(d);
      out.passedBalance.push(inputs[i]!);
    } else out.failed.push(failure);
  }
  return out;
}

/** A schedulable node with its pre-filtered disks checked against status figures (null: no disk left). */
interface NodeEntry {
  node: NodeView;
  group: NodeDisks | null;
}

/** Binary search in a list sorted by name. */
function findByName<T extends { name: string }>(sorted: readonly T[], name: string): T | undefined {
  let lo = 0;
  let hi = sorted.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const m = sorted[mid]!;
    if (m.name === name) return m;
    if (m.name < name) lo = mid + 1;
    else hi = mid - 1;
  }
  return undefined;
}

/** The per-filter trace (count in, count out, rejections) of the disk checks of one tier. */
function checkSteps(total: number, failed: readonly FailedCheck[]): FilterStep[] {
  const steps: FilterStep[] = [];
  let remaining = total;
  for (const filter of DISK_CHECKS) {
    const rejected = failed.filter((f) => f.filter === filter).map((f) => ({
      node: f.disk.node, disk: f.disk.name, filter: filter.name, code: f.rejection.code,
      ...(filter.reason ? { reason: filter.reason } : {}), message: f.rejection.message,
    }));
    steps.push({ name: filter.name, in: remaining, out: remaining - rejected.length, rejected });
    remaining -= rejected.length;
  }
  return steps;
}

export function scheduleVolume(input: ScheduleInput): ScheduleResult {
  const { settings, volume, explain } = input;
  const nodeSoft = effectiveSoft(volume.replicaSoftAntiAffinity, settings['replica-soft-anti-affinity']);
  const zoneSoft = effectiveSoft(volume.replicaZoneSoftAntiAffinity, settings['replica-zone-soft-anti-affinity']);
  const diskSoft = effectiveSoft(volume.replicaDiskSoftAntiAffinity, settings['replica-disk-soft-anti-affinity']);
  const order = tierOrder(zoneSoft, nodeSoft);
  // replica-auto-balance best-effort widens two tiers (reference §3.4): a used node with a disk under pressure is
  // also a "new node", and any only-evicting node qualifies for EZ.
  const bestEffort = effectiveAutoBalance(volume.replicaAutoBalance, settings['replica-auto-balance']) === 'best-effort';
  const pressure = settings['replica-auto-balance-disk-pressure-percentage'];
  const underPressure = (n: NodeView): boolean => bestEffort && pressure > 0 && n.disks.some((d) => diskUnderPressure(d, pressure));
  const rejections = new Map<string, number>();

  // Longhorn replenishes until the usable replicas (not failed, not being evicted) reach numberOfReplicas.
  const refs: ReplicaRef[] = input.replicas.slice();
  const usable = refs.filter((r) => !r.failed && !r.evictionRequested).length;
  const missing = Math.max(0, volume.numberOfReplicas - usable);

  // Once per request: schedulable nodes, node tags, disk pre-filter. They depend on reported status only.
  const nodeRun = runFilters(input.nodes, { settings, now: input.now, staleAfterSeconds: input.staleAfterSeconds }, NODE_FILTERS);
  count(rejections, nodeRun.rejected);
  const schedulable = nodeRun.passed;
  const tagRun = runFilters(schedulable, { nodeSelector: volume.nodeSelector, allowEmpty: settings['allow-empty-node-selector-volume'] }, [NodeTags]);
  count(rejections, tagRun.rejected);
  const tagged = tagRun.passed;
  const allDisks: DiskView[] = [];
  for (const n of schedulable) for (const d of n.disks) allDisks.push(d);
  const diskRun = runFilters(allDisks, { settings }, DISK_PREFILTERS);
  count(rejections, diskRun.rejected);

  const trace: ScheduleTrace | undefined = explain
    ? {
      missingReplicas: missing,
      effective: { replicaSoftAntiAffinity: nodeSoft, replicaZoneSoftAntiAffinity: zoneSoft, replicaDiskSoftAntiAffinity: diskSoft, replicaAutoBalanceBestEffort: bestEffort, tierOrder: order },
      schedulableNodes: nodeRun.trace.map(nodeStep),
      nodeTags: tagRun.trace[0] ? nodeStep(tagRun.trace[0]) : { name: NodeTags.name, in: 0, out: 0, rejected: [] },
      diskPrefilter: diskRun.trace.map(diskStep),
      replicas: [],
    }
    : undefined;

  const placements: Placement[] = [];
  const unscheduled: Unscheduled[] = [];
  const inPass = new Map<string, number>();

  // The disk checks against status figures, once per request and grouped by node: within a pass only the disks
  // that receive a replica change (in-cycle accounting), so only their nodes are checked again. The balance inputs
  // use status figures only (§3.7). This keeps a decision O(disks) with a small constant.
  const statusRequest: DiskCheckRequest = { settings, volume, inPass: new Map() };
  const passRequest: DiskCheckRequest = { settings, volume, inPass };
  // diskRun.passed keeps the order of `schedulable` (node, then disk), so one walk groups it by node.
  const entries: NodeEntry[] = [];
  const passedDisks = diskRun.passed;
  for (let i = 0, k = 0; i < schedulable.length; i++) {
    const node = schedulable[i]!;
    const list: DiskView[] = [];
    while (k < passedDisks.length && passedDisks[k]!.node === node.name) list.push(passedDisks[k++]!);
    entries.push({ node, group: list.length > 0 ? checkNodeDisks(list, statusRequest) : null });
  }
  const taggedSet = new Set<NodeView>(tagged);
  const taggedEntries = entries.filter((e) => taggedSet.has(e.node));
  const nodesWithPassPlacements = new Set<string>();
  const select = input.select;

  for (let index = 0; index < missing; index++) {
    const counted = refs.filter((r) => !ignoredFailed(r));
    const usedNodes = new Set<string>();
    const usedZones = new Set<string>();
    const nodeOnlyEvicting = new Map<string, boolean>();
    const zoneOnlyEvicting = new Map<string, boolean>();
    const perDisk = new Map<string, number>();
    const nodesHoldingVolume = new Set<string>();
    for (const r of counted) {
      const id = diskId(r.node, r.disk);
      perDisk.set(id, (perDisk.get(id) ?? 0) + 1);
      nodesHoldingVolume.add(r.node);
      const node = findByName(schedulable, r.node);
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
    const tierNodes = (tier: TierName): readonly NodeEntry[] => {
      switch (tier) {
        case 'NN': return taggedEntries.filter(({ node: n }) => !usedZones.has(n.zone));
        case 'N': return taggedEntries.filter(({ node: n }) => !usedNodes.has(n.name) || underPressure(n));
        case 'E': return taggedEntries.filter(({ node: n }) => nodeOnlyEvicting.get(n.name) === true);
        case 'EZ': return taggedEntries.filter(({ node: n }) => nodeOnlyEvicting.get(n.name) === true && (bestEffort || zoneOnlyEvicting.get(n.zone) === true));
        case 'U': return entries.filter(({ node: n }) => usedNodes.has(n.name));
      }
    };

    const reasons = new Set<string>();
    // The trace's keys follow the decision: who is used, the tiers tried, then balance and the result.
    const replicaTrace: Pick<ReplicaTrace, 'index' | 'usedNodes' | 'usedZones' | 'tiers'> | undefined = explain
      ? { index, usedNodes: [...usedNodes].sort(), usedZones: [...usedZones].sort(), tiers: [] }
      : undefined;
    if (schedulable.length === 0) reasons.add(REASON.nodesUnavailable);

    let candidates: DiskView[] = [];
    let candidateBalance: BalanceDisk[] = [];
    let winner: TierName | null = null;
    for (const tier of schedulable.length === 0 ? [] : order) {
      const nodes = tierNodes(tier);
      const tierReasons = new Set<string>();
      const nodesWithoutDisks: string[] = [];
      let checked = 0;
      const failed: FailedCheck[] = [];
      // Disk anti-affinity (filterDisksWithMatchingReplicas) splits the disks that passed: without a replica of
      // this volume (preferred) or with one (only under soft anti-affinity, and only if no free disk exists).
      const free: DiskView[] = [];
      const freeBalance: BalanceDisk[] = [];
      const occupied: DiskView[] = [];
      const occupiedBalance: BalanceDisk[] = [];
      for (const { node: n, group: status } of nodes) {
        let group = status;
        if (!group) {
          nodesWithoutDisks.push(n.name);
          tierReasons.add(REASON.disksUnavailable);
          continue;
        }
        if (nodesWithPassPlacements.has(n.name)) group = checkNodeDisks(group.disks, passRequest, group.balance);
        checked += group.disks.length;
        for (const f of group.failed) {
          failed.push(f);
          rejections.set(f.filter.name, (rejections.get(f.filter.name) ?? 0) + 1);
          if (f.filter.reason) tierReasons.add(f.filter.reason);
        }
        const holds = nodesHoldingVolume.has(n.name);
        for (let i = 0; i < group.passed.length; i++) {
          const d = group.passed[i]!;
          if (holds && perDisk.has(d.id)) {
            occupied.push(d);
            occupiedBalance.push(group.passedBalance[i]!);
          } else {
            free.push(d);
            freeBalance.push(group.passedBalance[i]!);
          }
        }
      }
      let kept: DiskView[] = free;
      let keptBalance = freeBalance;
      if (free.length === 0 && diskSoft) {
        kept = occupied;
        keptBalance = occupiedBalance;
      }
      for (const r of tierReasons) reasons.add(r);
      if (replicaTrace) {
        const passedCount = free.length + occupied.length;
        const dropped = kept === free
          ? occupied.map((d) => ({ node: d.node, disk: d.name, replicasOfVolume: perDisk.get(d.id) ?? 0 }))
          : [];
        replicaTrace.tiers.push({
          tier, description: TIER_DESCRIPTIONS[tier], nodes: nodes.length, nodesWithoutDisks,
          checks: checkSteps(checked, failed),
          antiAffinity: { in: passedCount, out: kept.length, dropped, soft: diskSoft },
          candidates: kept.length, reasons: [...tierReasons].sort(),
        });
      }
      if (kept.length > 0) {
        // Candidates keep node-name then disk-name order: tier nodes are sorted, each node's disks too, and the
        // split above preserves order within each list.
        candidates = kept;
        candidateBalance = keptBalance;
        winner = tier;
        break;
      }
    }

    if (winner === null) {
      const u = joinReasons(reasons);
      unscheduled.push(u);
      if (replicaTrace) trace!.replicas.push({ ...replicaTrace, result: { reason: u.reason } });
      continue;
    }
    const balance = select ? select(candidates, volume.size) : selectByBalance(candidateBalance, volume.size);
    const disk = candidates[balance.chosen]!;
    placements.push({ disk, tier: winner, how: balance.how });
    refs.push({ node: disk.node, disk: disk.name, failed: false, evictionRequested: false, size: volume.size, inStatus: false });
    inPass.set(disk.id, (inPass.get(disk.id) ?? 0) + volume.size);
    nodesWithPassPlacements.add(disk.node);
    if (replicaTrace) {
      trace!.replicas.push({
        ...replicaTrace,
        balance: { how: balance.how, nodeStage: balance.nodeScores, chosenNode: balance.chosenNode, diskStage: balance.diskScores },
        result: { node: disk.node, disk: disk.name, tier: winner },
      });
    }
  }

  return {
    missing, placements, unscheduled, rejections,
    candidates: input.nodes.length, passed: schedulable.length,
    ...(trace ? { trace } : {}),
  };
}

export type { Rejection };
