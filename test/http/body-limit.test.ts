// Oversized bodies are refused by the configured limit while they stream in, without buffering them.
import { request } from 'node:http';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import t from 'tap';
import { build } from '../helper.ts';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

function upload(port: number, path: string, bytes: number, chunked: boolean): Promise<{ status: number; type: string }> {
  return new Promise((resolve, reject) => {
    const req = request({
      host: '127.0.0.1', port, path, method: 'POST',
      headers: chunked ? { 'content-type': 'application/json' } : { 'content-type': 'application/json', 'content-length': bytes },
    }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, type: String(res.headers['content-type']) }));
    });
    req.on('error', (err: NodeJS.ErrnoException) => (err.code === 'ECONNRESET' || err.code === 'EPIPE' ? resolve({ status: -1, type: '' }) : reject(err)));
    const chunk = Buffer.alloc(64 * 1024, 0x20);
    let sent = 0;
    const pump = () => {
      while (sent < bytes) {
        sent += chunk.length;
        if (!req.write(chunk)) { req.once('drain', pump); return; }
      }
      req.end();
    };
    pump();
  });
}

t.test('bodies over body_limit get 413 problem+json, and memory stays flat', async (t) => {
  const app = await build(t, { body_limit: 64 * 1024 });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as { port: number };
  const declared = await upload(port, '/volumes/schedule', 8 * 1024 * 1024, false);
  t.equal(declared.status, 413, 'declared length over the limit');
  t.match(declared.type, /problem\+json/);

  gc();
  const before = process.memoryUsage().heapUsed;
  const statuses = new Set<number>();
  for (let i = 0; i < 40; i++) statuses.add((await upload(port, '/replicas/schedule', 4 * 1024 * 1024, true)).status);
  gc();
  const growthMiB = (process.memoryUsage().heapUsed - before) / 1048576;
  // 40 × 4 MiB = 160 MiB was offered; a server that buffered it would keep far more than this.
  t.ok(growthMiB < 16, `heap grew ${growthMiB.toFixed(1)} MiB after 160 MiB of refused uploads`);
  t.ok(statuses.has(413), 'chunked uploads over the limit get 413');
  t.ok([...statuses].every((s) => s === 413 || s === -1), `only 413 (or a reset after it): ${[...statuses]}`);
  t.equal((await fetch(`http://127.0.0.1:${port}/healthz`)).status, 200, 'still serving');
});
