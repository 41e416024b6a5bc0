// Placement's response bodies, built from the in-memory model: providers, inventories, usages, allocations and
// the allocation candidates (serialised directly, they can be tens of MB: then in chunks, as a stream). Pure: no
// Fastify imports.
import { Readable } from 'node:stream';
import { IS_LITTLE_ENDIAN } from '../pipeline/pipeline.ts';
import { capacity } from './capacity.ts';
import type { Candidate } from './filters.ts';
import type { Microversion } from './microversion.ts';
import { type Consumer, type PlacementModel, type Provider, UUID_LENGTH, UUID_WORDS } from './model.ts';

/** A provider's links: inventories and usages always, aggregates from 1.1, traits from 1.6, allocations from 1.11. */
function links(uuid: string, mv: Microversion) {
  const base = `/resource_providers/${uuid}`;
  const out = [{ rel: 'self', href: base }];
  const rels = ['inventories', 'usages', ...(mv >= 1 ? ['aggregates'] : []), ...(mv >= 6 ? ['traits'] : []), ...(mv >= 11 ? ['allocations'] : [])];
  for (const rel of rels) out.push({ rel, href: `${base}/${rel}` });
  return out;
}

/** A resource provider; parent and root uuids from 1.14. */
export function providerBody(p: Provider, mv: Microversion) {
  const body: Record<string, unknown> = { uuid: p.uuid, name: p.name, generation: p.generation, links: links(p.uuid, mv) };
  if (mv >= 14) {
    body.parent_provider_uuid = p.parent?.uuid ?? null;
    body.root_provider_uuid = p.root.uuid;
  }
  return body;
}

export function inventoriesBody(p: Provider) {
  return { resource_provider_generation: p.generation, inventories: Object.fromEntries(p.inventories) };
}

export function inventoryBody(p: Provider, rc: string) {
  return { ...p.inventories.get(rc), resource_provider_generation: p.generation };
}

/** A provider's traits in Placement's id order. */
export function providerTraitsBody(model: PlacementModel, p: Provider) {
  return { traits: model.inTraitOrder(p.traits), resource_provider_generation: p.generation };
}

/** The aggregates of a provider (as given, for a PUT's answer); the generation from 1.19. */
export function providerAggregatesBody(p: Provider, mv: Microversion, aggregates: Iterable<string> = p.aggregates) {
  return { aggregates: [...aggregates], ...(mv >= 19 ? { resource_provider_generation: p.generation } : {}) };
}

export function resourceClassBody(name: string) {
  return { name, links: [{ rel: 'self', href: `/resource_classes/${name}` }] };
}

/**
 * The allocations of a consumer (GET /allocations/{consumer_uuid}): project and user from 1.12, the consumer
 * generation from 1.28 and its type from 1.38, all only when it has allocations.
 */
export function consumerAllocationsBody(model: PlacementModel, c: Consumer | undefined, mv: Microversion) {
  const allocations: Record<string, { resources: Record<string, number>; generation: number }> = {};
  for (const [rp, res] of c?.allocations ?? []) {
    allocations[rp] = { resources: Object.fromEntries(res), generation: model.providers.get(rp)?.generation ?? 0 };
  }
  const body: Record<string, unknown> = { allocations };
  if (c && c.allocations.size > 0 && mv >= 12) {
    body.project_id = c.project_id;
    body.user_id = c.user_id;
    if (mv >= 28) body.consumer_generation = c.generation;
    if (mv >= 38) body.consumer_type = c.consumer_type ?? 'unknown';
  }
  return body;
}

/** The allocations against a provider (GET /resource_providers/{uuid}/allocations); consumer generations from 1.28. */
export function providerAllocationsBody(model: PlacementModel, p: Provider, mv: Microversion) {
  const allocations: Record<string, { resources: Record<string, number>; consumer_generation?: number }> = {};
  for (const c of p.consumers) {
    const consumer = model.consumers.get(c);
    const res = consumer?.allocations.get(p.uuid);
    if (res) allocations[c] = { resources: Object.fromEntries(res), ...(mv >= 28 ? { consumer_generation: consumer!.generation } : {}) };
  }
  return { allocations, resource_provider_generation: p.generation };
}

/**
 * The answer is assembled from bytes, not text: each provider's fragments are kept encoded (latin1: they are
 * ASCII, see candidatesChunks) with their leading comma, and an answer is one copy of each into its buffer
 * (Buffer.concat), instead of a join into a string and an encoding of that string (two copies of the whole and a
 * string the size of the answer for the GC).
 */
const bytes = (text: string) => Buffer.from(text, 'latin1');

/** A fragment kept with its leading comma; the first of a list goes out without it. */
const listed = (fragment: Buffer, first: boolean) => (first ? fragment.subarray(1) : fragment);

/** A kept summary: it changes with the provider's generation (inventories, traits, allocations) or its place in a tree. */
export interface SummaryFragment { generation: number; band: number; root: Provider; parent: Provider | null; entry: Buffer }

/** A provider's member of provider_summaries, after a comma: `,"<uuid>":{…}`. */
function summaryEntry(model: PlacementModel, p: Provider, mv: number, classes: ReadonlySet<string> | null): Buffer {
  const band = mv >= 29 ? 2 : mv >= 17 ? 1 : 0;
  const cached = classes ? undefined : p.summaryFragment;
  if (cached && cached.generation === p.generation && cached.band === band && cached.root === p.root && cached.parent === p.parent) return cached.entry;
  const resources: Record<string, { capacity: number; used: number }> = {};
  for (const [rc, inv] of p.inventories) {
    if (!classes || classes.has(rc)) resources[rc] = { capacity: capacity(inv), used: p.used.get(rc) ?? 0 };
  }
  const summary: Record<string, unknown> = { resources };
  if (band >= 1) summary.traits = model.inTraitOrder(p.traits);
  if (band >= 2) {
    summary.parent_provider_uuid = p.parent?.uuid ?? null;
    summary.root_provider_uuid = p.root.uuid;
  }
  const entry = bytes(`,"${p.uuid}":${JSON.stringify(summary)}`);
  if (!classes) p.summaryFragment = { generation: p.generation, band, root: p.root, parent: p.parent, entry };
  return entry;
}

const resourcesJson = (res: Map<string, number>) => {
  let out = '';
  for (const [rc, n] of res) out += (out ? ',' : '') + `"${rc}":${n}`;
  return `{"resources":{${out}}}`;
};

/** One allocation request after a comma, built from the candidate's maps. */
function requestJson(c: Candidate, mv: number): Buffer {
  const parts: string[] = [];
  for (const [p, res] of c.allocations) {
    parts.push(mv < 12
      ? `{"resource_provider":{"uuid":"${p.uuid}"},${resourcesJson(res).slice(1, -1)}}`
      : `"${p.uuid}":${resourcesJson(res)}`);
  }
  if (mv < 12) return bytes(`,{"allocations":[${parts.join(',')}]}`);
  let json = `,{"allocations":{${parts.join(',')}}`;
  if (mv >= 34) {
    const maps = [...c.mappings].map(([suffix, ps]) => `"${suffix}":[${ps.map((p) => `"${p.uuid}"`).join(',')}]`);
    json += `,"mappings":{${maps.join(',')}}`;
  }
  return bytes(json + '}');
}

/**
 * The one-group, one-provider case from 1.12 (every request the same but for its provider): the requests, each with
 * its leading comma, in blocks of about `chunkBytes` bytes. Each request is a copy of one template made for the
 * answer (`,{"allocations":{"<uuid>":{"resources":{…}}},"mappings":{"<suffix>":["<uuid>"]}}`) with the provider's
 * uuid written into its slots from the model's uuid words. Nothing is kept per provider: a fragment kept per provider
 * (until 2026-12-06) was made again for every provider of an answer whenever the amounts asked differed from the
 * last answer's (two flavours taking turns: each answer made all of its fragments anew). undefined while the model
 * has a uuid not of UUID_LENGTH characters (the caller then writes each request from its maps).
 */
function oneProviderRequests(model: PlacementModel, candidates: readonly Candidate[], mv: number, chunkBytes: number,
  lease: AnswerLease | undefined): Buffer[] | undefined {
  const words = model.uuidWords();
  if (!words) return undefined;
  const first = candidates[0]!;
  const slot = 'x'.repeat(UUID_LENGTH);
  const head = ',{"allocations":{"';
  const middle = `":${resourcesJson(first.allocations.get(first.single!)!)}}`;
  const mapping = `,"mappings":{"${first.mappings.keys().next().value!}":["`;
  const template = bytes(mv >= 34 ? `${head}${slot}${middle}${mapping}${slot}"]}}` : `${head}${slot}${middle}}`);
  const second = mv >= 34 ? head.length + UUID_LENGTH + middle.length + mapping.length : -1;
  const size = template.length;
  const perBlock = Math.max(1, Math.min(candidates.length, Math.floor(chunkBytes / size)));
  // Read once into a local: the imported binding read per word measured slower.
  const littleEndian = IS_LITTLE_ENDIAN;
  const blocks: Buffer[] = [];
  for (let from = 0; from < candidates.length; from += perBlock) {
    const to = Math.min(candidates.length, from + perBlock);
    const block = lease ? lease.take((to - from) * size) : Buffer.allocUnsafe((to - from) * size);
    const view = new DataView(block.buffer, block.byteOffset, block.length);
    for (let i = from, at = 0; i < to; i++, at += size) {
      block.set(template, at);
      const w = candidates[i]!.single!.slot * UUID_WORDS;
      for (let k = 0; k < UUID_WORDS; k++) {
        const word = words[w + k]!;
        view.setUint32(at + head.length + 4 * k, word, littleEndian);
        if (second >= 0) view.setUint32(at + second + 4 * k, word, littleEndian);
      }
    }
    blocks.push(block);
  }
  return blocks;
}

/** Answers above this many bytes go out in chunks of about this size (a stream), so no copy of the whole is held. */
export const CHUNK_BYTES = 64 * 1024;

/**
 * Buffers for answers, reused from one answer to the next: an answer takes what it needs through a lease, and the
 * lease gives them back once the answer's response has finished (its last byte handed to the socket). A new buffer of
 * tens or hundreds of KB per answer is memory the process has to fault in (on this VM kind about 10 µs a page the
 * first time: a 450 KB Buffer.concat took 1.2 ms) and V8 counts as external allocation; reused, the same copy costs
 * 0.03 ms. At 1,000 providers over keep-alive (2026-12-05, three A/B pairs) the mid-size answers took a quarter to a
 * third less server CPU (plain 1.43-1.71 against 1.89-2.30 ms a request). At most `keepBytes` are kept, and a lease
 * holds at most as much for its answer (a 45 MB answer is not held to its end: its other chunks are the GC's, once
 * written). Below `smallest` bytes, Node's own buffer pool serves.
 */
export class AnswerBuffers {
  readonly #free: Buffer[] = [];
  #freeBytes = 0;
  constructor(readonly keepBytes = 16 * 1024 * 1024, readonly smallest = 16 * 1024) {}

  /** The buffers of one answer. */
  lease(): AnswerLease {
    return new AnswerLease(this);
  }

  /** A kept buffer of at least `size` bytes, else a new one with a quarter more (an answer that grows still fits). */
  take(size: number): Buffer {
    const k = this.#free.findIndex((b) => b.length >= size);
    if (k < 0) return Buffer.allocUnsafeSlow(Math.ceil(size * 1.25));
    const [buffer] = this.#free.splice(k, 1);
    this.#freeBytes -= buffer!.length;
    return buffer!;
  }

  /** Buffers nothing reads any more, kept within keepBytes: a larger one makes way by dropping smaller ones. */
  giveBack(buffers: readonly Buffer[]): void {
    const free = this.#free;
    for (const buffer of buffers) {
      const full = () => this.#freeBytes + buffer.length > this.keepBytes;
      if (full()) {
        free.sort((a, b) => a.length - b.length);
        while (full() && free.length > 0 && free[0]!.length < buffer.length) this.#freeBytes -= free.shift()!.length;
        if (full()) continue;
      }
      free.push(buffer);
      this.#freeBytes += buffer.length;
    }
  }

  /** The buffers kept for reuse now, by size. */
  keptSizes(): number[] {
    return this.#free.map((b) => b.length).sort((x, y) => x - y);
  }
}

/** The buffers lent to one answer; each is the answer's alone until giveBack. */
export class AnswerLease {
  readonly #pool: AnswerBuffers;
  #lent: Buffer[] = [];
  #lentBytes = 0;
  constructor(pool: AnswerBuffers) {
    this.#pool = pool;
  }

  /** `size` bytes of their own, not zeroed (the caller writes them all). */
  take(size: number): Buffer {
    if (size < this.#pool.smallest) return Buffer.allocUnsafe(size);
    const buffer = this.#pool.take(size);
    if (this.#lentBytes + buffer.length <= this.#pool.keepBytes) {
      this.#lent.push(buffer);
      this.#lentBytes += buffer.length;
    }
    return buffer.subarray(0, size);
  }

  /** Call once the answer's last byte has been handed to the socket; a second call gives nothing back. */
  giveBack(): void {
    const lent = this.#lent;
    this.#lent = [];
    this.#lentBytes = 0;
    this.#pool.giveBack(lent);
  }
}

const OPEN = bytes('{"allocation_requests":[');
const MIDDLE = bytes('],"provider_summaries":{');
const CLOSE_SUMMARIES = bytes('}');
const CLOSE = bytes('}');

/**
 * The response of GET /allocation_candidates, serialised directly, as chunks of about `chunkBytes` bytes
 * (Infinity: one buffer): provider uuids (hex and dashes, checked on creation), class names ([A-Z0-9_]), trait
 * names and suffixes ([a-zA-Z0-9_-]) need no escaping and are ASCII, so the allocation requests are concatenated
 * and a byte per character is their encoding; summaries come from a per-provider cache. `members`: more members of
 * the answer's object, serialised (`,"explain":…`; UTF-8, for explain's sentences). The summaries are read now, so
 * a change of the model while the chunks are produced shows in none of them. `lease`: the buffers the chunks are
 * copied into (else each is a new one).
 */
export function candidatesChunks(model: PlacementModel, candidates: readonly Candidate[], mv: number, requested: ReadonlySet<string>,
  members = '', chunkBytes = CHUNK_BYTES, lease?: AnswerLease): Generator<Buffer, void> {
  // Before 1.27 a summary lists only the requested classes.
  const classes = mv < 27 ? requested : null;
  // Without trees in the model, one provider a candidate (each a different one: a one-group answer) is one summary a
  // candidate, in the same order: no set of trees to build and walk. At 1,000 providers on this VM, right after an
  // idle pause (each request in the side-by-side bench) that walk cost about 150 µs of cache misses.
  if (model.nestedCount === 0 && candidates.every((c) => c.single !== undefined)) {
    const summaries: Buffer[] = new Array(candidates.length);
    for (let i = 0; i < candidates.length; i++) summaries[i] = summaryEntry(model, candidates[i]!.single!, mv, classes);
    return chunks(model, candidates, mv, summaries, members, chunkBytes, lease);
  }
  const trees = new Set<Provider>();
  // Before 1.29 a deployment with trees sees only the providers the requests use (exclude_nested_providers).
  const used = mv < 29 && model.nestedCount > 0 ? new Set<Provider>() : null;
  for (const c of candidates) {
    if (c.single) {
      trees.add(c.single.root);
      used?.add(c.single);
      continue;
    }
    for (const p of c.allocations.keys()) {
      trees.add(p.root);
      used?.add(p);
    }
  }
  const summaries: Buffer[] = [];
  for (const root of trees) {
    // A provider without children is its whole tree (the common case: no tree walk).
    if (root.children.size === 0) {
      if (!used || used.has(root)) summaries.push(summaryEntry(model, root, mv, classes));
      continue;
    }
    for (const p of model.treeOf(root)) if (!used || used.has(p)) summaries.push(summaryEntry(model, p, mv, classes));
  }
  return chunks(model, candidates, mv, summaries, members, chunkBytes, lease);
}

function* chunks(model: PlacementModel, candidates: readonly Candidate[], mv: number, summaries: readonly Buffer[], members: string, chunkBytes: number,
  lease: AnswerLease | undefined): Generator<Buffer, void> {
  let parts: Buffer[] = [OPEN];
  let size = OPEN.length;
  const add = (b: Buffer) => {
    parts.push(b);
    size += b.length;
  };
  const full = () => size >= chunkBytes;
  const take = () => {
    const chunk = lease ? copyInto(lease.take(size), parts) : Buffer.concat(parts, size);
    parts = [];
    size = 0;
    return chunk;
  };
  const blocks = candidates[0]?.single && mv >= 12 ? oneProviderRequests(model, candidates, mv, chunkBytes, lease) : undefined;
  if (blocks) {
    for (let b = 0; b < blocks.length; b++) {
      const block = listed(blocks[b]!, b === 0);
      // A block of a whole chunk after a chunk just made is this answer's own bytes already: out as it is, not copied.
      if (size === 0 && block.length >= chunkBytes) {
        yield block;
        continue;
      }
      add(block);
      if (full()) yield take();
    }
  } else {
    for (let i = 0; i < candidates.length; i++) {
      add(listed(requestJson(candidates[i]!, mv), i === 0));
      if (full()) yield take();
    }
  }
  add(MIDDLE);
  for (let k = 0; k < summaries.length; k++) {
    add(listed(summaries[k]!, k === 0));
    if (full()) yield take();
  }
  add(CLOSE_SUMMARIES);
  if (members !== '') add(Buffer.from(members, 'utf8'));
  add(CLOSE);
  yield take();
}

/** `parts` one after another into `into`, which is exactly their size. */
function copyInto(into: Buffer, parts: readonly Buffer[]): Buffer {
  let at = 0;
  for (const part of parts) {
    into.set(part, at);
    at += part.length;
  }
  return into;
}

/** The whole response of GET /allocation_candidates as one buffer (candidatesChunks in one piece). */
export function candidatesBody(model: PlacementModel, candidates: readonly Candidate[], mv: number, requested: ReadonlySet<string>, members = ''): Buffer {
  const [body] = candidatesChunks(model, candidates, mv, requested, members, Infinity);
  return body!;
}

/** Chunks as a byte stream: a chunk is made only when the consumer asks for more (back-pressure). */
export function chunkStream(chunks: Iterator<Buffer, void>): Readable {
  return new Readable({
    read() {
      for (;;) {
        const next = chunks.next();
        if (next.done) {
          this.push(null);
          return;
        }
        if (!this.push(next.value)) return;
      }
    },
  });
}
