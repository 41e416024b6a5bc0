// Large answers of GET /allocation_candidates stream in chunks: over a real socket the body is byte for byte the
// one-string serialisation; mid-size answers are copied into reused buffers, and one still being written keeps its
// bytes while later answers are made; its decision line is written once it has left, or its reader has gone; and the
// model's slot columns follow providers removed and created in their place.
import { mkdtempSync, rmSync } from 'node:fs';
import { request, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { once } from 'node:events';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { Writable } from 'node:stream';
import { join } from 'node:path';
import t from 'tap';
import { placementServices } from '../../src/placement/routes/index.ts';
import { parseAllocationCandidatesQuery, queryPairs } from '../../src/placement/query.ts';
import { candidatesBody } from '../../src/placement/serialize.ts';
import { build } from '../helper.ts';
import { call, createProviders, u } from './fixtures.ts';

const HEADERS = { 'openstack-api-version': 'placement 1.39', 'x-auth-token': 'x' };

t.test('a streamed answer equals the string answer byte for byte, over HTTP', async (t) => {
  const app = await build(t);
  const service = placementServices.get(app.berth)!;
  const m = service.model;
  // Loaded straight into the model (thousands of providers through the API would take long).
  for (let i = 0; i < 2500; i++) {
    const rp = u(`stream-${i}`);
    m.applyProvider({
      uuid: rp, name: `s${i}`, parent_provider_uuid: null, generation: 1,
      inventories: {
        VCPU: { total: 8 + (i % 5) * 8, reserved: 0, min_unit: 1, max_unit: 64, step_size: 1, allocation_ratio: 4 },
        MEMORY_MB: { total: 4096 * (1 + (i % 3)), reserved: 0, min_unit: 1, max_unit: 65536, step_size: 1, allocation_ratio: 1 },
      },
      traits: i % 2 === 0 ? ['HW_CPU_X86_AVX2'] : [], aggregates: [],
    });
    if (i % 3 === 0) {
      const c = u(`c-${i}`);
      m.applyConsumer(c, { uuid: c, project_id: 'p', user_id: 'u', consumer_type: 'INSTANCE', generation: 1, allocations: { [rp]: { VCPU: 2 } } });
    }
  }
  const base = await app.listen({ port: 0, host: '127.0.0.1' });
  for (const q of ['resources=VCPU:1,MEMORY_MB:512', 'resources=VCPU:1&explain=true', 'resources=VCPU:1&limit=2400']) {
    const res = await fetch(`${base}/allocation_candidates?${q}`, { headers: HEADERS });
    t.equal(res.status, 200, q);
    t.equal(res.headers.get('transfer-encoding'), 'chunked', `${q}: streamed`);
    t.equal(res.headers.get('content-type'), 'application/json', q);
    const body = await res.text();
    const query = parseAllocationCandidatesQuery(queryPairs(`/allocation_candidates?${q}`), 39);
    const explain = q.includes('explain');
    const { result } = service.allocationCandidates(query, 39, explain);
    t.ok(result.candidates.length > 2000, `${q}: ${result.candidates.length} candidates`);
    const requested = new Set(query.groups.flatMap((g) => [...g.resources.keys()]));
    if (explain) {
      // The trace's timing-free parts are the same; compare the candidates' part and that the explain member follows.
      const json = candidatesBody(m, result.candidates, 39, requested).toString('utf8');
      t.equal(body.slice(0, json.length - 1), json.slice(0, -1), `${q}: same candidates and summaries`);
      t.ok(body.slice(json.length - 1).startsWith(',"explain":{'), `${q}: then the explain member`);
      t.ok(JSON.parse(body), `${q}: well-formed`);
    } else {
      t.equal(body, candidatesBody(m, result.candidates, 39, requested).toString('utf8'), `${q}: byte for byte`);
    }
  }
  // A small answer stays one string (with its length).
  const small = await fetch(`${base}/allocation_candidates?resources=VCPU:1&limit=10`, { headers: HEADERS });
  t.equal(small.headers.get('transfer-encoding'), null);
  t.equal(small.headers.get('content-type'), 'application/json');
  t.equal(Number(small.headers.get('content-length')), Buffer.byteLength(await small.text()));
});

/** A GET over a Unix socket, read whole. */
function getOver(socketPath: string, path: string): Promise<{ headers: IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath, path, headers: HEADERS }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

/** A logger stream that keeps the lines the app writes (decision lines carry url and status under req and res). */
function loggedLines() {
  const lines: Array<Record<string, unknown> & { msg?: string; url?: string }> = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n')) {
        if (line.trim() === '') continue;
        const parsed = JSON.parse(line) as Record<string, unknown> & { req?: { url?: string } };
        lines.push({ ...parsed, url: parsed.req?.url });
      }
      done();
    },
  });
  return { lines, stream };
}

/**
 * A GET on a connection of its own that reads nothing until `rest` is called, and the server's response to it once
 * part of its body waits in the server's socket (written by Node, not yet taken by the kernel).
 */
function heldRequest(server: Server, socketPath: string, path: string) {
  const waiting = new Promise<ServerResponse>((resolve) => {
    const onRequest = (req: IncomingMessage, res: ServerResponse) => {
      if (req.url !== path) return;
      server.off('request', onRequest);
      for (const method of ['write', 'end'] as const) {
        const original = (res[method] as (...args: unknown[]) => unknown).bind(res);
        (res as unknown as Record<string, unknown>)[method] = (...args: unknown[]) => {
          const out = original(...args);
          if ((res.socket?.writableLength ?? 0) > 0) resolve(res);
          return out;
        };
      }
    };
    // Before Fastify's own listener, which may answer before it returns: write and end are wrapped first.
    server.prependListener('request', onRequest);
  });
  const socket = connect(socketPath);
  socket.pause();
  const received: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => received.push(chunk));
  const closed = new Promise<Buffer>((resolve, reject) => {
    socket.on('end', () => resolve(Buffer.concat(received)));
    socket.on('error', reject);
  });
  const headers = Object.entries(HEADERS).map(([k, v]) => `${k}: ${v}\r\n`).join('');
  socket.write(`GET ${path} HTTP/1.1\r\nhost: 127.0.0.1\r\n${headers}connection: close\r\n\r\n`);
  return {
    waiting,
    /** The reader goes away without reading. */
    abandon: () => socket.destroy(),
    /** Reads the whole answer (its body de-chunked when it was streamed). */
    rest: async () => {
      socket.resume();
      const raw = await closed;
      const split = raw.indexOf('\r\n\r\n');
      const head = raw.subarray(0, split).toString('latin1');
      const body = raw.subarray(split + 4);
      return { head, body: (/transfer-encoding: chunked/i.test(head) ? dechunk(body) : body).toString('utf8') };
    },
  };
}

/** An HTTP/1.1 chunked body's bytes. */
function dechunk(raw: Buffer): Buffer {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const eol = raw.indexOf('\r\n', at);
    const size = parseInt(raw.subarray(at, eol).toString('latin1'), 16);
    if (size === 0) return Buffer.concat(parts);
    parts.push(raw.subarray(eol + 2, eol + 2 + size));
    at = eol + 2 + size + 2;
  }
}

// One buffer just under the streaming threshold (2,000 candidates, about 900 KB), and a streamed answer in chunks:
// both more than a socket takes while its reader does not read.
for (const { providers, streamed } of [{ providers: 1990, streamed: false }, { providers: 2600, streamed: true }]) {
  t.test(`an answer still being written keeps its bytes while later answers reuse the answer buffers (${streamed ? 'streamed' : 'one buffer'})`, async (t) => {
    const logged = loggedLines();
    const app = await build(t, {}, undefined, undefined, { logger: { level: 'info', stream: logged.stream } });
    const service = placementServices.get(app.berth)!;
    const m = service.model;
    for (let i = 0; i < providers; i++) {
      const rp = u(`held-${i}`);
      m.applyProvider({
        uuid: rp, name: `h${i}`, parent_provider_uuid: null, generation: 1,
        inventories: {
          VCPU: { total: 16, reserved: 0, min_unit: 1, max_unit: 16, step_size: 1, allocation_ratio: 1 },
          MEMORY_MB: { total: 65536, reserved: 512, min_unit: 1, max_unit: 65536, step_size: 1, allocation_ratio: 1 },
          DISK_GB: { total: 2000, reserved: 0, min_unit: 1, max_unit: 2000, step_size: 1, allocation_ratio: 1 },
        },
        traits: [...(i % 2 === 0 ? ['HW_CPU_X86_AVX2'] : []), 'HW_CPU_X86_SSE', 'HW_CPU_X86_SSE2', 'STORAGE_DISK_SSD'], aggregates: [],
      });
    }
    const expected = (q: string) => {
      const query = parseAllocationCandidatesQuery(queryPairs(`/allocation_candidates?${q}`), 39);
      const { result } = service.allocationCandidates(query, 39);
      return candidatesBody(m, result.candidates, 39, new Set(query.groups.flatMap((g) => [...g.resources.keys()]))).toString('utf8');
    };
    const all = 'resources=VCPU:1';
    // Every provider, then half of them (streamed only above 2,000).
    const others = ['resources=VCPU:3', 'resources=VCPU:2&required=HW_CPU_X86_AVX2'];
    t.ok(Buffer.byteLength(expected(all)) > 800_000, `the held answer is large (${Buffer.byteLength(expected(all))} bytes)`);
    // A Unix socket: its send buffer (about 200 KB here) holds far less than the answer while nobody reads, where
    // loopback TCP took a 900 KB answer at once. (In a directory of its own under the system's: a socket's path must
    // stay short.)
    const dir = mkdtempSync(join(tmpdir(), 'berth-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const socketPath = join(dir, 's.sock');
    await app.listen({ path: socketPath });
    const held = heldRequest(app.server, socketPath, `/allocation_candidates?${all}`);
    const res = await held.waiting;
    t.pass(`the held answer is being written (${res.socket?.writableLength} bytes waiting in the socket)`);
    // Meanwhile other answers are made, written and read, each needing buffers: none of the held one's.
    for (let k = 0; k < 6; k++) {
      const q = others[k % 2]!;
      const other = await getOver(socketPath, `/allocation_candidates?${q}`);
      if (k === 0) t.equal(other.headers['transfer-encoding'], streamed ? 'chunked' : undefined, streamed ? 'streamed' : 'not streamed');
      t.equal(other.body, expected(q), `answer ${k} while the first is held`);
    }
    t.equal(res.writableFinished, false, 'the held answer was not all written meanwhile');
    const heldLine = () => logged.lines.filter((l) => l.msg === 'decision' && l.url === `/allocation_candidates?${all}`);
    t.same(heldLine(), [], 'a GET\'s decision line waits for its answer to leave');
    const { head, body } = await held.rest();
    // Its report was deferred past whatever came next (src/http/deferred.ts): written down now, as a reader would.
    app.berth.deferred.flush();
    t.match(heldLine(), [{ decision: 'candidates', candidates: providers, res: { statusCode: 200 } }], 'then it is written');
    t.match(head, /^HTTP\/1\.1 200/);
    t.equal(/transfer-encoding: chunked/i.test(head), streamed, streamed ? 'streamed' : 'one buffer');
    t.equal(body, expected(all), 'the held answer arrives as it was made');
    t.equal((await getOver(socketPath, `/allocation_candidates?${all}`)).body, expected(all), 'and again');
    // An answer whose reader goes away before it has all left is still told, and counted.
    const decided = () => logged.lines.filter((l) => l.msg === 'decision').length;
    const abandoned = heldRequest(app.server, socketPath, `/allocation_candidates?${all}`);
    const abandonedRes = await abandoned.waiting;
    // The answer before it ("and again") is told within a few ms or on a flush, whichever comes first: told now,
    // so that the count below holds the abandoned answer's line alone however long the wait above took.
    app.berth.deferred.flush();
    const before = decided();
    const entries = app.berth.decisions.size;
    abandoned.abandon();
    await once(abandonedRes, 'close');
    app.berth.deferred.flush();
    t.equal(decided(), before + 1, 'an abandoned answer gets its decision line');
    t.equal(app.berth.decisions.size, Math.min(entries + 1, app.berth.decisions.capacity), 'and its console entry');
  });
}

t.test('a provider created after one was removed reuses its slot with its own inventories, traits and usage', async (t) => {
  const app = await build(t);
  const [a, b, c] = [u('slot-a'), u('slot-b'), u('slot-c')];
  await createProviders(app, [
    { uuid: a, inventories: { VCPU: 64, DISK_GB: 1000 }, traits: ['HW_CPU_X86_AVX2'] },
    { uuid: b, inventories: { VCPU: 4 } },
  ]);
  t.equal((await call(app, 'DELETE', `/resource_providers/${a}`)).status, 204);
  await createProviders(app, [{ uuid: c, inventories: { VCPU: 16 } }]);
  const candidates = async (q: string) =>
    ((await call(app, 'GET', `/allocation_candidates?${q}`)).body.allocation_requests as Array<{ allocations: Record<string, unknown> }>)
      .map((r) => Object.keys(r.allocations)[0]);
  t.same(await candidates('resources=VCPU:8'), [c], 'c fits 8 VCPU, b does not, a is gone');
  t.same(await candidates('resources=DISK_GB:1'), [], "a's DISK_GB left with it");
  t.same(await candidates('resources=VCPU:1&required=HW_CPU_X86_AVX2'), [], "a's trait left with it");
  const put = await call(app, 'PUT', `/allocations/${u('slot-consumer')}`, {
    allocations: { [c]: { resources: { VCPU: 10 } } }, consumer_generation: null, project_id: 'p', user_id: 'u', consumer_type: 'INSTANCE',
  });
  t.equal(put.status, 204);
  t.same(await candidates('resources=VCPU:8'), [], "c's usage counts (10 of 16 used)");
  t.same(await candidates('resources=VCPU:6'), [c]);
});
