import t from 'tap';
import { checkDiskSpace, diskUnderPressure, minimalAvailable, provisionedLimit, selectorsInTags, usableStorage } from '../../src/replicas/space.ts';

const GB = 1e9;

t.test('seed: Disk X fails the actual space usage condition at 25 %', async (t) => {
  const c = checkDiskSpace({ storageMaximum: 4 * GB, storageAvailable: 1 * GB, storageReserved: 0, storageScheduled: 0 }, 0, 0, 25, 100);
  t.equal(c.minimalAvailable, 1 * GB, 'minimal available = 4 GB × 25 / 100 = 1 GB');
  t.equal(c.ok, false);
  t.equal(c.failure, 'actual_space_usage', '1 GB is not > 1 GB');
  const zero = checkDiskSpace({ storageMaximum: 4 * GB, storageAvailable: 1 * GB, storageReserved: 0, storageScheduled: 0 }, 0, 0, 0, 100);
  t.equal(zero.ok, true, 'schedulable once the percentage is 0');
});

t.test('seed: Disk Y passes both conditions (10 %, reserved 1 GB, scheduled 2 GB)', async (t) => {
  const c = checkDiskSpace({ storageMaximum: 8 * GB, storageAvailable: 2 * GB, storageReserved: 1 * GB, storageScheduled: 2 * GB }, 0, 0, 10, 100);
  t.equal(c.minimalAvailable, 0.8 * GB);
  t.equal(c.provisionedLimit, 7 * GB, '(8 GB − 1 GB) × 100 / 100');
  t.equal(c.scheduledTotal, 2 * GB);
  t.equal(c.ok, true);
});

t.test('the two conditions, to the byte', async (t) => {
  // [name, max, avail, reserved, scheduled, size, actualSize, minPct, opPct, failure]
  const cases: Array<[string, number, number, number, number, number, number, number, number, string | null]> = [
    ['max 0', 0, 10, 0, 0, 0, 0, 25, 100, 'storage_maximum_zero'],
    ['avail 0', 100, 0, 0, 0, 0, 0, 0, 100, 'storage_available_zero'],
    ['avail just above minimal', 100, 26, 0, 0, 0, 0, 25, 100, null],
    ['avail equal to minimal fails (strict >)', 100, 25, 0, 0, 0, 0, 25, 100, 'actual_space_usage'],
    ['actualSize counts against avail', 100, 50, 0, 0, 0, 25, 25, 100, 'actual_space_usage'],
    ['actualSize just fits', 100, 50, 0, 0, 0, 24, 25, 100, null],
    ['minimal is truncated: 99 × 25 / 100 = 24.75 → 24, avail 25 passes', 99, 25, 0, 0, 0, 0, 25, 100, null],
    ['minimal truncated, avail 24 fails', 99, 24, 0, 0, 0, 0, 25, 100, 'actual_space_usage'],
    ['size + scheduled equal to limit passes (≤)', 100, 100, 0, 60, 40, 0, 25, 100, null],
    ['one byte over the limit fails', 100, 100, 0, 60, 41, 0, 25, 100, 'scheduling_space'],
    ['limit truncated: (99 − 0) × 150 / 100 = 148.5 → 148', 99, 99, 0, 100, 48, 0, 0, 150, null],
    ['limit truncated, 149 fails', 99, 99, 0, 100, 49, 0, 0, 150, 'scheduling_space'],
    ['reserved lowers the limit', 100, 100, 30, 0, 71, 0, 0, 100, 'scheduling_space'],
    ['reserved > max: negative limit fails even at size 0', 100, 100, 101, 0, 0, 0, 0, 100, 'scheduling_space'],
    ['over-provisioning 0: size 0 passes', 100, 100, 0, 0, 0, 0, 0, 0, null],
    ['over-provisioning 0: size 1 fails', 100, 100, 0, 0, 1, 0, 0, 0, 'scheduling_space'],
    ['minimal 0 means avail − actual > 0', 100, 1, 0, 0, 0, 0, 0, 100, null],
    ['minimal 100 needs avail > max', 100, 100, 0, 0, 0, 0, 100, 100, 'actual_space_usage'],
    ['minimal 100 with avail > max', 100, 101, 0, 0, 0, 0, 100, 100, null],
    ['over-provisioning 200 doubles the limit', 100, 100, 0, 150, 50, 0, 25, 200, null],
  ];
  for (const [name, max, avail, reserved, scheduled, size, actual, minPct, opPct, failure] of cases) {
    const c = checkDiskSpace({ storageMaximum: max, storageAvailable: avail, storageReserved: reserved, storageScheduled: scheduled }, size, actual, minPct, opPct);
    t.equal(c.failure, failure, name);
    t.equal(c.ok, failure === null, `${name}: ok`);
  }
});

t.test('float then truncate, as Go int64(float64 …)', async (t) => {
  t.equal(minimalAvailable(1_000_000_007, 33), 330000002, '330000002.31 → 330000002');
  t.equal(provisionedLimit(1_000_000_007, 7, 33), 330000000);
  t.equal(minimalAvailable(3, 50), 1);
  // Above 2^53 / 100 the float product rounds; Go does the same float64 arithmetic.
  const big = 2 ** 52 + 1;
  t.equal(minimalAvailable(big, 100), Math.trunc((big * 100) / 100));
});

t.test('selector tags: AND, exact, empty selector per setting', async (t) => {
  const cases: Array<[string[], string[], boolean, boolean]> = [
    [['ssd', 'fast'], ['ssd'], true, true],
    [['ssd', 'fast'], ['ssd', 'fast'], true, true],
    [['ssd'], ['ssd', 'fast'], true, false],
    [['SSD'], ['ssd'], true, false],
    [['ssd'], [], true, true],
    [['ssd'], [], false, false],
    [[], [], false, true],
    [[], ['ssd'], true, false],
  ];
  for (const [tags, selector, allowEmpty, want] of cases) {
    t.equal(selectorsInTags(tags, selector, allowEmpty), want, `${JSON.stringify(tags)} ⊇ ${JSON.stringify(selector)} (allowEmpty ${allowEmpty})`);
  }
});

t.test('usable storage is clamped at 0', async (t) => {
  t.equal(usableStorage({ storageMaximum: 100, storageAvailable: 80, storageReserved: 10, storageScheduled: 20 }), 50);
  t.equal(usableStorage({ storageMaximum: 100, storageAvailable: 80, storageReserved: 10, storageScheduled: 90 }), 0);
});

t.test('disk pressure of replica auto-balance: int((avail − reserved) × 100 / max) < 100 − pressure%', async (t) => {
  // [max, avail, reserved, pressure%, under pressure]
  const cases: Array<[number, number, number, number, boolean]> = [
    [100, 10, 0, 90, false],
    [100, 9, 0, 90, true],
    [1000, 109, 10, 90, true],
    [1000, 110, 10, 90, false],
    [1000, 101, 2, 90, true],
    [100, 50, 0, 0, false],
    [0, 0, 0, 90, false],
    [100, 5, 10, 90, true],
  ];
  for (const [max, avail, reserved, pct, want] of cases) {
    t.equal(diskUnderPressure({ storageMaximum: max, storageAvailable: avail, storageReserved: reserved, storageScheduled: 0 }, pct), want, `${avail} − ${reserved} of ${max} at ${pct}%`);
  }
});
