// npm run store:copy -- --from DATA_DIR --to postgres://USER[:PASSWORD]@HOST[:PORT]/DB
// Copies an embedded store into an empty PostgreSQL database (generations kept). Refuses a non-empty target and a
// data directory that a running Berth holds. Prints one line; exit 0 when copied, 1 when refused, 2 on bad usage.
import { parseArgs } from 'node:util';
import { copySqliteToPostgres } from '../src/store/copy.ts';
import { databaseUrlProblem, redactDatabaseUrl } from '../src/store/database-url.ts';

const USAGE = 'usage: npm run store:copy -- --from DATA_DIR --to postgres://USER[:PASSWORD]@HOST[:PORT]/DB';

function fail(code: number, message: string): never {
  process.stderr.write(`store:copy: ${message}\n`);
  process.exit(code);
}

let from: string | undefined;
let to: string | undefined;
try {
  const { values } = parseArgs({ options: { from: { type: 'string' }, to: { type: 'string' }, help: { type: 'boolean' } } });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    process.exit(0);
  }
  from = values.from;
  to = values.to;
} catch (err) {
  fail(2, `${(err as Error).message}\n${USAGE}`);
}
if (!from || !to) fail(2, USAGE);
const problem = databaseUrlProblem(to);
if (problem) fail(2, `--to ${problem}`);

try {
  const result = await copySqliteToPostgres(from, to);
  process.stdout.write(`store:copy: copied ${result.records} records (${result.kinds} kinds) from ${from} to ` +
    `${redactDatabaseUrl(to)}; feed at seq ${result.seq}\n`);
} catch (err) {
  fail(1, (err as Error).message);
}
