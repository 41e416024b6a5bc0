// Large answers of GET /allocation_candidates stream in chunks: over a real socket the body is byte for byte the
// one-string serialisation; mid-size answers are copied into reused buffers, and one still being written keeps its
// bytes while later answers are made; and the model's slot columns follow providers removed and created in their
// place.
import { mkdtempSync, rmSync } from 'node:fs';
import { request, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
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

/**
 * A GET on a connection of its own that reads nothing until `rest` is called, and the server's response to it once
 * the server has ended it (its whole body handed to Node): with nobody reading, most of the body is still to write.
 */
function heldRequest(server: Server, socketPath: string, path: string) {
  const ended = new Promise<ServerResponse>((resolve) => {
    const onRequest = (req: IncomingMessage, res: ServerResponse) => {
      if (req.url !== path) return;
      server.off('request', onRequest);
      const end = res.end.bind(res) as (...args: unknown[]) => ServerResponse;
      res.end = ((...args: unknown[]) => {
        const out = end(...args);
        resolve(res);
        return out;
      }) as typeof res.end;
    };
    // After Fastify's own listener, which answers later (the handler is async): res.end is wrapped before it runs.
    server.on('request', onRequest);
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
    ended,
    /** Reads the whole answer. */
    rest: async () => {
      socket.resume();
      const raw = await closed;
      const split = raw.indexOf('\r\n\r\n');
      return { head: raw.subarray(0, split).toString('latin1'), body: raw.subarray(split + 4).toString('utf8') };
    },
  };
}

t.test('an answer still being written keeps its bytes while later answers reuse the answer buffers', async (t) => {
  const app = await build(t);
  const service = placementServices.get(app.berth)!;
  const m = service.model;
  // Just under the streaming threshold (2,000 candidates): one buffer of about 900 KB, more than a loopback socket
  // takes while its reader does not read.
  for (let i = 0; i < 1990; i++) {
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
  const half = 'resources=VCPU:2&required=HW_CPU_X86_AVX2';
  t.ok(Buffer.byteLength(expected(all)) > 800_000, `the held answer is large (${Buffer.byteLength(expected(all))} bytes)`);
  // A Unix socket: its send buffer (about 200 KB here) holds far less than the answer while nobody reads, where
  // loopback TCP took the whole answer at once.
  // (A directory of its own under the system's: a socket's path must stay short.)
  const dir = mkdtempSync(join(tmpdir(), 'berth-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const socketPath = join(dir, 's.sock');
  await app.listen({ path: socketPath });
  const held = heldRequest(app.server, socketPath, `/allocation_candidates?${all}`);
  const res = await held.ended;
  t.ok(res.socket !== null && res.socket.writableLength > 0, `the held answer is still being written (${res.socket?.writableLength} bytes to go)`);
  // Meanwhile other answers are made, written and read, each needing a buffer: the held one must not be among them.
  for (let k = 0; k < 6; k++) {
    const q = k % 2 ? half : 'resources=VCPU:3';
    const other = await getOver(socketPath, `/allocation_candidates?${q}`);
    t.equal(other.headers['transfer-encoding'], undefined, 'not streamed');
    t.equal(other.body, expected(q), `answer ${k} while the first is held`);
  }
  t.equal(res.writableFinished, false, 'the held answer was not all written meanwhile');
  const { head, body } = await held.rest();
  t.match(head, /^HTTP\/1\.1 200/);
  t.equal(body, expected(all), 'the held answer arrives as it was made');
  t.equal((await getOver(socketPath, `/allocation_candidates?${all}`)).body, expected(all), 'and again');
});

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
