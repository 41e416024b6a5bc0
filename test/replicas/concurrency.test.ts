// A real listening app, 60 schedule requests in flight at once racing for the last space.
import t from 'tap';
import { build } from '../helper.ts';
import { checkDiskSpace } from '../../src/replicas/space.ts';
import { diskBody, GiB, putNode } from './http.ts';

t.test('60 concurrent requests: exactly as many succeed as fit, no disk over its space conditions', async (t) => {
  const app = await build(t);
  // Three zones, one disk each; the scheduling space condition lets each disk take ten 10 GiB replicas.
  for (const n of ['a', 'b', 'c']) await putNode(app, n, { zone: `z-${n}`, disks: { d1: diskBody() } });
  await app.inject({ method: 'PUT', url: '/replicas/settings', payload: { 'allow-volume-creation-with-degraded-availability': false } });
  const address = await app.listen({ host: '127.0.0.1', port: 0 });

  const post = (i: number, replicas: number) =>
    fetch(`${address}/replicas/schedule`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ volume: { name: `vol-${replicas}-${i}`, size: 10 * GiB, numberOfReplicas: replicas } }),
    }).then(async (res) => ({ status: res.status, body: (await res.json()) as { detail?: string; type?: string } }));

  // Round 1: 3-replica volumes, all or nothing: ten fit (one replica per zone each).
  const round1 = await Promise.all(Array.from({ length: 60 }, (_, i) => post(i, 3)));
  t.equal(round1.filter((r) => r.status === 200).length, 10, 'exactly ten 3-replica volumes fit');
  const refused = round1.filter((r) => r.status !== 200);
  t.equal(refused.length, 50);
  t.ok(refused.every((r) => r.status === 409 && r.body.type!.endsWith('/replica-scheduling-failure') && r.body.detail === 'insufficient storage'),
    'the rest get 409 insufficient storage (a disk at exactly its limit still passes its Schedulable condition)');

  // Free two slots on disk a, then race 60 single-replica volumes for them.
  const onA = (await app.inject({ method: 'GET', url: '/nodes/a' })).json().disks.d1.scheduledReplicas as string[];
  for (const name of onA.slice(0, 2)) await app.inject({ method: 'DELETE', url: `/replicas/${name}` });
  const round2 = await Promise.all(Array.from({ length: 60 }, (_, i) => post(i, 1)));
  t.equal(round2.filter((r) => r.status === 200).length, 2, 'exactly the two freed slots are taken');
  t.equal(round2.filter((r) => r.status === 409).length, 58);

  const settings = (await app.inject({ method: 'GET', url: '/replicas/settings' })).json();
  for (const n of ['a', 'b', 'c']) {
    const d = (await app.inject({ method: 'GET', url: `/nodes/${n}` })).json().disks.d1;
    t.equal(d.storageScheduled, 100 * GiB, `${n}: full to the byte`);
    t.ok(checkDiskSpace(d, 0, 0, settings['storage-minimal-available-percentage'], settings['storage-over-provisioning-percentage']).failure !== 'actual_space_usage');
    t.ok(d.storageScheduled <= 100 * GiB, `${n}: scheduled within the provisioned limit`);
  }
  t.equal((await app.inject({ method: 'GET', url: '/replicas' })).json().replicas.length, 30);
});
