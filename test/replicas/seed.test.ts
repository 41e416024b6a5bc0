// The user's document's worked examples, end to end through the HTTP API (each with its own setting value).
import t from 'tap';
import { build } from '../helper.ts';
import { GiB } from './http.ts';

const GB = 1e9;

t.test('Disk X fails the minimal-available condition at 25 %; Disk Y passes both at 10 %', async (t) => {
  const app = await build(t);
  const report = {
    disks: {
      X: { path: '/x', storageMaximum: 4 * GB, storageAvailable: 1 * GB },
      Y: { path: '/y', storageMaximum: 8 * GB, storageAvailable: 2 * GB, storageReserved: 1 * GB, storageScheduled: 2 * GB },
    },
  };
  const schedulable = async (disk: string) =>
    ((await app.inject({ method: 'GET', url: '/nodes/A' })).json().disks[disk].conditions as Array<{ type: string; status: string; message: string }>)
      .find((c) => c.type === 'Schedulable')!;
  await app.inject({ method: 'PUT', url: '/nodes/A', payload: report });
  const x = await schedulable('X');
  t.equal(x.status, 'False');
  t.match(x.message, 'CurrentAvailable = 1000000000 is less than or equal to MinimalAvailable = 1000000000 (25% of Storage Max)');

  await app.inject({ method: 'PUT', url: '/replicas/settings', payload: { 'storage-minimal-available-percentage': 10 } });
  t.equal((await schedulable('Y')).status, 'True', '2 GB > 0.8 GB and 2 GB ≤ 7 GB');
  await app.inject({ method: 'PUT', url: '/replicas/settings', payload: { 'storage-minimal-available-percentage': 0 } });
  t.equal((await schedulable('X')).status, 'True', 'X is schedulable once the percentage is 0');
});

t.test('two nodes, replica 100 GiB: node B, disk B2', async (t) => {
  const app = await build(t);
  // usable = avail − reserved − scheduled; maximum large enough for both space conditions.
  const disk = (usable: number) => ({ path: '/d', storageMaximum: 2 * usable * GiB, storageAvailable: usable * GiB });
  await app.inject({ method: 'PUT', url: '/nodes/A', payload: { disks: { A1: disk(900), A2: disk(100) } } });
  await app.inject({ method: 'PUT', url: '/nodes/B', payload: { disks: { B1: disk(600), B2: disk(700) } } });
  const res = await app.inject({ method: 'POST', url: '/replicas/schedule?explain=true', payload: { volume: { name: 'v', size: 100 * GiB, numberOfReplicas: 1 } } });
  t.equal(res.statusCode, 200);
  t.match(res.json().replicas[0], { node: 'B', disk: 'B2' });
  const balance = res.json().explain.replicas[0].balance;
  t.same(balance.nodeStage.map((n: { node: string; score: number }) => [n.node, n.score.toFixed(3)]), [['A', '0.364'], ['B', '0.182']]);
  t.same(balance.diskStage.map((d: { disk: string; score: number }) => [d.disk, d.score.toFixed(3)]), [['B1', '0.333'], ['B2', '0.000']]);
});
