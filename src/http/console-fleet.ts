// The console's fleet summary: every dialect's targets as capacity bars (used / free / over-subscribed headroom),
// filtered, ordered and paginated here so that a page of 10,000 pools stays one small request. Computed from the
// services' public read methods; nothing here changes state.
import type { BerthContext } from './context.ts';
import type { Dialect } from './decision-log.ts';
import { staleAfterSeconds } from './settings-routes.ts';
import { placementServices } from '../placement/routes/index.ts';
import { capacity } from '../placement/capacity.ts';
import type { Provider } from '../placement/model.ts';
import { replicasServices } from '../replicas/routes/index.ts';
import { nodeRefusal } from '../replicas/scheduler.ts';
import { provisionedLimit } from '../replicas/space.ts';
import { volumesServices } from '../volumes/routes/index.ts';

/**
 * One capacity bar. The three segments add up to what scheduling may still reach plus what is used:
 * `used`, `free` (physical room left) and `headroom` (room that exists only through over-subscription: Cinder's
 * max_over_subscription_ratio, Placement's allocation_ratio, Longhorn's storage-over-provisioning-percentage).
 */
export interface CapacityBar {
  /** What is measured: "GiB", "scheduled", or a resource class. */
  label: string;
  /** "GiB", "bytes", "MB" (MEMORY_MB), "GB" (DISK_GB), or "" for a count. */
  unit: string;
  used: number;
  free: number;
  headroom: number;
  /** Used beyond what scheduling allows (an inventory shrunk under its allocations, a pool past its ratio). */
  over: boolean;
  /** Set when the reporter gave no number ("infinite", "unknown"): the segments are 0. */
  unbounded?: string;
}

export interface FleetRow {
  id: string;
  name: string;
  /** The backend host, the node, the tree's root. */
  group: string;
  /** 0 for pools, disks and root providers; the nesting level in a provider tree. */
  depth: number;
  /** "ok", or why the target is not a candidate now (stale report, unschedulable disk, …). */
  state: string;
  /** Short labels: zone, thin/thick, disk type, traits count. */
  tags: string[];
  bars: CapacityBar[];
  /** The figures behind the bars, in the dialect's own names and units. */
  figures: Record<string, number | string | boolean | null>;
}

export interface FleetQuery {
  dialect: Dialect;
  name?: string | undefined;
  /** Exact ids (pool names, node/disk, provider uuids): only the items holding one of them. */
  ids?: readonly string[] | undefined;
  order?: 'name' | 'fullest' | undefined;
  offset?: number | undefined;
  limit?: number | undefined;
}

export interface FleetPage {
  dialect: Dialect;
  /** "pools", "disks" or "provider trees": what offset, limit and total count. */
  items: string;
  total: number;
  offset: number;
  limit: number;
  /** Sums over every matching item (not only this page), per bar label. */
  totals: Record<string, { unit: string; used: number; free: number; headroom: number }>;
  /** The rows of the page's items, in order (a provider tree contributes one row per provider). */
  rows: FleetRow[];
}

export const FLEET_DEFAULT_LIMIT = 100;
export const FLEET_MAX_LIMIT = 1000;

/** Bar of an amount used against a physical size and a scheduling limit (limit = physical × over-subscription). */
function limitBar(label: string, unit: string, used: number, physical: number, limit: number): CapacityBar {
  const room = Math.min(physical, limit);
  return {
    label,
    unit,
    used,
    free: Math.max(0, room - used),
    headroom: Math.max(0, limit - Math.max(physical, used)),
    over: used > limit,
  };
}

interface Item {
  name: string;
  /** The ids of the item's rows. */
  ids: readonly string[];
  /** Every string the name filter looks at (lower case). */
  search: string;
  rows: () => FleetRow[];
}

function fullness(rows: FleetRow[]): number {
  let worst = 0;
  for (const row of rows) {
    for (const b of row.bars) {
      const whole = b.used + b.free + b.headroom;
      const f = b.over ? Infinity : whole > 0 ? b.used / whole : 0;
      if (f > worst) worst = f;
    }
  }
  return worst;
}

function page(dialect: Dialect, itemsLabel: string, all: Item[], q: FleetQuery): FleetPage {
  const needle = q.name?.trim().toLowerCase() ?? '';
  let items = needle === '' ? all : all.filter((i) => i.search.includes(needle));
  if (q.ids !== undefined) {
    const wanted = new Set(q.ids);
    items = items.filter((i) => i.ids.some((id) => wanted.has(id)));
  }
  const offset = q.offset ?? 0;
  const limit = q.limit ?? FLEET_DEFAULT_LIMIT;
  // Totals and "fullest" need every matching item's figures; the name order needs only the names.
  const computed = new Map<Item, FleetRow[]>();
  const rowsOf = (i: Item) => {
    let rows = computed.get(i);
    if (!rows) computed.set(i, (rows = i.rows()));
    return rows;
  };
  const totals: FleetPage['totals'] = {};
  for (const item of items) {
    for (const row of rowsOf(item)) {
      for (const b of row.bars) {
        const t = (totals[b.label] ??= { unit: b.unit, used: 0, free: 0, headroom: 0 });
        t.used += b.used;
        t.free += b.free;
        t.headroom += b.headroom;
      }
    }
  }
  if (q.order === 'fullest') {
    const score = new Map(items.map((i) => [i, fullness(rowsOf(i))]));
    items = [...items].sort((a, b) => score.get(b)! - score.get(a)! || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  } else {
    items = [...items].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }
  return {
    dialect,
    items: itemsLabel,
    total: items.length,
    offset,
    limit,
    totals,
    rows: items.slice(offset, offset + limit).flatMap(rowsOf),
  };
}

function volumesFleet(ctx: BerthContext, q: FleetQuery): FleetPage {
  const service = volumesServices.get(ctx);
  const pools = service?.candidates ?? [];
  const staleAfter = staleAfterSeconds(ctx, 'volumes');
  const now = ctx.now();
  const items: Item[] = pools.map((pool) => ({
    name: pool.name,
    ids: [pool.name],
    search: `${pool.name}\n${pool.availabilityZone}`.toLowerCase(),
    rows: () => {
      const virtualFree = service!.virtualFree(pool);
      const unbounded = typeof pool.total === 'string' ? pool.total : typeof pool.free === 'string' ? pool.free : undefined;
      const total = typeof pool.total === 'number' ? pool.total : 0;
      const free = typeof pool.free === 'number' ? pool.free : 0;
      const bar: CapacityBar = unbounded !== undefined
        ? { label: 'GiB', unit: 'GiB', used: 0, free: 0, headroom: 0, over: false, unbounded }
        : {
          label: 'GiB',
          unit: 'GiB',
          used: Math.max(0, total - free),
          free: Math.max(0, free),
          headroom: virtualFree === null ? 0 : Math.max(0, virtualFree - Math.max(0, free)),
          over: virtualFree !== null && virtualFree < 0,
        };
      const age = (now - pool.reportedAt) / 1000;
      return [{
        id: pool.name,
        name: pool.name,
        group: pool.backend,
        depth: 0,
        state: staleAfter > 0 && age > staleAfter ? `stale: last report ${Math.round(age)} s ago` : 'ok',
        tags: [pool.availabilityZone, ...(pool.thinSupport ? ['thin'] : []), ...(pool.thickSupport ? ['thick'] : [])],
        bars: [bar],
        figures: {
          total_capacity_gb: pool.total,
          free_capacity_gb: pool.free,
          provisioned_capacity_gb: pool.provisioned,
          allocated_capacity_gb: pool.allocated,
          reserved_percentage: pool.reservedPercentage,
          max_over_subscription_ratio: pool.mosr,
          virtual_free_capacity_gb: virtualFree,
        },
      }];
    },
  }));
  return page('volumes', 'pools', items, q);
}

function replicasFleet(ctx: BerthContext, q: FleetQuery): FleetPage {
  const service = replicasServices.get(ctx);
  const nodes = service?.nodes ?? [];
  const settings = service?.settings;
  const now = ctx.now();
  const items: Item[] = [];
  for (const node of nodes) {
    let nodeState: string | undefined;
    const stateOfNode = () => {
      if (nodeState === undefined) {
        const refusal = nodeRefusal(node, settings!, now, staleAfterSeconds(ctx, 'replicas'));
        nodeState = refusal !== null ? `node: ${refusal}` : 'ok';
      }
      return nodeState;
    };
    for (const disk of node.disks) {
      const id = `${node.name}/${disk.name}`;
      items.push({
        name: id,
        ids: [id],
        search: `${id}\n${node.zone}`.toLowerCase(),
        rows: () => {
          const op = settings!['storage-over-provisioning-percentage'];
          const limit = provisionedLimit(disk.storageMaximum, disk.storageReserved, op);
          const physical = disk.storageMaximum - disk.storageReserved;
          const schedulable = service!.diskConditions(node, disk).find((c) => c.type === 'Schedulable')!;
          const nodeOk = stateOfNode();
          return [{
            id,
            name: id,
            group: node.name,
            depth: 0,
            state: nodeOk !== 'ok' ? nodeOk
              : !disk.allowScheduling ? 'disk scheduling disabled'
              : disk.evictionRequested ? 'disk eviction requested'
              : schedulable.status === 'True' ? 'ok' : `disk: ${schedulable.message}`,
            tags: [node.zone === '' ? '(no zone)' : node.zone, disk.type, ...disk.tags],
            bars: [limitBar('scheduled', 'bytes', disk.storageScheduled, physical, limit)],
            figures: {
              storageMaximum: disk.storageMaximum,
              storageAvailable: disk.storageAvailable,
              storageReserved: disk.storageReserved,
              storageScheduled: disk.storageScheduled,
              provisionedLimit: limit,
              'storage-over-provisioning-percentage': op,
            },
          }];
        },
      });
    }
  }
  return page('replicas', 'disks', items, q);
}

/** The unit a standard resource class is counted in (its name says it); other classes are counts. */
const RESOURCE_CLASS_UNITS: Record<string, string> = { MEMORY_MB: 'MB', DISK_GB: 'GB' };

function providerRow(p: Provider, depth: number): FleetRow {
  const bars: CapacityBar[] = [];
  const figures: FleetRow['figures'] = { generation: p.generation, parent_provider_uuid: p.parent?.uuid ?? null };
  for (const rc of [...p.inventories.keys()].sort()) {
    const inv = p.inventories.get(rc)!;
    const used = p.used.get(rc) ?? 0;
    bars.push(limitBar(rc, RESOURCE_CLASS_UNITS[rc] ?? '', used, inv.total - inv.reserved, capacity(inv)));
    figures[`${rc}.total`] = inv.total;
    figures[`${rc}.reserved`] = inv.reserved;
    figures[`${rc}.allocation_ratio`] = inv.allocation_ratio;
    figures[`${rc}.used`] = used;
  }
  return {
    id: p.uuid,
    name: p.name,
    group: p.root.name,
    depth,
    state: 'ok',
    tags: p.traits.size > 0 ? [`${p.traits.size} trait${p.traits.size === 1 ? '' : 's'}`] : [],
    bars,
    figures,
  };
}

function placementFleet(ctx: BerthContext, q: FleetQuery): FleetPage {
  const model = placementServices.get(ctx)?.model;
  const items: Item[] = [];
  for (const root of model?.providers.values() ?? []) {
    if (root.parent !== null) continue;
    // Depth-first, children by name: a tree reads top-down like `openstack resource provider list`.
    const tree: Array<{ p: Provider; depth: number }> = [];
    const walk = (p: Provider, depth: number) => {
      tree.push({ p, depth });
      for (const c of [...p.children].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) walk(c, depth + 1);
    };
    walk(root, 0);
    items.push({
      name: root.name,
      ids: tree.map(({ p }) => p.uuid),
      search: tree.map(({ p }) => `${p.name}\n${p.uuid}`).join('\n').toLowerCase(),
      rows: () => tree.map(({ p, depth }) => providerRow(p, depth)),
    });
  }
  return page('placement', 'provider trees', items, q);
}

/** One page of the fleet of a dialect. */
export function fleetPage(ctx: BerthContext, q: FleetQuery): FleetPage {
  switch (q.dialect) {
    case 'volumes':
      return volumesFleet(ctx, q);
    case 'replicas':
      return replicasFleet(ctx, q);
    case 'placement':
      return placementFleet(ctx, q);
  }
}
