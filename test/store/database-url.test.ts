// database_url and the PostgreSQL options: what is accepted, the defaults, and that a password is never printed.
import t from 'tap';
import { ConfigError, loadConfig, parseConfig } from '../../src/config.ts';
import { databaseUrlPassword, databaseUrlProblem, redactDatabaseUrl } from '../../src/store/database-url.ts';

t.test('accepted and refused URLs', async (t) => {
  for (const ok of [
    'postgres://berth@db/berth',
    'postgresql://berth:pw@db.example:6543/berth?sslmode=require&application_name=x',
    'postgres://berth:p%40ss@[::1]:5432/berth',
  ]) t.equal(databaseUrlProblem(ok), null, ok);
  const cases: Array<[string, RegExp]> = [
    ['db.example/berth', /must be a URL of the form postgres:\/\/USER\[:PASSWORD\]@HOST\[:PORT\]\/DATABASE/],
    ['mysql://u:pw@db/berth', /must start with postgres:\/\/ or postgresql:\/\/ \(found mysql:\/\/\)/],
    ['postgres://u:pw@db', /names no database/],
    ['postgres://u:pw@db/', /names no database/],
    ['postgres://db/berth', /names no user/],
  ];
  for (const [url, why] of cases) {
    const problem = databaseUrlProblem(url);
    t.match(problem, why, url);
    t.notMatch(problem, /pw/, 'the problem does not quote the URL');
  }
});

t.test('the printable form has no password', async (t) => {
  t.equal(redactDatabaseUrl('postgres://berth:s3cr%40t@db:5432/berth?sslmode=require'), 'postgres://berth:***@db:5432/berth?sslmode=require');
  t.equal(redactDatabaseUrl('postgres://berth@db/berth?password=s3cret'), 'postgres://berth@db/berth?password=***');
  t.equal(redactDatabaseUrl('postgres://berth@db/berth'), 'postgres://berth@db/berth');
  t.equal(redactDatabaseUrl('not a url s3cret'), '(unparsable database URL)');
  t.equal(databaseUrlPassword('postgres://berth:s3cr%40t@db/berth'), 's3cr@t');
  t.equal(databaseUrlPassword('postgres://berth@db/berth?password=x'), 'x');
  t.equal(databaseUrlPassword('postgres://berth@db/berth'), undefined);
});

t.test('config: unset by default, PostgreSQL options with their defaults, from the environment', async (t) => {
  const defaults = parseConfig({});
  t.equal(defaults.database_url, undefined, 'the embedded store by default');
  t.match(defaults, {
    database_pool_size: 10, database_statement_timeout_ms: 5000, database_connect_timeout_ms: 5000, database_feed_retention: 100000,
  });
  t.equal(loadConfig({ BERTH_DATABASE_URL: '' }).database_url, undefined, 'an empty variable counts as unset');
  const env = loadConfig({
    BERTH_DATABASE_URL: 'postgres://berth:pw@db/berth', BERTH_DATABASE_POOL_SIZE: '4',
    BERTH_DATABASE_STATEMENT_TIMEOUT_MS: '2000', BERTH_DATABASE_CONNECT_TIMEOUT_MS: '1000', BERTH_DATABASE_FEED_RETENTION: '5000',
  });
  t.match(env, {
    database_url: 'postgres://berth:pw@db/berth', database_pool_size: 4, database_statement_timeout_ms: 2000,
    database_connect_timeout_ms: 1000, database_feed_retention: 5000,
  });
  t.throws(() => parseConfig({ database_pool_size: 0 }), /invalid option database_pool_size/);
  t.throws(() => parseConfig({ database_statement_timeout_ms: 10 }), /invalid option database_statement_timeout_ms/);
  const err = (() => { try { parseConfig({ database_url: 'mysql://berth:pw@db/berth' }); } catch (e) { return e as Error; } })();
  t.ok(err instanceof ConfigError);
  t.equal(err?.message, 'invalid option database_url: must start with postgres:// or postgresql:// (found mysql://)');
});
