// A real listening app (127.0.0.1, port 0) with 60 requests in flight at once racing for the last capacity:
// exactly as many claims succeed as fit, the rest get 409 no-valid-backend, and the pool is never over-committed.
import { Agent, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { build } from '../helper.ts';

function post(port: number, agent: Agent, path: string, body: unknown): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const payload = JSON.stringify(body);
    const req = request(
      { host: '127.0.0.1', port, path, method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

t.test('60 concurrent claims for 12 GiB of room: exactly 12 win', async (t) => {
  const app = await build(t);
  // Thick pool with 12 GiB free; a thin pool that rejects thick requests' formula (provisioned beyond total).
  await app.inject({
    method: 'PUT', url: '/backends/h1@x',
    payload: { pools: [
      { pool_name: 'a', total_capacity_gb: 100, free_capacity_gb: 12, thick_provisioning_support: true },
      { pool_name: 'b', total_capacity_gb: 100, free_capacity_gb: 50, provisioned_capacity_gb: 300, thin_provisioning_support: true, max_over_subscription_ratio: 1 },
    ] },
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const port = (app.server.address() as AddressInfo).port;
  const agent = new Agent({ keepAlive: true, maxSockets: 60 });
  t.teardown(() => agent.destroy());

  const answers = await Promise.all(
    Array.from({ length: 60 }, (_, i) => post(port, agent, '/volumes/schedule', { id: `v${i}`, size: 1 })),
  );
  const won = answers.filter((a) => a.status === 200);
  const lost = answers.filter((a) => a.status === 409);
  t.equal(won.length, 12, 'exactly as many claims as fit');
  t.equal(lost.length, 48, 'the rest are refused');
  t.ok(won.every((a) => a.body.pool === 'h1@x#a'));
  t.ok(lost.every((a) => /\/no-valid-backend$/.test(a.body.type)), 'refusals are no-valid-backend problems');
  t.equal(new Set(won.map((a) => a.body.volume.id)).size, 12);

  const pools = (await app.inject({ method: 'GET', url: '/pools?detail=true' })).json();
  const a = pools.pools.find((p: { name: string }) => p.name === 'h1@x#a').capabilities;
  t.equal(a.allocated_capacity_gb, 12);
  t.equal(a.current.free_capacity_gb, 0, 'never below zero');
  t.equal((await app.inject({ method: 'GET', url: '/volumes' })).json().volumes.length, 12);
});
