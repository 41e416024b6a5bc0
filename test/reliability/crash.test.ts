// Crash safety across the three dialects: a Berth child process takes claims from concurrent clients and is killed
// with SIGKILL after a seeded random number of acknowledged claims, then restarted on the same data directory. Every
// claim acknowledged before a kill must be back, and no capacity may be counted twice (each pool's, provider's and disk's figure must
// equal the sum of the claims that exist).
import t from 'tap';
import { buildDist, startBerth } from '../process-helper.ts';
import { drive, prng, seed, verify, type Acked, type Kind } from './claims.ts';

const KILLS = 20;
t.setTimeout(480_000);
const SEED = Number(process.env.BERTH_CRASH_SEED ?? 20261130);
t.test(`${KILLS} SIGKILLs at seeded points lose no acknowledged claim and count nothing twice (seed ${SEED})`, async (t) => {
  const mainJs = await buildDist((fn) => t.teardown(fn));
  const dataDir = t.testdir();
  const rnd = prng(SEED);
  const acked: Acked = { volumes: new Map(), allocations: new Map(), replicas: new Map() };

  let berth = await startBerth(mainJs, { BERTH_DATA_DIR: dataDir });
  await seed(berth.base);
  for (let round = 0; round < KILLS; round++) {
    // The kill point is an event, not a time: after a seeded number of acknowledged claims, one of them in this
    // round's dialect, while the other clients' claims are still in flight. Machine load cannot move it.
    const target = 1 + Math.floor(rnd() * 12);
    const dialect = (round % 3) as Kind;
    let acks = 0;
    let dialectAcked = false;
    let reached!: () => void;
    const killPoint = new Promise<void>((r) => { reached = r; });
    const driving = drive(berth, round, acked, rnd, (kind) => {
      acks++;
      if (kind === dialect) dialectAcked = true;
      if (acks >= target && dialectAcked) reached();
    });
    await killPoint;
    berth.child.kill('SIGKILL');
    const [, signal] = await berth.exited;
    t.equal(signal, 'SIGKILL', `round ${round}: killed`);
    await driving;
    berth = await startBerth(mainJs, { BERTH_DATA_DIR: dataDir });
    await verify(t, berth.base, acked, `after kill ${round + 1}`);
  }
  t.ok(acked.volumes.size > 0 && acked.allocations.size > 0 && acked.replicas.size > 0, `claims were acknowledged in every dialect (${acked.volumes.size} volumes, ${acked.allocations.size} allocations, ${acked.replicas.size} replicas)`);
  berth.child.kill('SIGTERM');
  t.same(await berth.exited, [0, null], 'a clean stop at the end');
});
