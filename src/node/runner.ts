import { EdgeqError } from "../contracts/errors";
import { AckBatcher } from "./ack-batcher";
import { LeaseBeats } from "./lease-beats";
import { WorkerSession, type SessionSocketFactory } from "./worker-session";
import { isTransient, type LeaseRequest, type WorkerApi } from "./worker-api";
import { releaseUnrun, RunningTask } from "./running-task";
import type { LeasedTask, Reporter, RunTask, RunTimeout } from "./types";

/** How the worker leases and runs. */
export interface RunnerOptions {
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
  /** Per-task run-time limit (null: none), and where it came from, for the failure message. */
  timeout: RunTimeout | null;
  /** Keep leases with a worker session (its WebSocket, its timeout), or null: an extend call per beat. */
  session: { socket: SessionSocketFactory; timeoutS: number } | null;
}

/** How often a session's leases are looked at for one past half its length (extended then, by its worker: the
 * session keeps it alive, not its expiry, so a 2-minute task is never extended): a tenth of the lease. */
const SESSION_CHECK_SHARE = 0.1;

/** Waits after a failed lease: doubling from 1 s up to 30 s, so a restarting server is not hammered and a
 * recovered one is found again within half a minute. */
const RETRY_MIN_MS = 1_000;
const RETRY_MAX_MS = 30_000;

/** With --wait 0 outside --once, an empty lease would loop at full speed: pause this long between polls. */
const IDLE_POLL_MS = 1_000;

/**
 * After handing tasks back, how long a stopping worker keeps its long poll open before abandoning it. A
 * released task is pending at once and the queue's coordinator hands it to the first waiting poll within
 * milliseconds of the release (on a local `wrangler dev`, well under 100 ms): usually this worker's own
 * poll, which then releases it again at once and ends. When another worker's poll took it, ours is ended
 * after this pause. One second is ten times the delivery time, and short enough that a stop stays quick.
 */
const RELEASE_SETTLE_MS = 1_000;

/** After a withdraw was answered, how long the withdrawn poll may take to answer before it is abandoned: the
 * server answers it at once (well under a second locally); five seconds covers a slow link. */
const WITHDRAWN_POLL_MS = 5_000;

/** Names a long poll, unique enough that two polls (of any worker) never share one. */
const newWaiterId = () => `w-${crypto.randomUUID()}`;

/**
 * The lease loop. Leases batches (never more than the free slots), runs each task as a
 * {@link RunningTask}. On {@link stop} it starts no new lease, lets in-flight tasks finish within the grace
 * period, then hands back what is left, and ends its long poll as soon as nothing can come back to it.
 *
 * Why the long poll is not simply aborted at once: a client that hangs up may still be a waiter on the
 * server (under `wrangler dev` the disconnect never reaches the Worker), and a task handed back while such
 * an abandoned poll waits is leased to it — to nobody — until its lease runs out, an attempt counted. So
 * while tasks may still be handed back the poll stays open, and whatever it returns once stopping began
 * is released at once, unrun; it is ended when nothing is running (at once for an idle worker, so a stop
 * takes a moment rather than the rest of the wait) or {@link RELEASE_SETTLE_MS} after the last hand-back.
 * Each long poll carries a `waiter_id`; it is ended by withdrawing it on the server (which answers it at
 * once and takes back what it had handed out unclaimed), and only aborted when the server cannot withdraw.
 *
 * Slots: a task holds one while its handler runs. When a handler finishes while the worker waits for a
 * slot, its ack goes in the same request as the next lease (the ack API's `lease`): one round trip.
 *
 * @example
 * const runner = new WorkerRunner(api, run, options, reporter);
 * process.once("SIGTERM", () => runner.stop());
 * await runner.run();
 */
export class WorkerRunner {
  private readonly inflight = new Map<string, RunningTask>();
  private readonly acks: AckBatcher;
  private readonly beats: LeaseBeats;
  /** The worker session and the beats of the leases it keeps, once it opened (null: none). */
  private session: { session: WorkerSession; beats: LeaseBeats } | null = null;
  /** Aborted on the first stop: ends retry sleeps. */
  private readonly stopped = new AbortController();
  /** The long poll in flight, if any: its name on the server, and aborting it abandons the request. */
  private poll: { controller: AbortController; waiterId: string; ending: boolean } | undefined;
  /** Releases of tasks leased after the stop began. */
  private readonly releases: Array<Promise<void>> = [];
  private stopping = false;
  private releasing = false;
  /** When the last handed-back task's release was answered (ms), or undefined if none was handed back. */
  private lastShutdownReleaseAt: number | undefined;
  private graceTimer: ReturnType<typeof setTimeout> | undefined;
  private settleTimer: ReturnType<typeof setTimeout> | undefined;
  /** Withdraw requests in flight, awaited before run() returns. */
  private readonly withdrawals: Array<Promise<void>> = [];
  /** Resolvers waiting for the next change (a task finished, or the worker is stopping). */
  private waiters: Array<() => void> = [];

  private readonly log: Reporter["log"];

  constructor(
    private readonly api: WorkerApi,
    private readonly runTask: RunTask,
    private readonly options: RunnerOptions,
    private readonly reporter: Reporter,
  ) {
    this.acks = new AckBatcher(api, options.visibilityS);
    this.beats = new LeaseBeats(api, options.visibilityS);
    this.log = reporter.log;
  }

  /** Tasks whose handler is still running: each holds a concurrency slot. */
  private get busy(): number {
    let n = 0;
    for (const task of this.inflight.values()) if (task.running) n++;
    return n;
  }

  /**
   * Stops the worker: the first call starts no new lease and starts the grace period; a second call (or the
   * end of the grace period) hands back every task whose handler is still running. Each logs what it does.
   */
  stop(): void {
    if (this.stopping) {
      this.releaseUnfinished();
      return;
    }
    this.stopping = true;
    this.stopped.abort();
    if (this.inflight.size > 0) {
      this.log(
        `stopping: ${this.inflight.size} running task(s) get ${this.options.graceS}s to finish, then are handed back (signal again to hand back now)`,
      );
      this.graceTimer = setTimeout(() => this.releaseUnfinished(), this.options.graceS * 1000);
    } else {
      this.log(this.poll ? "stopping: no task is running; ending the lease request" : "stopping: no task is running");
    }
    this.endPollWhenDone();
    this.notify();
  }

  /** Runs until stopped (or, with `once`, until nothing is due and nothing runs). Rejects on a fatal error. */
  async run(): Promise<void> {
    let fatal: unknown;
    let leasedOnce = false;
    let failures = 0;
    await this.openSession();
    while (!this.stopping) {
      while (this.busy >= this.options.concurrency && !this.stopping) await this.nextChange();
      if (this.stopping) break;
      const max = Math.min(this.options.batch, this.options.concurrency - this.busy);
      const session = this.session?.session.current ?? null;
      const request: LeaseRequest = {
        max,
        waitS: this.options.once ? 0 : this.options.waitS,
        visibilityS: session !== null ? this.session!.session.leaseS : this.options.visibilityS,
        holder: this.options.holder,
        session,
      };
      let tasks: LeasedTask[];
      // Acks waiting to go carry this lease (no wait); only when that brings nothing does the worker poll.
      const carried = leasedOnce ? await this.acks.sendWithLease(request) : null;
      const poll = { controller: new AbortController(), waiterId: newWaiterId(), ending: false };
      try {
        if (carried !== null && carried.length > 0) {
          tasks = carried;
        } else {
          if (this.stopping) break;
          this.poll = poll;
          tasks = await this.api.lease(request, poll.controller.signal, poll.waiterId);
        }
      } catch (error) {
        if (this.stopping) break;
        // The first lease checks the URL, token and queue: a mistake there should end the worker at once.
        if (!leasedOnce || this.options.once || !isTransient(error)) {
          fatal = error;
          this.stop();
          this.releaseUnfinished();
          break;
        }
        const delay = Math.min(RETRY_MIN_MS * 2 ** failures++, RETRY_MAX_MS);
        this.log(`lease failed, retrying in ${delay / 1000}s: ${(error as Error).message}`);
        await this.sleep(delay);
        continue;
      } finally {
        this.poll = undefined;
        // Over (answered or failed): aborting it now only clears what waits on it (a withdraw's timer).
        poll.controller.abort();
      }
      leasedOnce = true;
      failures = 0;
      // Claimed before anything runs; a stop that began meanwhile (or before) still wins.
      const ready = this.stopping ? tasks : await this.claimProvisional(tasks, request.visibilityS);
      if (this.stopping) {
        // Leased after the stop began (perhaps tasks this worker just handed back): release them unrun.
        for (const task of ready) this.releases.push(releaseUnrun(task, this.acks, this.reporter));
        break;
      }
      for (const task of ready) this.start(task, request);
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
    clearTimeout(this.settleTimer);
    await Promise.all([this.acks.flush(), ...this.releases, ...this.withdrawals]);
    this.session?.session.close();
    if (fatal !== undefined) throw fatal;
  }

  /**
   * Opens the worker session, if asked: from then on leases are taken under it while its socket is open, and
   * kept by it (their beats only extend one past half its length). When it ends (the server lapsed its
   * leases), every task running under it is stopped, lease lost.
   */
  private async openSession(): Promise<void> {
    const asked = this.options.session;
    if (asked === null) return;
    const session = new WorkerSession(
      this.api.client,
      this.options.queue,
      asked.socket,
      asked.timeoutS,
      this.log,
      () => this.session?.beats.loseAll(new EdgeqError("lease_lost", "the worker session ended: its leases lapsed")),
      () => this.session?.beats.beatNow(),
    );
    if (!(await session.start())) return;
    const leaseMs = session.leaseS * 1000;
    const beats = new LeaseBeats(this.api, session.leaseS, {
      intervalMs: leaseMs * SESSION_CHECK_SHARE,
      minAgeMs: leaseMs / 2,
    });
    this.session = { session, beats };
  }

  /**
   * A long poll answered after it waited hands out provisional leases (`claim_by`): claim them before
   * running anything, so a task is never worked on under a lease the server may take back. A task whose
   * claim fails (the window passed) is not run; it is already back in the queue, attempt refunded.
   */
  private async claimProvisional(tasks: LeasedTask[], visibilityS: number): Promise<LeasedTask[]> {
    const provisional = tasks.filter((t) => t.claim_by !== null);
    if (provisional.length === 0) return tasks;
    let claimed: Set<string>;
    try {
      claimed = await this.api.claim(provisional, visibilityS);
    } catch (error) {
      this.log(`claiming ${provisional.length} task(s) failed, leaving them to the queue: ${(error as Error).message}`);
      claimed = new Set();
    }
    const lost = provisional.filter((t) => !claimed.has(t.id));
    if (lost.length > 0) this.log(`${lost.length} task(s) were not claimed in time; the queue has them back`);
    return tasks.filter((t) => t.claim_by === null || claimed.has(t.id));
  }

  /** Runs a task leased by `request`: kept by the session's beats when it was leased under the session. */
  private start(task: LeasedTask, request: LeaseRequest): RunningTask {
    const kept = request.session && this.session ? this.session.beats : this.beats;
    const running = new RunningTask(task, {
      api: this.api,
      acks: this.acks,
      beats: kept,
      run: this.runTask,
      visibilityS: request.visibilityS,
      timeout: this.options.timeout,
      reporter: this.reporter,
      onFree: () => this.notify(),
    });
    this.inflight.set(task.id, running);
    void running.done.then(() => {
      this.inflight.delete(task.id);
      if (running.stoppedForShutdown) this.lastShutdownReleaseAt = Date.now();
      this.endPollWhenDone();
      this.notify();
    });
    return running;
  }

  private releaseUnfinished(): void {
    if (this.releasing) return;
    this.releasing = true;
    clearTimeout(this.graceTimer);
    const handed = [...this.inflight.values()].filter((t) => t.stopAndRelease()).length;
    if (handed > 0) {
      this.log(
        `handing back ${handed} unfinished task(s) now${this.poll ? "; the lease request stays open to release what it brings" : ""}`,
      );
    }
  }

  /**
   * Once stopping and nothing runs any more, ends the long poll: at once, or {@link RELEASE_SETTLE_MS}
   * after the last hand-back, so a released task the server hands to this very poll is received (and
   * released again) rather than lost to an abandoned request.
   */
  private endPollWhenDone(): void {
    if (!this.stopping || this.inflight.size > 0 || this.poll === undefined) return;
    const poll = this.poll;
    const wait =
      this.lastShutdownReleaseAt === undefined ? 0 : this.lastShutdownReleaseAt + RELEASE_SETTLE_MS - Date.now();
    clearTimeout(this.settleTimer);
    if (wait <= 0) this.endPoll(poll);
    else this.settleTimer = setTimeout(() => this.endPoll(poll), wait);
  }

  /**
   * Ends a long poll: withdraws it on the server, which answers it at once (what it brings is released by
   * the loop); aborts it when the withdraw fails, and {@link WITHDRAWN_POLL_MS} after a withdraw in case the
   * answer is lost on the way.
   */
  private endPoll(poll: NonNullable<WorkerRunner["poll"]>): void {
    if (poll.ending) return;
    poll.ending = true;
    if (this.options.once || this.options.waitS === 0) {
      poll.controller.abort();
      return;
    }
    const withdrawal = this.api
      .withdraw(poll.waiterId)
      .then(() => {
        if (poll.controller.signal.aborted) return;
        const timer = setTimeout(() => poll.controller.abort(), WITHDRAWN_POLL_MS);
        // The poll's own end (the loop's finally aborts it) makes the timer moot.
        poll.controller.signal.addEventListener("abort", () => clearTimeout(timer));
      })
      .catch((error: unknown) => {
        this.log(`withdrawing the lease request failed, abandoning it: ${(error as Error).message}`);
        poll.controller.abort();
      });
    this.withdrawals.push(withdrawal);
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
