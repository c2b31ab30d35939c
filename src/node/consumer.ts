import { EventEmitter } from "node:events";
import { platformSocketFactory, sessionTimeoutFor, type SessionSocketFactory } from "./worker-session";
import { MAX_SESSION_TIMEOUT_S, MIN_SESSION_TIMEOUT_S } from "../contracts/session-wire";
import { hostname } from "node:os";
import type { ZodType } from "zod";
import { EdgeqClient } from "../client/edgeq-client";
import { EdgeqError } from "../contracts/errors";
import { MAX_HOLDER_CHARS, MAX_WAIT_S } from "../contracts/limits";
import { outcomeRunner, type Handler, type Task } from "./handler-outcome";
import { WorkerRunner } from "./runner";
import type { LeasedTask, RunTask, RunTimeout, TaskReport } from "./types";
import { WorkerApi } from "./worker-api";

/** Tasks at once by default: a few, so one slow task does not idle the worker, without flooding a host. */
const DEFAULT_CONCURRENCY = 4;

/** Lease length by default: a heartbeat every 20 s keeps it; a crashed worker's tasks are back in a minute. */
const DEFAULT_VISIBILITY_S = 60;

/** Grace period by default: time for a typical task to finish before it is handed back on shutdown. */
const DEFAULT_GRACE_S = 30;

/** What a {@link Worker} is told. */
export interface WorkerOptions<P = unknown> {
  /** The edgeq Worker's base URL. */
  url?: string;
  /** The bearer token. */
  token?: string;
  /** A client of your own instead of url and token (its fetch, its timeouts). */
  client?: EdgeqClient;
  /** Most tasks running at once (default 4). */
  concurrency?: number;
  /** Most tasks per lease request (default: the concurrency, at most 100). */
  batch?: number;
  /** Lease length in seconds; a heartbeat every third of it extends a running task's lease by it (default 60). */
  visibilityS?: number;
  /** Long poll: how long a lease request waits for work, in seconds (default 20, the most). */
  waitS?: number;
  /** After close() or a signal, how long running tasks may finish before they are handed back (default 30). */
  graceS?: number;
  /** A task running longer is aborted (`ctx.signal`) and failed for a retry. Default: the queue's
   * `max_run_s`, read at start; `null`: no limit. */
  timeoutS?: number | null;
  /** How a timeout's failure names the limit (default "timeoutS", or "the queue's max_run_s"). */
  timeoutSource?: string;
  /** Recorded as the tasks' `lease_holder` (default `<host>:<pid>`). */
  holder?: string;
  /** Checks and types each payload; a payload it refuses fails the task for good, naming the field. */
  schema?: ZodType<P>;
  /** Drain what is due (and what that makes due), then let run() resolve. */
  once?: boolean;
  /** Stop gracefully on SIGINT and SIGTERM (a second signal hands back at once). Default true. */
  handleSignals?: boolean;
  /**
   * Keep leases with a worker session — one WebSocket to the queue's coordinator, pinged, instead of an extend
   * call every third of `visibilityS` (docs/sdk.md, "Worker sessions"). Default: on where Node has a WebSocket
   * that sends headers (Node 22+); give a factory on Node 20 (e.g. the `ws` package's:
   * `(url, headers) => new WebSocket(url, { headers })`); `false`: extend calls.
   */
  session?: boolean | SessionSocketFactory;
  /** How long the session may go without a ping, or stay closed, before its leases lapse (5-120 s; default:
   * `visibilityS` within those bounds, so a dead worker's tasks come back as soon as without a session). */
  sessionTimeoutS?: number;
}

/** The worker's events and their arguments. */
export interface WorkerEvents {
  completed: [task: LeasedTask, result: unknown, durationMs: number];
  /** `dead`: the server will not retry it (permanent, or its last attempt). */
  failed: [task: LeasedTask, error: string, info: { retryable: boolean; dead: boolean; durationMs: number }];
  /** Handed back unfinished on shutdown: pending at once, attempt not counted. */
  released: [task: LeasedTask];
  cancelled: [task: LeasedTask];
  /** The lease was gone before the outcome was recorded; the task may run again elsewhere. */
  lease_lost: [task: LeasedTask];
  /** Something the worker could not do (an outcome it could not record after retries; `code` says why:
   * the server's refusal of it, or the request's failure); emitted only when someone listens, so that an
   * unheard "error" never throws. */
  error: [error: EdgeqError];
  /** A line of what the worker does, for a log (the `edgeq worker` command prints these). */
  log: [line: string];
  /** run() is about to resolve: nothing runs any more. */
  stopped: [];
}

/**
 * A pull worker for one queue: leases tasks (long polls, batched), runs `handler` on each with at most
 * `concurrency` at once, keeps their leases alive, and records each outcome in batched acks that carry the
 * next lease. `close()` (or SIGINT/SIGTERM) starts no new lease, gives running tasks `graceS` seconds, then
 * hands the rest back and ends the long poll. It rides out a restarting server: leases are retried with
 * backoff, acks are retried idempotently (an outcome the server confirmed is never sent differently).
 *
 * @example
 * import { Worker, PermanentError } from "edgeq/node";
 * const worker = new Worker("thumbnails", async (task, ctx) => {
 *   await ctx.progress(50, "resizing");
 *   if (!task.payload) throw new PermanentError("no payload");
 *   return { ok: true };
 * }, { url: "http://127.0.0.1:8787", token: process.env.EDGEQ_TOKEN, concurrency: 8 });
 * worker.on("failed", (task, error) => console.error(task.id, error));
 * await worker.run();
 */
export class Worker<P = unknown, R = unknown> extends EventEmitter<WorkerEvents> {
  readonly client: EdgeqClient;
  private runner: WorkerRunner | undefined;
  private running: Promise<void> | undefined;
  private closing = false;
  private readonly run_: RunTask;

  constructor(
    readonly queue: string,
    handler: Handler<P, R>,
    private readonly options: WorkerOptions<P> = {},
  ) {
    super();
    if (options.client) this.client = options.client;
    else if (options.url !== undefined && options.token !== undefined) {
      this.client = new EdgeqClient({ url: options.url, token: options.token });
    } else throw new TypeError("edgeq Worker: give url and token, or a client");
    const t = options.sessionTimeoutS;
    if (t !== undefined && !(Number.isInteger(t) && t >= MIN_SESSION_TIMEOUT_S && t <= MAX_SESSION_TIMEOUT_S)) {
      throw new TypeError(
        `edgeq Worker: sessionTimeoutS must be a whole number of seconds from ${MIN_SESSION_TIMEOUT_S} to ${MAX_SESSION_TIMEOUT_S}`,
      );
    }
    this.run_ = outcomeRunner(handler, options.schema);
  }

  /**
   * Works the queue until close() (or a signal), or with `once` until nothing is due. Rejects when the first
   * lease fails (a wrong URL, token or queue) or a later one fails for good; transient failures are retried.
   */
  run(): Promise<void> {
    this.running ??= this.work();
    return this.running;
  }

  /**
   * Stops: no new lease; running tasks get `graceS` seconds, then are handed back; the long poll is ended.
   * A second call hands back at once. Resolves when the worker has stopped.
   */
  async close(): Promise<void> {
    // Before the runner exists (run() not called, or still reading the queue's config) it stops on creation.
    this.closing = true;
    this.runner?.stop();
    await this.running?.catch(() => {});
  }

  private async work(): Promise<void> {
    const o = this.options;
    const concurrency = o.concurrency ?? DEFAULT_CONCURRENCY;
    const timeout = await this.timeout();
    const runner = new WorkerRunner(
      new WorkerApi(this.client, this.queue),
      this.run_,
      {
        queue: this.queue,
        concurrency,
        batch: o.batch ?? Math.min(concurrency, 100),
        visibilityS: o.visibilityS ?? DEFAULT_VISIBILITY_S,
        waitS: o.waitS ?? MAX_WAIT_S,
        holder: o.holder ?? `${hostname()}:${process.pid}`.slice(-MAX_HOLDER_CHARS),
        graceS: o.graceS ?? DEFAULT_GRACE_S,
        once: o.once ?? false,
        timeout,
        session: this.sessionChoice(),
      },
      { log: (line) => this.emit("log", line), report: (report) => this.tell(report) },
    );
    this.runner = runner;
    if (this.closing) runner.stop();
    const onSignal = () => runner.stop();
    const signals = o.handleSignals ?? true;
    if (signals) {
      process.on("SIGINT", onSignal);
      process.on("SIGTERM", onSignal);
    }
    try {
      await runner.run();
    } finally {
      if (signals) {
        process.off("SIGINT", onSignal);
        process.off("SIGTERM", onSignal);
      }
      this.emit("stopped");
    }
  }

  /** The worker session asked for: the option's factory, else the platform's; none when off or unavailable. */
  private sessionChoice(): { socket: SessionSocketFactory; timeoutS: number } | null {
    const { session, sessionTimeoutS } = this.options;
    if (session === false) return null;
    const socket = typeof session === "function" ? session : platformSocketFactory();
    const timeoutS = sessionTimeoutS ?? sessionTimeoutFor(this.options.visibilityS ?? DEFAULT_VISIBILITY_S);
    return socket === null ? null : { socket, timeoutS };
  }

  /** The per-task limit: the option, else the queue's max_run_s (one read, which also checks URL and token). */
  private async timeout(): Promise<RunTimeout | null> {
    const { timeoutS, timeoutSource } = this.options;
    if (timeoutS === null) return null;
    if (timeoutS !== undefined) return { seconds: timeoutS, source: timeoutSource ?? "timeoutS" };
    const config = await this.client.config(this.queue);
    return config.max_run_s == null ? null : { seconds: config.max_run_s, source: "the queue's max_run_s" };
  }

  private tell(report: TaskReport): void {
    const { task, durationMs } = report;
    switch (report.kind) {
      case "completed":
        this.emit("completed", task, report.result, durationMs);
        return;
      case "failed":
        this.emit("failed", task, report.error, { retryable: report.retryable, dead: report.dead, durationMs });
        return;
      case "released":
      case "cancelled":
      case "lease_lost":
        this.emit(report.kind, task);
        return;
      case "ack_failed":
        if (this.listenerCount("error") > 0) {
          const { code, message, status } = report.error;
          const text = `${task.id}: the outcome was not recorded (${code}): ${message}`;
          this.emit("error", new EdgeqError(code, text, { status, cause: report.error }));
        }
    }
  }
}

export type { Task };
