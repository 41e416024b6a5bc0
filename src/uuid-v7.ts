// The volume ids Berth generates: UUIDv7 (RFC 9562, section 5.7), whose first 48 bits are the creation time in Unix
// milliseconds. Ids made one after another sort together, so a claim's insert into the store (keyed by id) lands on
// its newest index page instead of a random one: fewer pages written, split and read back per claim than with
// random (version 4) ids, in SQLite's WAL and in PostgreSQL's primary-key index alike.
import { randomUUID } from 'node:crypto';

/** A version 7 UUID for the time `ms` (Unix milliseconds; clamped to 0 … 2^48 - 1), the rest random. */
export function uuidV7(ms: number): string {
  const time = Math.min(Math.max(0, Math.floor(ms)), 0xffff_ffff_ffff).toString(16).padStart(12, '0');
  // randomUUID's 122 random bits with the variant already set; only its version digit (index 14) is replaced.
  const random = randomUUID();
  return `${time.slice(0, 8)}-${time.slice(8, 12)}-7${random.slice(15)}`;
}
