// Locates ../shared (the reference material beside the clone), which CI lays beside the repository.
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';

const REPO = resolve(import.meta.dirname, '..');

/** shared/ sits beside the clone (<repo>/../shared); a git worktree sits one level deeper. BERTH_SHARED_DIR wins. */
export function sharedDir(): string {
  const candidates = [process.env.BERTH_SHARED_DIR, join(REPO, '..', 'shared'), join(REPO, '..', '..', 'shared')];
  for (const c of candidates) if (c && existsSync(join(c, 'reference'))) return c;
  throw new Error(`cannot find shared/reference beside ${REPO} (set BERTH_SHARED_DIR)`);
}
