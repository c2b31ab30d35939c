import { AckBatcher } from "./ack-batcher";
import { isTransient, type WorkerApi } from "./api";
import { releaseUnrun, RunningTask } from "./running-task";
import type { LeasedTask, Log, TaskHandler } from "./types";

/** How the worker leases and runs. */
export interface WorkerOptions {
  queue: string;
  /** Most tasks in flight at once. */
  concurrency: number;
  /** Most tasks per lease request. */
  batch: number;
  /** Lease length, and how far each heartbeat extends it, in seconds. */
  visibilityS: number;
  /** Long-poll wait per lease request, in seconds. */
  waitS: number;
  holder: string;
  /** After a shutdown signal, how long in-flight tasks may finish before they are handed back, in seconds. */
  graceS: number;
  /** Drain what is due, then return. */
  once: boolean;
}

/** Waits after a failed lease: doubling from 1 s up to 30 s, so a restarting server is not hammered and a
 * recovered one is found again within half a minute. */
const RETRY_MIN_MS = 1_000;
const RETRY_MAX_MS = 30_000;

/** With --wait 0 outside --once, an empty lease would loop at full speed: pause this long between polls. */
const IDLE_POLL_MS = 1_000;

/**
 * The lease loop. Leases batches (never more than the free slots), runs each task as a
 * {@link RunningTask}. On {@link stop} it starts no new lease (one in flight may still answer: what it
 * brings is handed back unrun), lets in-flight tasks finish within the grace period, then hands back
 * what is left.
 *
 * @example
 * const runner = new WorkerRunner(api, handler, options, log);
 * process.once("SIGTERM", () => runner.stop());
 * await runner.run();
 */
export class WorkerRunner {
  private readonly inflight = new Map<string, RunningTask>();
  private readonly acks: AckBatcher;
  /** Aborted on the first stop: ends retry sleeps. */
  private readonly stopped = new AbortController();
  /**
   * Aborts the long poll in flight, only when stopping *now* (second signal, fatal error). A graceful stop
   * lets it answer instead: the server's coordinator keeps an abandoned poll's place in line until its
   * wait ends and would lease the next due tasks (even ones this worker just handed back) to nobody,
   * where they would sit until their visibility timeout and lose an attempt.
   */
  private readonly leaseAbort = new AbortController();
  /** Releases of tasks leased after the stop began. */
  private readonly releases: Array<Promise<void>> = [];
  private leasing = false;
  private stopping = false;
  private handingBack = false;
  private graceTimer: NodeJS.Timeout | undefined;
  /** Resolvers waiting for the next change (a task finished, or the worker is stopping). */
  private waiters: Array<() => void> = [];

  constructor(
    private readonly api: WorkerApi,
    private readonly handler: TaskHandler,
    private readonly options: WorkerOptions,
    private readonly log: Log,
  ) {
    this.acks = new AckBatcher(api);
  }

  /**
   * Stops the worker: the first call starts no new lease (one in flight may still answer) and starts the
   * grace period; a second call (or the end of the grace period) hands back every task whose handler is
   * still running, and a second call also abandons the lease in flight.
   */
  stop(): void {
    if (this.stopping) {
      this.leaseAbort.abort();
      this.handBackAll();
      return;
    }
    this.stopping = true;
    this.stopped.abort();
    const waits = [
      ...(this.inflight.size > 0
        ? [`${this.inflight.size} task(s) in flight get ${this.options.graceS}s to finish`]
        : []),
      ...(this.leasing ? [`the lease request in flight ends within ${this.options.waitS}s`] : []),
    ];
    if (waits.length > 0) this.log(`stopping: ${waits.join("; ")} (signal again to hand back now)`);
    if (this.inflight.size > 0) {
      this.graceTimer = setTimeout(() => this.handBackAll(), this.options.graceS * 1000);
    }
    this.notify();
  }

  /** Runs until stopped (or, with `once`, until nothing is due and nothing runs). Rejects on a fatal error. */
  async run(): Promise<void> {
    let fatal: unknown;
    let leasedOnce = false;
    let failures = 0;
    while (!this.stopping) {
      while (this.inflight.size >= this.options.concurrency && !this.stopping) await this.nextChange();
      if (this.stopping) break;
      const max = Math.min(this.options.batch, this.options.concurrency - this.inflight.size);
      let tasks: LeasedTask[];
      this.leasing = true;
      try {
        tasks = await this.api.lease(
          {
            max,
            waitS: this.options.once ? 0 : this.options.waitS,
            visibilityS: this.options.visibilityS,
            holder: this.options.holder,
          },
          this.leaseAbort.signal,
        );
      } catch (error) {
        this.leasing = false;
        if (this.stopping) break;
        // The first lease checks the URL, token and queue: a mistake there should end the worker at once.
        if (!leasedOnce || this.options.once || !isTransient(error)) {
          fatal = error;
          this.stop();
          this.handBackAll();
          break;
        }
        const delay = Math.min(RETRY_MIN_MS * 2 ** failures++, RETRY_MAX_MS);
        this.log(`lease failed, retrying in ${delay / 1000}s: ${(error as Error).message}`);
        await this.sleep(delay);
        continue;
      }
      this.leasing = false;
      leasedOnce = true;
      failures = 0;
      if (this.stopping) {
        // Leased after the stop signal: hand these back unrun.
        for (const task of tasks) this.releases.push(releaseUnrun(task, this.acks, this.log));
        break;
      }
      for (const task of tasks) this.start(task);
      if (this.options.once && tasks.length < max) {
        // Nothing more is due now. Wait for a task to finish (it may make more due, e.g. chained children);
        // with nothing running, the queue is drained.
        if (this.inflight.size === 0) break;
        await this.nextChange();
      } else if (tasks.length === 0 && this.options.waitS === 0) {
        await this.sleep(IDLE_POLL_MS);
      }
    }
    while (this.inflight.size > 0) await this.nextChange();
    clearTimeout(this.graceTimer);
    await Promise.all([this.acks.flush(), ...this.releases]);
    if (fatal !== undefined) throw fatal;
  }

  private start(task: LeasedTask): RunningTask {
    const running = new RunningTask(task, {
      api: this.api,
      acks: this.acks,
      handler: this.handler,
      visibilityS: this.options.visibilityS,
      log: this.log,
    });
    this.inflight.set(task.id, running);
    void running.done.then(() => {
      this.inflight.delete(task.id);
      this.notify();
    });
    return running;
  }

  private handBackAll(): void {
    if (this.handingBack) return;
    this.handingBack = true;
    clearTimeout(this.graceTimer);
    const handed = [...this.inflight.values()].filter((t) => t.handBack()).length;
    if (handed > 0) this.log(`handing back ${handed} unfinished task(s)`);
  }

  private nextChange(): Promise<void> {
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  private notify(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const resolve of waiters) resolve();
  }

  /** Sleeps `ms`, or less if the worker stops meanwhile. */
  private sleep(ms: number): Promise<void> {
    const signal = this.stopped.signal;
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener("abort", done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal.addEventListener("abort", done);
    });
  }
}
