// Timestamps as Date.prototype.toISOString writes them, for the paths that stamp every decision and claim: building
// the text from a Date costs about 1 µs here, so the text of the current second is kept and a stamp within it is
// that text plus its milliseconds.

/** The second `prefix` is the text of (Unix seconds), and that text up to and including its '.'. */
let cachedSecond = Number.NaN;
let prefix = '';

/** The largest time a Date holds, either side of 1970 (ms). */
const MAX_TIME = 8.64e15;

/** `new Date(ms).toISOString()`, the same text for every `ms` (a RangeError for an invalid time, as it gives). */
export function isoTime(ms: number): string {
  // A Date keeps whole milliseconds, truncated toward zero; NaN and times past its range are the Date's to refuse.
  const whole = Math.trunc(ms);
  if (!(Math.abs(whole) <= MAX_TIME)) return new Date(ms).toISOString();
  const second = Math.floor(whole / 1000);
  if (second !== cachedSecond) {
    const text = new Date(whole).toISOString();
    prefix = text.slice(0, -4);
    cachedSecond = second;
  }
  const milli = whole - second * 1000;
  return prefix + (milli < 10 ? '00' : milli < 100 ? '0' : '') + milli + 'Z';
}
