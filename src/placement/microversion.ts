// OpenStack-API-Version: placement X.Y, parsed as microversion_parse does: the last "placement" entry of the
// (folded) header wins, "latest" is the maximum, an absent header is the minimum (1.0); a string that is not
// two integers is 400, a version Placement does not have is 406. Pure.
import { PlacementError } from './errors.ts';

export const MIN_VERSION = '1.0';
export const MAX_VERSION = '1.39';
const MAX_MINOR = 39;

/** A microversion 1.N is carried as N (Placement only has major 1). */
export type Microversion = number;

export function formatVersion(mv: Microversion): string {
  return `1.${mv}`;
}

/** The version string the header asks for, or undefined (microversion_parse.check_standard_header). */
function requested(header: string | string[] | undefined): string | undefined {
  const raw = Array.isArray(header) ? header.join(',') : header;
  if (raw === undefined) return undefined;
  for (const part of raw.split(',').reverse()) {
    const m = /^(\S+)\s+(.+)$/.exec(part.trim());
    if (m && m[1]!.toLowerCase() === 'placement') return m[2]!.trim();
  }
  return undefined;
}

/** Python's int(): optional sign, digits with single underscores between them, surrounding whitespace. */
function pyInt(s: string): number | null {
  const t = s.trim();
  return /^[+-]?\d+(_\d+)*$/.test(t) ? Number(t.replace(/_/g, '')) : null;
}

export function parseMicroversion(header: string | string[] | undefined): Microversion {
  const version = requested(header) ?? MIN_VERSION;
  const value = version === 'latest' ? MAX_VERSION : version;
  const dot = value.indexOf('.');
  const major = pyInt(dot < 0 ? value : value.slice(0, dot));
  const minor = dot < 0 ? null : pyInt(value.slice(dot + 1));
  if (major === null || minor === null) {
    const why = major === null || dot >= 0
      ? `invalid literal for int() with base 10: '${major === null ? (dot < 0 ? value : value.slice(0, dot)) : value.slice(dot + 1)}'`
      : "Version.__new__() missing 1 required positional argument: 'minor'";
    throw new PlacementError(400, `Invalid microversion: invalid version string: ${value}; ${why}`);
  }
  if (major !== 1 || minor < 0 || minor > MAX_MINOR) {
    throw new PlacementError(406, `Invalid microversion: Unacceptable version header: ${value}`, undefined,
      { max_version: MAX_VERSION, min_version: MIN_VERSION });
  }
  return minor;
}
