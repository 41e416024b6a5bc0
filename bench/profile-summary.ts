// Where a CPU profile's time goes: the functions with the most self time and the most inclusive time, in ms, from a
// .cpuprofile written by `node --cpu-prof` (the same file opens as a flame graph in Chrome DevTools' Performance
// panel or speedscope). Usage: node --import tsx bench/profile-summary.ts FILE.cpuprofile [top=25]
import { readFileSync } from 'node:fs';

interface ProfileNode { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] }
interface Profile { nodes: ProfileNode[]; samples: number[]; timeDeltas: number[] }

export function summarizeProfile(profile: Profile, top = 25): string {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const sampled = new Map<number, number>();
  profile.samples.forEach((id, i) => sampled.set(id, (sampled.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
  const label = (n: ProfileNode) => {
    const file = n.callFrame.url.split('/').slice(-2).join('/');
    return `${n.callFrame.functionName || '(anonymous)'} ${file}${file && n.callFrame.lineNumber > 0 ? `:${n.callFrame.lineNumber + 1}` : ''}`;
  };
  const self = new Map<string, number>();
  const inclusive = new Map<string, number>();
  let total = 0;
  for (const [id, us] of sampled) {
    total += us;
    const leaf = byId.get(id)!;
    self.set(label(leaf), (self.get(label(leaf)) ?? 0) + us);
    // A recursive function counts once per sample.
    const seen = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const key = label(byId.get(at)!);
      if (seen.has(key)) continue;
      seen.add(key);
      inclusive.set(key, (inclusive.get(key) ?? 0) + us);
    }
  }
  const table = (title: string, m: Map<string, number>) => [
    title,
    ...[...m].sort((a, b) => b[1] - a[1]).slice(0, top)
      .map(([k, us]) => `${(us / 1000).toFixed(0).padStart(8)} ms ${((100 * us) / total).toFixed(1).padStart(5)} %  ${k}`),
  ].join('\n');
  return [`total ${(total / 1000).toFixed(0)} ms sampled`, table('self time:', self), table('inclusive time:', inclusive)].join('\n');
}

if (process.argv[1]?.endsWith('profile-summary.ts')) {
  const [file, top] = process.argv.slice(2);
  if (!file) {
    console.error('usage: node --import tsx bench/profile-summary.ts FILE.cpuprofile [top]');
    process.exit(2);
  }
  console.log(summarizeProfile(JSON.parse(readFileSync(file, 'utf8')) as Profile, top ? Number(top) : 25));
}
