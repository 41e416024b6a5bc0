// One spelling of boolean query flags (explain, dry_run, …): the words true and false. Placement's own parameters
// compare case-insensitively (e.g. osc-placement sends associated=True): `ignoreCase` serves them.
import { z } from 'zod';

export function queryFlag(description: string, options: { ignoreCase?: boolean } = {}) {
  const words: z.ZodType<string, string> = options.ignoreCase
    ? z.string().regex(/^(true|false)$/i, "must be 'true' or 'false' (in any case)")
    : z.enum(['true', 'false'], { error: "must be 'true' or 'false'" });
  return words.transform((v) => v.toLowerCase() === 'true').optional().describe(description);
}
