import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { ConfigError, loadConfig, parseConfig } from '../src/config.ts';

t.test('defaults are the real systems\' defaults (DESIGN.md table)', async (t) => {
  const c = parseConfig();
  t.equal(c.host, '127.0.0.1', 'loopback: without tokens nothing else may reach Berth');
  t.equal(c.port, 8080);
  t.equal(c.log_level, 'info');
  t.equal(c.data_dir, './data');
  t.same(c.scheduler_default_filters, ['AvailabilityZoneFilter', 'CapacityFilter', 'CapabilitiesFilter']);
  t.same(c.scheduler_default_weighers, ['CapacityWeigher']);
  t.equal(c.capacity_weight_multiplier, 1.0);
  t.equal(c.allocated_capacity_weight_multiplier, -1.0);
  t.equal(c.max_over_subscription_ratio, 20.0);
  t.equal(c.over_provisioning_calculation, 'cinder');
  t.equal(c.storage_availability_zone, 'nova');
  t.equal(c.enable_isolated_aggregate_filtering, false);
  t.equal(c.randomize_allocation_candidates, false);
  t.equal(c.stats_stale_after_seconds, 0);
});

t.test('environment wins over the file; lists are comma separated', async (t) => {
  const dir = t.testdir();
  const file = join(dir, 'berth.json');
  writeFileSync(file, JSON.stringify({ port: 9000, log_level: 'debug', max_over_subscription_ratio: 'auto', scheduler_default_weighers: ['AllocatedCapacityWeigher'] }));
  const c = loadConfig({
    BERTH_CONFIG: file,
    BERTH_PORT: '9100',
    BERTH_SCHEDULER_DEFAULT_FILTERS: 'CapacityFilter, CapabilitiesFilter',
    BERTH_ENABLE_ISOLATED_AGGREGATE_FILTERING: 'true',
    BERTH_CAPACITY_WEIGHT_MULTIPLIER: '-2.5',
  });
  t.equal(c.port, 9100, 'env wins');
  t.equal(c.log_level, 'debug', 'file applies');
  t.equal(c.max_over_subscription_ratio, 'auto');
  t.same(c.scheduler_default_weighers, ['AllocatedCapacityWeigher']);
  t.same(c.scheduler_default_filters, ['CapacityFilter', 'CapabilitiesFilter']);
  t.equal(c.enable_isolated_aggregate_filtering, true);
  t.equal(c.capacity_weight_multiplier, -2.5);
  t.equal(loadConfig({ BERTH_MAX_OVER_SUBSCRIPTION_RATIO: '1.5' }).max_over_subscription_ratio, 1.5);
});

t.test('a bad value is one line naming the option and what is allowed', async (t) => {
  const bad: Array<[Record<string, string>, RegExp]> = [
    [{ BERTH_PORT: 'eighty' }, /invalid option port/],
    [{ BERTH_PORT: '70000' }, /invalid option port/],
    [{ BERTH_MAX_OVER_SUBSCRIPTION_RATIO: '0.5' }, /invalid option max_over_subscription_ratio.*>= 1 or "auto"/],
    [{ BERTH_OVER_PROVISIONING_CALCULATION: 'fancy' }, /invalid option over_provisioning_calculation.*cinder.*standard/],
    [{ BERTH_SCHEDULER_DEFAULT_FILTERS: 'CapacityFilter,NopeFilter' }, /invalid option scheduler_default_filters/],
    [{ BERTH_ENABLE_ISOLATED_AGGREGATE_FILTERING: 'maybe' }, /invalid option enable_isolated_aggregate_filtering/],
    [{ BERTH_LOG_LEVEL: 'loud' }, /invalid option log_level.*allowed: fatal, error, warn, info/],
  ];
  for (const [env, re] of bad) {
    t.throws(() => loadConfig(env), re, JSON.stringify(env));
    try { loadConfig(env); } catch (err) {
      t.ok(err instanceof ConfigError);
      t.notMatch((err as Error).message, /\n/, 'one line');
    }
  }
  t.throws(() => parseConfig({ nonsense: 1 }), /unknown option\(s\): nonsense/);
  t.throws(() => loadConfig({ BERTH_CONFIG: '/nonexistent/berth.json' }), /cannot read BERTH_CONFIG/);
  const dir = t.testdir({ 'bad.json': '{not json', 'arr.json': '[1]' });
  t.throws(() => loadConfig({ BERTH_CONFIG: join(dir, 'bad.json') }), /not valid JSON/);
  t.throws(() => loadConfig({ BERTH_CONFIG: join(dir, 'arr.json') }), /must hold a JSON object/);
});
