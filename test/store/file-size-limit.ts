// A full disk, for tests of what a failed write does: this process may write no file past a size (RLIMIT_FSIZE,
// set with util-linux's prlimit on its own pid), so SQLite's next append to its log fails as on a full disk.
import { execFileSync } from 'node:child_process';

/** SIGXFSZ's own listeners, set aside while the limit holds (then only a no-op: a write past it fails with EFBIG). */
let sigxfsz: NodeJS.SignalsListener[] | undefined;

/** Lets this process write no file past `bytes` (RLIMIT_FSIZE), as a full disk would. */
export function limitFileSize(bytes: number | 'unlimited'): void {
  if (bytes === 'unlimited') {
    if (sigxfsz) {
      process.removeAllListeners('SIGXFSZ');
      for (const l of sigxfsz) process.on('SIGXFSZ', l);
      sigxfsz = undefined;
    }
  } else if (!sigxfsz) {
    // tap's exit hooks listen for it and would end the process with it.
    sigxfsz = process.listeners('SIGXFSZ');
    process.removeAllListeners('SIGXFSZ');
    process.on('SIGXFSZ', () => undefined);
  }
  execFileSync('prlimit', ['--pid', String(process.pid), `--fsize=${bytes}:`]);
}
