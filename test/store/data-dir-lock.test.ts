// One process per data directory: a second Berth on the same data_dir refuses to start with one line naming the
// process that holds it; the lock dies with its holder, however it ends.
import { spawn } from 'node:child_process';
import t from 'tap';
import { buildDist, runToExit, startBerth } from '../process-helper.ts';

let mainJs = '';
t.before(async () => {
  mainJs = await buildDist((fn) => t.teardown(fn));
});

/** Runs main.js to its exit, configured like startBerth. */
function runMain(env: Record<string, string>) {
  return runToExit([mainJs], { BERTH_PORT: '0', BERTH_HOST: '127.0.0.1', BERTH_CONFIG: '', ...env });
}

t.test('a second Berth on the same data_dir refuses to start and names the holder', async (t) => {
  const dataDir = t.testdir();
  const first = await startBerth(mainJs, { BERTH_DATA_DIR: dataDir });
  t.teardown(() => { first.child.kill('SIGKILL'); });

  const second = await runMain({ BERTH_DATA_DIR: dataDir });
  t.equal(second.code, 1, 'exit code 1');
  t.equal(second.stderr,
    `berth: data_dir ${dataDir} is in use by another Berth process (pid ${first.child.pid}); stop it or choose another data_dir\n`,
    'one line naming the holder');
  t.equal(second.stdout, '', 'nothing else');
  t.equal((await fetch(`${first.base}/readyz`)).status, 200, 'the first one keeps serving');

  // SIGKILL leaves the pid file behind, but the lock itself dies with the process: no stale lock.
  first.child.kill('SIGKILL');
  await first.exited;
  const third = await startBerth(mainJs, { BERTH_DATA_DIR: dataDir });
  t.equal((await fetch(`${third.base}/readyz`)).status, 200, 'a new Berth starts after the holder died');
  third.child.kill('SIGTERM');
  t.same(await third.exited, [0, null]);
});

t.test('an unreachable database_url: Berth waits for the database, one line per attempt, never the password', async (t) => {
  // Port 1 on loopback refuses at once: the store reports the database unavailable and main retries.
  const child = spawn(process.execPath, [mainJs], {
    env: {
      ...process.env, BERTH_PORT: '0', BERTH_HOST: '127.0.0.1', BERTH_CONFIG: '', BERTH_DATA_DIR: t.testdir(),
      BERTH_DATABASE_URL: 'postgres://berth:s3cret@127.0.0.1:1/berth',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  const twoLines = new Promise<void>((resolve) => {
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      if (stderr.split('\n').length > 2) resolve();
    });
  });
  await twoLines;
  child.kill('SIGKILL');
  const lines = stderr.split('\n').filter(Boolean);
  for (const line of lines.slice(0, 2)) {
    t.match(line, /^berth: .*database postgres:\/\/berth:\*\*\*@127\.0\.0\.1:1\/berth unavailable .*; retrying in \d+ ms$/);
  }
  t.notMatch(stderr, /s3cret/);
});

t.test('a malformed database_url is a configuration error that does not echo the URL', async (t) => {
  const out = await runMain({ BERTH_DATA_DIR: t.testdir(), BERTH_DATABASE_URL: 'mysql://berth:s3cret@db/berth' });
  t.equal(out.code, 2);
  t.match(out.stderr, /^berth: configuration error: invalid option database_url: must start with postgres:\/\/ or postgresql:\/\//);
  t.notMatch(out.stderr, /s3cret/);
});
