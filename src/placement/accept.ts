// Accept-header negotiation as webob does it (acceptparse.AcceptValidHeader.acceptable_offers): each offer gets
// the q of the most specific media range matching it, offers with q > 0 come back best first (ties keep the
// offer order); an empty header accepts nothing, an unparsable one everything. Pure.

interface MediaRange {
  type: string;
  subtype: string;
  q: number;
}

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

function parse(header: string): MediaRange[] | null {
  const ranges: MediaRange[] = [];
  for (const part of header.split(',')) {
    const item = part.trim();
    if (item === '') continue;
    const [media, ...params] = item.split(';').map((s) => s.trim());
    const [type, subtype, extra] = media!.split('/');
    if (type === undefined || subtype === undefined || extra !== undefined || !TOKEN.test(type) || !TOKEN.test(subtype)) return null;
    if (type === '*' && subtype !== '*') return null;
    let q = 1;
    for (const p of params) {
      const [k, v] = p.split('=').map((s) => s.trim());
      if (k?.toLowerCase() === 'q') {
        if (v === undefined || !/^(0(\.\d{0,3})?|1(\.0{0,3})?)$/.test(v)) return null;
        q = Number(v);
      }
    }
    ranges.push({ type: type.toLowerCase(), subtype: subtype.toLowerCase(), q });
  }
  return ranges;
}

/** The offers the header accepts, best first. */
export function acceptableOffers(header: string, offers: readonly string[]): string[] {
  const ranges = parse(header);
  if (ranges === null) return [...offers];
  const scored: Array<{ offer: string; q: number; i: number }> = [];
  offers.forEach((offer, i) => {
    const [type, subtype] = offer.toLowerCase().split('/') as [string, string];
    let best: { specificity: number; q: number } | null = null;
    for (const r of ranges) {
      const specificity = r.type === type && r.subtype === subtype ? 3 : r.type === type && r.subtype === '*' ? 2 : r.type === '*' ? 1 : 0;
      if (specificity > 0 && (best === null || specificity > best.specificity)) best = { specificity, q: r.q };
    }
    if (best && best.q > 0) scored.push({ offer, q: best.q, i });
  });
  return scored.sort((a, b) => b.q - a.q || a.i - b.i).map((s) => s.offer);
}
