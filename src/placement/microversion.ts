// OpenStack-API-Version: placement X.Y. Placement answers at the requested version, refuses versions above its
// maximum with 406, and treats an absent header as the minimum (1.0). Pure.
import { PlacementError } from './errors.ts';

export const MIN_VERSION = '1.0';
export const MAX_VERSION = '1.39';
const MAX_MINOR = 39;

/** A microversion 1.N is carried as N (Placement only has major 1). */
export type Microversion = number;

export function formatVersion(mv: Microversion): string {
  return `1.${mv}`;
}

/** Reads the header value (may list several services, comma separated). */
export function parseMicroversion(header: string | string[] | undefined): Microversion {
  const raw = Array.isArray(header) ? header.join(',') : header;
  if (raw === undefined || raw.trim() === '') return 0;
  let value: string | undefined;
  for (const part of raw.split(',')) {
    const [service, version] = part.trim().split(/\s+/, 2);
    if (service?.toLowerCase() === 'placement') value = version ?? '';
  }
  if (value === undefined) return 0;
  if (value === 'latest') return MAX_MINOR;
  const m = /^(\d+)\.(\d+)$/.exec(value);
  if (!m) {
    throw new PlacementError(400, `invalid version string: ${value}`);
  }
  const major = Number(m[1]);
  const minor = Number(m[2]);
  if (major !== 1 || minor > MAX_MINOR) {
    throw new PlacementError(
      406,
      `Invalid microversion: Unacceptable version header: ${value}`,
      'placement.undefined_code',
      { max_version: MAX_VERSION, min_version: MIN_VERSION },
      'The resource could not be generated that was acceptable to your browser (content of type application/json. ' +
        `\n\n Invalid microversion: Unacceptable version header: ${value}`,
    );
  }
  return minor;
}
