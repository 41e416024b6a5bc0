// The process's access rules as `npm start` runs it: loopback without tokens, refusal on other addresses,
// allow_unauthenticated, bad files at start-up, SIGHUP reloads, and HTTPS with a certificate renewed on SIGHUP.
import { execFile, execFileSync } from 'node:child_process';
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import { promisify } from 'node:util';
import t from 'tap';
import { parse } from 'yaml';
import { buildDist, root, startBerth, type RunningBerth } from '../process-helper.ts';
import { bearer, TOKENS, tokensFileText, writeTokens } from './auth-helper.ts';

let mainJs = '';
t.before(async () => {
  mainJs = await buildDist((fn) => t.teardown(fn));
});

/** No store on disk, and no load shedding deciding an answer on a busy machine. */
const QUIET = { BERTH_DATA_DIR: ':memory:', BERTH_MAX_EVENT_LOOP_DELAY_MS: '0' };

async function stop(berth: RunningBerth): Promise<void> {
  berth.child.kill('SIGTERM');
  await berth.exited;
}

/** Runs main.js to its exit; for start-ups that must fail. */
async function runToExit(env: Record<string, string>): Promise<{ code: number; stderr: string }> {
  return promisify(execFile)(process.execPath, [mainJs], {
    env: { ...process.env, BERTH_PORT: '0', BERTH_DATA_DIR: ':memory:', BERTH_CONFIG: '', ...env },
  }).then(() => ({ code: 0, stderr: '' }), (err: { code: number; stderr: string }) => ({ code: err.code, stderr: err.stderr }));
}

t.test('on loopback without tokens Berth runs unauthenticated and says so when it is ready', async (t) => {
  const berth = await startBerth(mainJs, { ...QUIET });
  t.teardown(() => stop(berth));
  const ready = JSON.parse(await berth.logLine(/"msg":"berth ready"/));
  t.match(ready.auth, /^off .*loopback only/);
  const put = await fetch(`${berth.base}/backends/h@lvm`, {
    method: 'PUT', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ pools: [{ pool_name: 'p', total_capacity_gb: 1, free_capacity_gb: 1 }] }),
  });
  t.equal(put.status, 200, 'the quick start works without a token');
});

t.test('on any other address without tokens start-up stops with one line naming both options', async (t) => {
  for (const host of ['0.0.0.0', '::', '192.0.2.10']) {
    const { code, stderr } = await runToExit({ BERTH_HOST: host });
    t.equal(code, 2, host);
    t.match(stderr, /^berth: refusing to listen on \S+ without authentication: set auth_tokens_file .* or allow_unauthenticated=true [^\n]*\n$/, host);
  }
});

t.test('allow_unauthenticated=true permits it, with a warning at every start', async (t) => {
  const berth = await startBerth(mainJs, { ...QUIET, BERTH_HOST: '0.0.0.0', BERTH_ALLOW_UNAUTHENTICATED: 'true' });
  t.teardown(() => stop(berth));
  const warning = JSON.parse(await berth.logLine(/allow_unauthenticated=true/));
  t.equal(warning.level, 40);
  t.match(warning.msg, /authentication is off and Berth listens on 0\.0\.0\.0/);
  t.match(JSON.parse(await berth.logLine(/"msg":"berth ready"/)).auth, /^off \(allow_unauthenticated=true\)/);
});

t.test('with a tokens file Berth listens on 0.0.0.0; a bad tokens file stops start-up with one line', async (t) => {
  const dir = t.testdir();
  const file = writeTokens(dir);
  const berth = await startBerth(mainJs, { ...QUIET, BERTH_HOST: '0.0.0.0', BERTH_AUTH_TOKENS_FILE: file });
  t.teardown(() => stop(berth));
  t.match(JSON.parse(await berth.logLine(/"msg":"berth ready"/)).auth, /^on: 5 token\(s\) from /);
  t.equal((await fetch(`${berth.base}/pools`)).status, 401);
  t.equal((await fetch(`${berth.base}/pools`, { headers: bearer(TOKENS.reader) })).status, 200);

  writeFileSync(join(dir, 'bad.json'), '{"tokens": [{"name": "x", "sha256": "abc", "roles": ["reader"]}]}');
  const bad = await runToExit({ BERTH_AUTH_TOKENS_FILE: join(dir, 'bad.json') });
  t.equal(bad.code, 2);
  t.match(bad.stderr, /^berth: auth_tokens_file \S+bad\.json: tokens\[0\]\.sha256: must be the 64 hex digits[^\n]*\n$/);
  const missing = await runToExit({ BERTH_AUTH_TOKENS_FILE: join(dir, 'missing.json') });
  t.match(missing.stderr, /^berth: auth_tokens_file \S+missing\.json cannot be read \(ENOENT\)\n$/);
});

t.test('SIGHUP re-reads the tokens file; a token added is accepted without a restart', async (t) => {
  const dir = t.testdir();
  const file = writeTokens(dir, [{ name: 'first', token: TOKENS.admin, roles: ['admin'] }]);
  const berth = await startBerth(mainJs, { ...QUIET, BERTH_AUTH_TOKENS_FILE: file });
  t.teardown(() => stop(berth));
  berth.child.kill('SIGHUP');
  t.match(JSON.parse(await berth.logLine(/"via":"SIGHUP"/)), { audit: true, action: 'tokens.reload', outcome: 'ok', tokens: 1 });
  writeFileSync(`${file}.tmp`, tokensFileText([{ name: 'first', token: TOKENS.admin, roles: ['admin'] }, { name: 'second', token: TOKENS.reader, roles: ['reader'] }]));
  renameSync(`${file}.tmp`, file);
  berth.child.kill('SIGHUP');
  await berth.logLine(/"added":\["second"\]/);
  t.equal((await fetch(`${berth.base}/pools`, { headers: bearer(TOKENS.reader) })).status, 200);
  t.notOk(berth.output().includes(TOKENS.admin) || berth.output().includes(TOKENS.reader), 'no token in the log');
});

const hasOpenssl = (() => {
  try {
    execFileSync('openssl', ['version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

/** A self-signed certificate for 127.0.0.1 (P-256, one day). */
function selfSigned(dir: string, name: string): { cert: string; key: string } {
  const cert = join(dir, `${name}.crt`);
  const key = join(dir, `${name}.key`);
  execFileSync('openssl', [
    'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', key, '-out', cert,
    '-days', '1', '-subj', `/CN=${name}`, '-addext', 'subjectAltName=IP:127.0.0.1',
  ], { stdio: 'ignore' });
  return { cert, key };
}

/** GET over HTTPS trusting `ca`, on a new connection; the status and the certificate the server presented. */
function httpsGet(base: string, path: string, ca: Buffer): Promise<{ status: number; subject: string }> {
  return new Promise((resolve, reject) => {
    const req = request(`${base}${path}`, { ca, agent: false }, (res) => {
      const subject = (res.socket as TLSSocket).getPeerCertificate().subject.CN as string;
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode!, subject }));
    });
    req.on('error', reject);
    req.end();
  });
}

t.test('HTTPS with tls_cert_file and tls_key_file; SIGHUP installs a renewed certificate', { skip: hasOpenssl ? false : 'openssl not found' }, async (t) => {
  const dir = t.testdir();
  const first = selfSigned(dir, 'first');
  const second = selfSigned(dir, 'second');
  const cert = join(dir, 'tls.crt');
  const key = join(dir, 'tls.key');
  writeFileSync(cert, readFileSync(first.cert));
  writeFileSync(key, readFileSync(first.key));
  const berth = await startBerth(mainJs, { ...QUIET, BERTH_TLS_CERT_FILE: cert, BERTH_TLS_KEY_FILE: key });
  t.teardown(() => stop(berth));
  t.match(berth.base, /^https:\/\/127\.0\.0\.1:\d+$/);
  t.same(await httpsGet(berth.base, '/healthz', readFileSync(first.cert)), { status: 200, subject: 'first' });

  writeFileSync(cert, readFileSync(second.cert));
  writeFileSync(key, readFileSync(second.key));
  berth.child.kill('SIGHUP');
  await berth.logLine(/TLS certificate reloaded/);
  t.same(await httpsGet(berth.base, '/healthz', readFileSync(second.cert)), { status: 200, subject: 'second' }, 'new connections get the new one');

  writeFileSync(key, readFileSync(first.key)); // a key that does not match the certificate
  berth.child.kill('SIGHUP');
  t.match(JSON.parse(await berth.logLine(/TLS certificate not reloaded/)), { level: 50, error: /not a usable pair/ });
  t.same(await httpsGet(berth.base, '/readyz', readFileSync(second.cert)), { status: 200, subject: 'second' }, 'the previous pair stays');

  const mismatched = await runToExit({ BERTH_TLS_CERT_FILE: second.cert, BERTH_TLS_KEY_FILE: first.key });
  t.equal(mismatched.code, 2);
  t.match(mismatched.stderr, /^berth: tls_cert_file \S+ and tls_key_file \S+ are not a usable pair: [^\n]*\n$/);
  t.match((await runToExit({ BERTH_TLS_CERT_FILE: cert })).stderr, /^berth: configuration error: set both tls_cert_file and tls_key_file, or neither\n$/);
});

t.test('the image and compose listen on 0.0.0.0 with a tokens file from a mounted directory', async (t) => {
  const dockerfile = readFileSync(join(root, 'Dockerfile'), 'utf8');
  t.match(dockerfile, /BERTH_HOST=0\.0\.0\.0/);
  const tokensFile = /BERTH_AUTH_TOKENS_FILE=(\S+)/.exec(dockerfile)?.[1];
  t.ok(tokensFile, 'the image names a tokens file');
  const berth = parse(readFileSync(join(root, 'docker-compose.yml'), 'utf8')).services.berth;
  const inContainer = berth.environment?.BERTH_AUTH_TOKENS_FILE ?? tokensFile;
  const dir = inContainer.slice(0, inContainer.lastIndexOf('/'));
  t.ok((berth.volumes as string[]).some((v) => v.split(':')[1] === dir), `compose mounts ${dir} (a directory, so that replacing the file is seen)`);
});
