// Python's round(x, 2) and '%.2f': correctly rounded, round-half-even on the exact binary value of the double.
// Math.round(x * 100) / 100 is not equivalent (2.675 is 2.67499999… in binary, so Python gives 2.67).
// Pure: no imports.

const view = new DataView(new ArrayBuffer(8));

/** The double as sign × mantissa × 2^exponent with an integer mantissa (exact). */
function decompose(x: number): { negative: boolean; mantissa: bigint; exponent: number } {
  view.setFloat64(0, x);
  const hi = view.getUint32(0);
  const lo = view.getUint32(4);
  const negative = hi >>> 31 === 1;
  const biased = (hi >>> 20) & 0x7ff;
  let mantissa = (BigInt(hi & 0xfffff) << 32n) | BigInt(lo);
  let exponent: number;
  if (biased === 0) {
    exponent = -1074; // subnormal
  } else {
    mantissa |= 1n << 52n;
    exponent = biased - 1075;
  }
  return { negative, mantissa, exponent };
}

/**
 * The integer n nearest to x × 10^digits (ties to even), computed exactly. Returns null when x × 10^digits is
 * already an integer that needs no rounding (exponent ≥ 0).
 */
function scaledNearest(x: number, digits: number): { negative: boolean; n: bigint } | null {
  const { negative, mantissa, exponent } = decompose(x);
  if (exponent >= 0) return null;
  const numerator = mantissa * 10n ** BigInt(digits);
  const denominator = 1n << BigInt(-exponent);
  let q = numerator / denominator;
  const twiceRemainder = (numerator - q * denominator) * 2n;
  if (twiceRemainder > denominator || (twiceRemainder === denominator && (q & 1n) === 1n)) q += 1n;
  return { negative, n: q };
}

/** Python's round(x, digits) for a float (digits ≥ 0). round(int, 2) in Python returns the int: same value here. */
export function pyRound(x: number, digits = 2): number {
  if (!Number.isFinite(x) || Number.isInteger(x)) return x;
  // Fast path (capacity figures are rounded per pool per claim): unless x × 10^digits is within a rounding error of
  // a half, its nearest integer is unambiguous, and n / 10^digits is the correctly rounded double (IEEE division).
  const scale = 10 ** digits;
  const y = Math.abs(x) * scale;
  if (y < 2 ** 52) {
    const fraction = y - Math.floor(y);
    if (Math.abs(fraction - 0.5) > y * 1e-15 + 1e-300) {
      const n = Math.round(y);
      return (x < 0 ? -n : n) / scale;
    }
  }
  const scaled = scaledNearest(x, digits);
  if (scaled === null) return x;
  // The double nearest to the decimal n / 10^digits: JS string→number conversion is correctly rounded.
  const value = Number(`${scaled.n}e-${digits}`);
  return scaled.negative ? -value : value;
}

/** Python's '%.{digits}f' % x (e.g. Cinder's "%(total).2f"). */
export function pyFixed(x: number, digits = 2): string {
  if (Number.isNaN(x)) return 'nan';
  if (x === Infinity) return 'inf';
  if (x === -Infinity) return '-inf';
  const scaled = scaledNearest(x, digits);
  if (scaled === null) {
    // An integer-valued double: print every digit (toFixed switches to exponent notation from 1e21).
    const whole = (x < 0 ? '-' : '') + BigInt(Math.abs(x)).toString();
    return digits === 0 ? whole : `${whole}.${'0'.repeat(digits)}`;
  }
  const s = scaled.n.toString().padStart(digits + 1, '0');
  const body = digits === 0 ? s : `${s.slice(0, s.length - digits)}.${s.slice(s.length - digits)}`;
  return (scaled.negative ? '-' : '') + body; // Python keeps the sign: '%.2f' % -0.001 == '-0.00'
}
