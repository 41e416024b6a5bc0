// The embedded store's WAL checkpoints, off the event loop. SQLite's automatic checkpoint runs inside the commit
// that crosses 1,000 WAL pages: copying them into the database and two fsyncs took 2–6 ms on the event loop about
// once in 300 claims, and every request queued behind it waited. Here a thread of its own, with its own
// connection, checkpoints PASSIVE (never blocking a writer) every CHECKPOINT_EVERY commits and when commits stop.
// A PASSIVE checkpoint alone never lets the log restart while commits keep coming (it finishes behind the newest
// frame, and the log restarts only at a write that finds every frame copied), so once the log holds RESTART_FRAMES
// the thread asks writers to pause, copies the few frames left and lets them go: the next commit starts the log
// from its beginning. The asynchronous commit waits for that pause without blocking the event loop; the
// synchronous one (tools, tests, benches) blocks. Durability is SQLite's own: the same commits, the same
// checkpoint with the same synchronous setting, only on another connection.
//
// The thread runs `checkpointThread` below from its source text (a worker from a file would need the TypeScript
// loader in development and tests, a compiled file in production): it must use nothing from this module's scope.
import { Worker } from 'node:worker_threads';
import type BetterSqlite3 from 'better-sqlite3';

/** Commits between two checkpoints under load (each costs the thread two fsyncs). */
const CHECKPOINT_EVERY = 100;
/** With fewer commits than that since the last checkpoint, the thread checkpoints once none came for this long. */
const IDLE_MS = 200;
/** The log's size (pages) at which writers pause for it to restart: 4,000 pages of 4 KiB, 16 MiB. */
export const RESTART_FRAMES = 4000;
/** A pause lasts the copy of a few commits' pages and two fsyncs; writers go on after this whatever happens. */
const MAX_PAUSE_MS = 1000;

/** The words shared with the thread (Int32Array indices). */
const SLOT = {
  /** Commits so far (main thread). */
  commits: 0,
  /** Rung every CHECKPOINT_EVERY commits and to stop (main thread). */
  bell: 1,
  /** 1 while writers are asked to wait (thread). */
  pause: 2,
  /** 1: stop (main thread). */
  stop: 3,
  /** 0 starting, 1 running, 2 stopped (thread). */
  state: 4,
  /** Statistics (thread): checkpoints, pauses, the longest pause and all pauses in µs. */
  checkpoints: 5,
  pauses: 6,
  maxPauseUs: 7,
  pausedUs: 8,
} as const;
const SLOTS = 9;
/** Atomics.waitAsync (Node ≥ 16; the project's TypeScript lib, ES2023, does not declare it yet). */
const waitAsync = (Atomics as unknown as {
  waitAsync(array: Int32Array, index: number, value: number, timeout: number): { async: false } | { async: true; value: Promise<string> };
}).waitAsync;
/** The thread's states (SLOT.state). */
const STATE = { starting: 0, running: 1, stopped: 2 } as const;

interface ThreadData {
  file: string;
  synchronous: 'FULL' | 'NORMAL';
  control: SharedArrayBuffer;
  /** Where better-sqlite3 is resolved from (this module's location). */
  from: string;
  slot: typeof SLOT;
  states: typeof STATE;
  every: number;
  idleMs: number;
  restartFrames: number;
}

interface CheckpointRow {
  busy: number;
  log: number;
  checkpointed: number;
}

/**
 * The thread's loop. Its source text is the worker's script: it reads everything from workerData and, as the
 * TypeScript transform may wrap named inner functions in a helper of this module, declares none.
 */
function checkpointThread(): void {
  const { workerData, parentPort } = process.getBuiltinModule('node:worker_threads');
  const data = workerData as ThreadData;
  const { slot, states } = data;
  const control = new Int32Array(data.control);
  const Database = process.getBuiltinModule('node:module').createRequire(data.from)('better-sqlite3') as typeof BetterSqlite3;
  const db = new Database(data.file, { timeout: 0, fileMustExist: true });
  try {
    db.pragma(`synchronous = ${data.synchronous}`);
    // A checkpoint of a connection that never writes: nothing for SQLite to trigger on its own.
    db.pragma('wal_autocheckpoint = 0');
    Atomics.store(control, slot.state, states.running);
    parentPort?.postMessage('running');
    let done = Atomics.load(control, slot.commits);
    while (Atomics.load(control, slot.stop) === 0) {
      const asked = Atomics.load(control, slot.pause) !== 0;
      if (!asked && Atomics.load(control, slot.commits) - done < data.every) {
        // Woken by the bell (enough commits, a pause asked for), or after idleMs: then whatever came meanwhile.
        Atomics.wait(control, slot.bell, Atomics.load(control, slot.bell), data.idleMs);
        if (Atomics.load(control, slot.stop) !== 0) break;
        if (Atomics.load(control, slot.pause) === 0 && Atomics.load(control, slot.commits) === done) continue;
      }
      done = Atomics.load(control, slot.commits);
      let row = (db.pragma('wal_checkpoint(PASSIVE)') as CheckpointRow[])[0]!;
      Atomics.add(control, slot.checkpoints, 1);
      const urgent = Atomics.load(control, slot.pause) !== 0;
      if (urgent || (row.busy === 0 && row.log >= data.restartFrames)) {
        // First, unpaused, what came during that checkpoint, so that the pause is left with a few commits' pages;
        // not when the main thread asked for the pause because the log outgrew its bound (writers wait already).
        if (!urgent && row.log < 2 * data.restartFrames) row = (db.pragma('wal_checkpoint(PASSIVE)') as CheckpointRow[])[0]!;
        const started = performance.now();
        Atomics.store(control, slot.pause, 1);
        try {
          // A commit under way when the pause began may land after a pass: the next one copies it.
          for (let pass = 0; pass < 3; pass++) {
            row = (db.pragma('wal_checkpoint(PASSIVE)') as CheckpointRow[])[0]!;
            if (row.busy === 0 && row.checkpointed === row.log) break;
          }
        } finally {
          Atomics.store(control, slot.pause, 0);
          Atomics.notify(control, slot.pause);
        }
        const us = Math.round((performance.now() - started) * 1000);
        Atomics.add(control, slot.pauses, 1);
        Atomics.add(control, slot.pausedUs, us);
        if (us > Atomics.load(control, slot.maxPauseUs)) Atomics.store(control, slot.maxPauseUs, us);
        done = Atomics.load(control, slot.commits);
      }
    }
  } finally {
    db.close();
    Atomics.store(control, slot.state, states.stopped);
    Atomics.notify(control, slot.state);
  }
}

/** What the checkpoint thread did so far. */
export interface CheckpointStats {
  /** Checkpoints the thread ran. */
  checkpoints: number;
  /** Pauses of the writers for the log to restart, their longest and their total (ms). */
  pauses: number;
  maxPauseMs: number;
  pausedMs: number;
}

export class Checkpointer {
  readonly #control = new Int32Array(new SharedArrayBuffer(SLOTS * Int32Array.BYTES_PER_ELEMENT));
  readonly #worker: Worker;

  /**
   * Starts the thread on the database `file` (already in WAL mode). `running` is called once it checkpoints
   * (the main connection's own automatic checkpoint can go), `failed` if it stops unasked (it must come back).
   */
  constructor(file: string, synchronous: 'full' | 'normal', hooks: { running(): void; failed(err: unknown): void }) {
    const data: ThreadData = {
      file, synchronous: synchronous === 'normal' ? 'NORMAL' : 'FULL', control: this.#control.buffer as SharedArrayBuffer,
      from: import.meta.url, slot: SLOT, states: STATE, every: CHECKPOINT_EVERY, idleMs: IDLE_MS, restartFrames: RESTART_FRAMES,
    };
    // No loader in the thread: its script is plain JavaScript already.
    this.#worker = new Worker(`(${checkpointThread.toString()})()`, { eval: true, workerData: data, execArgv: [] });
    this.#worker.unref();
    this.#worker.on('message', () => {
      if (!this.#stopping) hooks.running();
    });
    this.#worker.on('error', (err) => {
      this.#release();
      if (!this.#stopping) hooks.failed(err);
    });
    this.#worker.on('exit', () => {
      this.#release();
      if (!this.#stopping) hooks.failed(new Error('the checkpoint thread exited'));
    });
  }

  #stopping = false;

  /** After every commit. */
  committed(): void {
    if ((Atomics.add(this.#control, SLOT.commits, 1) + 1) % CHECKPOINT_EVERY === 0) this.#ring();
  }

  /**
   * Asks writers to wait until the thread has copied the whole log (the main thread's backstop when the log outgrew
   * its bound: the thread fell behind). Cleared by the thread, or by MAX_PAUSE_MS in each writer.
   */
  pause(): void {
    Atomics.store(this.#control, SLOT.pause, 1);
    this.#ring();
  }

  /** Before an asynchronous commit: resolves when writers may go on (undefined: at once). */
  paused(): Promise<unknown> | undefined {
    if (Atomics.load(this.#control, SLOT.pause) === 0) return undefined;
    const wait = waitAsync(this.#control, SLOT.pause, 1, MAX_PAUSE_MS);
    return wait.async ? wait.value : undefined;
  }

  /** Before a synchronous commit: blocks while writers are asked to wait. */
  waitSync(): void {
    if (Atomics.load(this.#control, SLOT.pause) !== 0) Atomics.wait(this.#control, SLOT.pause, 1, MAX_PAUSE_MS);
  }

  stats(): CheckpointStats {
    const c = this.#control;
    return {
      checkpoints: Atomics.load(c, SLOT.checkpoints), pauses: Atomics.load(c, SLOT.pauses),
      maxPauseMs: Atomics.load(c, SLOT.maxPauseUs) / 1000, pausedMs: Atomics.load(c, SLOT.pausedUs) / 1000,
    };
  }

  /**
   * Stops the thread and waits (briefly) until its connection is closed, so that the main connection's close is
   * the last one and removes the log as before.
   */
  stop(): void {
    if (this.#stopping) return;
    this.#stopping = true;
    Atomics.store(this.#control, SLOT.stop, 1);
    this.#ring();
    if (Atomics.load(this.#control, SLOT.state) === STATE.running) Atomics.wait(this.#control, SLOT.state, STATE.running, MAX_PAUSE_MS);
    if (Atomics.load(this.#control, SLOT.state) !== STATE.stopped) void this.#worker.terminate();
  }

  #ring(): void {
    Atomics.add(this.#control, SLOT.bell, 1);
    Atomics.notify(this.#control, SLOT.bell);
  }

  /** A thread gone while writers were asked to wait must not keep them waiting. */
  #release(): void {
    Atomics.store(this.#control, SLOT.pause, 0);
    Atomics.notify(this.#control, SLOT.pause);
  }
}
