// The brute-force counter on its own: a fixed window per address from its first failure, bounded memory.
import t from 'tap';
import { FailureLimiter } from '../../src/http/auth-limiter.ts';
import { isLoopback, listenRule } from '../../src/http/auth.ts';
import { parseConfig } from '../../src/config.ts';

t.test('limit failures, then Retry-After counts down to the end of the window', async (t) => {
  const limiter = new FailureLimiter(3);
  for (let i = 0; i < 3; i++) {
    t.equal(limiter.retryAfterSeconds('a', 0), 0, `failure ${i + 1} is still looked at`);
    limiter.fail('a', i * 10_000);
  }
  t.equal(limiter.retryAfterSeconds('a', 20_000), 40);
  t.equal(limiter.retryAfterSeconds('a', 59_001), 1, 'never 0 while refused');
  t.equal(limiter.retryAfterSeconds('a', 60_000), 0, 'the window has closed');
  limiter.fail('a', 60_000);
  t.equal(limiter.retryAfterSeconds('a', 60_001), 0, 'a new window starts from the next failure');
});

t.test('closed windows are dropped and the number of tracked addresses is bounded', async (t) => {
  const limiter = new FailureLimiter(1, 100);
  for (let i = 0; i < 1000; i++) limiter.fail(`10.0.${i >> 8}.${i & 255}`, i);
  t.ok(limiter.tracked <= 100, `${limiter.tracked} addresses tracked`);
  t.equal(limiter.retryAfterSeconds('10.0.3.231', 1000), 60, 'the newest are kept');
  limiter.fail('later', 200_000);
  t.equal(limiter.tracked, 1, 'closed windows are gone');
});

t.test('loopback addresses, and the start-up rule they decide', async (t) => {
  for (const host of ['127.0.0.1', '127.1.2.3', '::1', '[::1]', 'localhost', '::ffff:127.0.0.1']) t.ok(isLoopback(host), host);
  for (const host of ['0.0.0.0', '::', '192.0.2.1', 'berth.example', '128.0.0.1']) t.notOk(isLoopback(host), host);
  t.same(listenRule(parseConfig({})), {}, 'the default host needs no tokens');
  t.match(listenRule(parseConfig({ host: '0.0.0.0' })), { error: /auth_tokens_file.*allow_unauthenticated/ });
  t.match(listenRule(parseConfig({ host: '0.0.0.0', allow_unauthenticated: true })), { warning: /allow_unauthenticated=true/ });
  t.same(listenRule(parseConfig({ host: '0.0.0.0', auth_tokens_file: '/etc/berth/tokens.json' })), {});
});
