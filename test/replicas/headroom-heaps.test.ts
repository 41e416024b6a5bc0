// The walk's per-zone heaps (src/replicas/headroom.ts) against a sort: after any run of lowered keys and removals,
// every zone's top and its runner-up are the zone's best two by key, then the lower tie.
import t from 'tap';
import { ZoneHeaps } from '../../src/replicas/headroom.ts';
import { mulberry32 as prng } from '../random.ts';

t.test('per-zone heaps keep each zone\'s best two under lowered keys and removals', async (t) => {
  let checks = 0;
  for (let seed = 1; seed <= 200; seed++) {
    const rand = prng(seed);
    const zones = 1 + Math.floor(rand() * 4);
    const n = 1 + Math.floor(rand() * 60);
    // Nodes grouped by zone; few distinct keys (ties), ties broken by a per-node number.
    const zoneOf = Int32Array.from({ length: n }, () => Math.floor(rand() * zones)).sort();
    const start = new Int32Array(zones + 1).fill(n);
    for (let k = n - 1; k >= 0; k--) start[zoneOf[k]!] = k;
    for (let z = zones - 1; z >= 0; z--) start[z] = Math.min(start[z]!, start[z + 1]!);
    const key = Float64Array.from({ length: n }, () => Math.floor(rand() * 20));
    // Distinct ties, as node and disk indices are.
    const tie = Int32Array.from({ length: n }, (_, k) => k);
    for (let k = n - 1; k > 0; k--) {
      const j = Math.floor(rand() * (k + 1));
      [tie[k], tie[j]] = [tie[j]!, tie[k]!];
    }
    const heaps = new ZoneHeaps(key, tie, start);
    const member = new Uint8Array(n);
    for (let k = 0; k < n; k++) {
      heaps.insert(zoneOf[k]!, k);
      member[k] = 1;
    }
    const order = (a: number, b: number) => key[b]! - key[a]! || tie[a]! - tie[b]!;
    const seen: Array<[number, number, number]> = [];
    const expected: Array<[number, number, number]> = [];
    for (let step = 0; step < 3 * n; step++) {
      const k = Math.floor(rand() * n);
      if (member[k] === 0) continue;
      if (rand() < 0.3) {
        heaps.remove(zoneOf[k]!, k);
        member[k] = 0;
      } else {
        key[k]! -= Math.floor(rand() * 5);
        heaps.lowered(zoneOf[k]!, k);
      }
      for (let z = 0; z < zones; z++) {
        const inZone = [...Array(n).keys()].filter((j) => member[j] === 1 && zoneOf[j] === z).sort(order);
        const size = heaps.size[z]!;
        seen.push([size, size > 0 ? heaps.top(z) : -1, size > 0 ? heaps.runnerUp(z, -1) : -1]);
        expected.push([inZone.length, inZone[0] ?? -1, inZone[1] ?? -1]);
        checks++;
      }
    }
    t.same(seen, expected, `seed ${seed}: ${n} nodes in ${zones} zone(s), size, top and runner-up after every step`);
  }
  t.ok(checks > 1000, `${checks} checks`);
});
