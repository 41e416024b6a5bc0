// The volume ids Berth generates: UUIDv7 (RFC 9562, section 5.7), whose first 48 bits are the creation time in Unix
// milliseconds. Ids made one after another sort together, so a claim's insert into the store (keyed by id) lands on
// its newest index page instead of a random one: fewer pages written, split and read back per claim than with
// random (version 4) ids, in SQLite's WAL and in PostgreSQL's primary-key index alike.
import { randomFillSync } from 'node:crypto';

/** Random bytes drawn from the system's CSPRNG a block at a time (as randomUUID does), 10 per id. */
const RANDOM_BLOCK = 4096;
const ID_RANDOM_BYTES = 10;
const random = new Uint8Array(RANDOM_BLOCK);
let next = RANDOM_BLOCK;
const HEX = Array.from({ length: 256 }, (_, b) => b.toString(16).padStart(2, '0'));

/** The millisecond `timeText` is the id text of: "tttttttt-tttt-". */
let cachedMs = -1;
let timeText = '';

/** A version 7 UUID for the time `ms` (Unix milliseconds; clamped to 0 … 2^48 - 1), the rest (74 bits) random. */
export function uuidV7(ms: number): string {
  const time = Math.min(Math.max(0, Math.floor(ms)), 0xffff_ffff_ffff);
  if (time !== cachedMs) {
    const hex = time.toString(16).padStart(12, '0');
    timeText = `${hex.slice(0, 8)}-${hex.slice(8, 12)}-`;
    cachedMs = time;
  }
  if (next + ID_RANDOM_BYTES > RANDOM_BLOCK) {
    randomFillSync(random);
    next = 0;
  }
  const r = random;
  const i = next;
  next += ID_RANDOM_BYTES;
  // Version 7 in the high nibble of byte 6, the variant (binary 10) in the top bits of byte 8.
  return timeText + '7' + HEX[r[i]! & 0x0f]!.slice(1) + HEX[r[i + 1]!]! + '-' + HEX[(r[i + 2]! & 0x3f) | 0x80]! + HEX[r[i + 3]!]! + '-' +
    HEX[r[i + 4]!]! + HEX[r[i + 5]!]! + HEX[r[i + 6]!]! + HEX[r[i + 7]!]! + HEX[r[i + 8]!]! + HEX[r[i + 9]!]!;
}
