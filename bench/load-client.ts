// The load loop of bench/http-load.ts, run in a child process so that the client's CPU (building requests, parsing
// answers, timing) is not taken from the server it measures: on this 2-core machine the server gets one core and
// the client the other, as wrk or a real client fleet would. Receives one job on IPC, answers with its samples.
import { Agent, request } from 'node:http';

export interface LoadRequest {
  method: string;
  path: string;
  body?: string;
  headers?: Record<string, string>;
}
/** The first `warmup` requests are sent (on the same connections), then the parent is told and the rest timed. */
interface Job { ports: number[]; requests: LoadRequest[]; warmup: number; connections: number; maxSeconds: number; keepAlive: boolean }

const nowMs = () => Number(process.hrtime.bigint()) / 1e6;

/** One request on `agent`; resolves with the status once the answer has been read. */
export function send(port: number, agent: Agent, r: LoadRequest): Promise<number> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string | number> = { ...r.headers };
    if (r.body !== undefined) {
      headers['content-type'] ??= 'application/json';
      headers['content-length'] = Buffer.byteLength(r.body);
    }
    const req = request({ host: '127.0.0.1', port, path: r.path, method: r.method, agent, headers }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end(r.body);
  });
}

// Only when forked as the load client: bench/http-load.ts imports send and LoadRequest from here too.
if (process.argv[1]?.endsWith('load-client.ts')) process.once('message', (job: Job) => {
  void (async () => {
    const agent = new Agent({ keepAlive: job.keepAlive, maxSockets: job.connections });
    /** Sends requests[from … to − 1] over `connections` workers until the deadline; their latencies and statuses. */
    const phase = async (from: number, to: number, deadline: number) => {
      const samples: number[] = [];
      const statuses: Record<number, number> = {};
      let issued = from;
      const worker = async (c: number) => {
        const port = job.ports[c % job.ports.length]!;
        while (issued < to && nowMs() < deadline) {
          const r = job.requests[issued++]!;
          const t0 = nowMs();
          const status = await send(port, agent, r);
          samples.push(nowMs() - t0);
          statuses[status] = (statuses[status] ?? 0) + 1;
        }
      };
      await Promise.all(Array.from({ length: job.connections }, (_, c) => worker(c)));
      return { samples, statuses };
    };
    // This process is new: its own HTTP code runs unoptimised at first, which the first timed answers would carry.
    let warmupStatuses: Record<number, number> = {};
    if (job.warmup > 0) {
      warmupStatuses = (await phase(0, job.warmup, Infinity)).statuses;
      await new Promise<void>((resolve) => {
        process.once('message', () => resolve());
        process.send!({ warmed: true });
      });
    }
    const started = nowMs();
    const { samples, statuses } = await phase(job.warmup, job.requests.length, started + job.maxSeconds * 1000);
    const seconds = (nowMs() - started) / 1000;
    agent.destroy();
    process.send!({ samples, statuses, warmupStatuses, seconds }, () => process.exit(0));
  })();
});
