import fc from 'fast-check';
import t from 'tap';
import { balanceScore, DEGENERATE_SCORE, scoresAfterPlacing, selectByBalance, type BalanceDisk } from '../../src/replicas/balance.ts';

const GiB = 1024 ** 3;
const seedDisks: BalanceDisk[] = [
  { node: 'A', disk: 'A1', usable: 900 * GiB },
  { node: 'A', disk: 'A2', usable: 100 * GiB },
  { node: 'B', disk: 'B1', usable: 600 * GiB },
  { node: 'B', disk: 'B2', usable: 700 * GiB },
];

t.test('seed: two nodes, replica 100 GiB → node B (0.182 < 0.364), disk B2 (0 < 0.333)', async (t) => {
  const r = selectByBalance(seedDisks, 100 * GiB);
  t.equal(r.how, 'balance');
  t.equal(r.chosenNode, 'B');
  t.equal(seedDisks[r.chosen]!.disk, 'B2');
  const a = r.nodeScores.find((n) => n.node === 'A')!;
  const b = r.nodeScores.find((n) => n.node === 'B')!;
  t.equal(a.usable, 1000 * GiB);
  t.equal(b.usable, 1300 * GiB);
  t.equal(a.score!.toFixed(3), '0.364', 'A: (1300 − 900) / 1100');
  t.equal(b.score!.toFixed(3), '0.182', 'B: (1200 − 1000) / 1100');
  t.same(r.diskScores.map((d) => [d.disk, d.score!.toFixed(3)]), [['B1', '0.333'], ['B2', '0.000']]);
});

t.test('balance score: (max − min) / mean, mean ≤ 0 is degenerate', async (t) => {
  t.equal(balanceScore([1300, 900]), 400 / 1100);
  t.equal(balanceScore([5, 5, 5]), 0);
  t.equal(balanceScore([0, 0]), DEGENERATE_SCORE);
  t.equal(balanceScore([]), DEGENERATE_SCORE);
});

t.test('scoresAfterPlacing matches the naive computation', async (t) => {
  const naive = (values: number[], size: number) => values.map((v, i) => {
    if (v < size) return null;
    const next = values.slice();
    next[i] = v - size;
    return balanceScore(next);
  });
  fc.assert(fc.property(
    fc.array(fc.integer({ min: 0, max: 1_000_000 }), { minLength: 1, maxLength: 12 }),
    fc.integer({ min: 0, max: 600_000 }),
    (values, size) => {
      t.same(scoresAfterPlacing(values, size), naive(values, size));
    },
  ), { numRuns: 300 });
});

t.test('selection branches', async (t) => {
  const cases: Array<{ name: string; disks: BalanceDisk[]; size: number; want: string; how: string }> = [
    { name: 'a single candidate is taken whatever its space', disks: [{ node: 'n1', disk: 'd1', usable: 0 }], size: 10, want: 'n1/d1', how: 'single_candidate' },
    {
      name: 'no node holds the replica in usable terms: the disk with the most usable space',
      disks: [{ node: 'n1', disk: 'd1', usable: 5 }, { node: 'n2', disk: 'd1', usable: 8 }, { node: 'n2', disk: 'd2', usable: 1 }],
      size: 100, want: 'n2/d1', how: 'most_usable_no_node_fits',
    },
    {
      name: 'one node fits exactly: its simulated mean is 0 → degenerate, fallback to most usable',
      disks: [{ node: 'n1', disk: 'd1', usable: 10 }, { node: 'n2', disk: 'd1', usable: 0 }],
      size: 10, want: 'n1/d1', how: 'most_usable_no_node_fits',
    },
    {
      name: 'node chosen, but none of its disks holds the replica alone: its disk with the most usable space',
      disks: [{ node: 'n1', disk: 'd1', usable: 6 }, { node: 'n1', disk: 'd2', usable: 7 }, { node: 'n2', disk: 'd1', usable: 1 }],
      size: 10, want: 'n1/d2', how: 'most_usable_no_fitting_disk',
    },
    {
      name: 'node chosen, its only fitting disk leaves the node at mean 0: degenerate → that fitting disk',
      disks: [{ node: 'n1', disk: 'd1', usable: 10 }, { node: 'n1', disk: 'd2', usable: 0 }, { node: 'n2', disk: 'd1', usable: 2 }],
      size: 10, want: 'n1/d1', how: 'most_usable_degenerate_node',
    },
    {
      name: 'ties break by node name, then disk name',
      disks: [{ node: 'a', disk: 'x', usable: 50 }, { node: 'a', disk: 'y', usable: 50 }, { node: 'b', disk: 'x', usable: 50 }, { node: 'b', disk: 'y', usable: 50 }],
      size: 10, want: 'a/x', how: 'balance',
    },
    {
      name: 'node totals are over candidate disks only: the emptier node wins',
      disks: [{ node: 'a', disk: 'x', usable: 100 }, { node: 'b', disk: 'x', usable: 60 }, { node: 'b', disk: 'y', usable: 60 }],
      size: 10, want: 'b/x', how: 'balance',
    },
  ];
  for (const c of cases) {
    const r = selectByBalance(c.disks, c.size);
    t.equal(`${c.disks[r.chosen]!.node}/${c.disks[r.chosen]!.disk}`, c.want, c.name);
    t.equal(r.how, c.how, `${c.name}: how`);
  }
});

/** The selection as the reference words it, with plain arrays: the node stage, then the disk stage, then fallbacks. */
function naiveSelection(candidates: BalanceDisk[], size: number) {
  if (candidates.length === 1) return { chosen: 0, how: 'single_candidate', nodeScores: [], chosenNode: candidates[0]!.node, diskScores: [] };
  const names = [...new Set(candidates.map((c) => c.node))];
  const totals = names.map((n) => candidates.filter((c) => c.node === n).reduce((sum, c) => sum + c.usable, 0));
  const nodeScores = scoresAfterPlacing(totals, size);
  const firstLowest = (scores: Array<number | null>) => {
    let at = -1;
    scores.forEach((s, i) => { if (s !== null && s < (at < 0 ? DEGENERATE_SCORE : scores[at]!)) at = i; });
    return at;
  };
  const most = (indexes: number[]) => indexes.reduce((best, i) => (candidates[i]!.usable > candidates[best]!.usable ? i : best), indexes[0]!);
  const named = names.map((node, g) => ({ node, usable: totals[g]!, score: nodeScores[g]! }));
  const g = firstLowest(nodeScores);
  if (g < 0) return { chosen: most(candidates.map((_, i) => i)), how: 'most_usable_no_node_fits', nodeScores: named, chosenNode: null, diskScores: [] };
  const onNode = candidates.flatMap((c, i) => (c.node === names[g] ? [i] : []));
  const diskScores = scoresAfterPlacing(onNode.map((i) => candidates[i]!.usable), size);
  const disks = onNode.map((i, k) => ({ disk: candidates[i]!.disk, usable: candidates[i]!.usable, score: diskScores[k]! }));
  const k = firstLowest(diskScores);
  const base = { nodeScores: named, chosenNode: names[g]!, diskScores: disks };
  if (k >= 0) return { chosen: onNode[k]!, how: 'balance', ...base };
  const fitting = onNode.filter((_, j) => diskScores[j] !== null);
  return fitting.length > 0
    ? { chosen: most(fitting), how: 'most_usable_degenerate_node', ...base }
    : { chosen: most(onNode), how: 'most_usable_no_fitting_disk', ...base };
}

t.test('the selection (typed arrays, reused) answers what the plain wording of it does', async (t) => {
  const disksArb = fc.array(fc.record({ node: fc.integer({ min: 0, max: 5 }), usable: fc.constantFrom(0, 5, 10, 50, 100, 1_000) }), { minLength: 1, maxLength: 14 })
    .map((xs) => xs.sort((a, b) => a.node - b.node).map((x, i) => ({ node: `n${x.node}`, disk: `d${i}`, usable: x.usable })));
  fc.assert(fc.property(disksArb, fc.constantFrom(0, 1, 5, 10, 60, 500, 5_000), (disks, size) => {
    t.same(selectByBalance(disks, size), naiveSelection(disks, size));
  }), { numRuns: 500 });
});
