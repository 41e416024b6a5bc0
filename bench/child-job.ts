// One job in a child process running the same module (the bench's helpers that must not share the server's process:
// a timing client, an answer checker): the parent forks the module with a flag, sends the job and awaits one answer.
import { fork, type Serializable } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** Forks `moduleUrl` with `flag`, sends `job`, and resolves with what serveJob's `work` answered (rejects with its error). */
export function jobInChild<J extends Serializable, R>(moduleUrl: string, flag: string, job: J, what: string): Promise<R> {
  const child = fork(fileURLToPath(moduleUrl), [flag], { execArgv: ['--import', 'tsx'], serialization: 'advanced' });
  return new Promise((resolve, reject) => {
    child.once('message', (m: { result?: R; error?: string }) => (m.error === undefined ? resolve(m.result as R) : reject(new Error(m.error))));
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`${what} exited with ${code} before answering`)));
    child.send(job);
  });
}

/** In a process forked by jobInChild with `flag`: does the one job and exits. Call at the module's top level. */
export function serveJob<J, R>(flag: string, work: (job: J) => Promise<R>): void {
  if (process.argv[2] !== flag) return;
  process.once('message', (job: J) => {
    work(job).then((result) => process.send!({ result }, () => process.exit(0)),
      (e: unknown) => process.send!({ error: String(e) }, () => process.exit(1)));
  });
}
