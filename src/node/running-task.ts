import { MAX_DELAY_S, MAX_ERROR_MESSAGE_CHARS } from "../contracts/limits";
import type { AckBatcher } from "./ack-batcher";
import type { AckItem, AckResult, WorkerApi } from "./worker-api";
import type { LeaseBeats } from "./lease-beats";
import { LeaseKeeper, stopReasonOf } from "./lease-keeper";
import {
  TaskStopped,
  type LeasedTask,
  type Outcome,
  type Reporter,
  type RunTask,
  type RunTimeout,
  type StopReason,
  type TaskContext,
  type TaskReport,
} from "./types";

/** What a running task needs from its worker. */
export interface RunDeps {
  api: WorkerApi;
  acks: AckBatcher;
  /** The worker's periodic heartbeats, one extend call for all its tasks. */
  beats: LeaseBeats;
  run: RunTask;
  visibilityS: number;
  /** Per-task run-time limit, or null for none. */
  timeout: RunTimeout | null;
  reporter: Reporter;
  /** Called once the handler has finished and its outcome is on its way: its slot is free. */
  onFree(): void;
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(2)}s`;

/** The first line of a message, cut at 200 characters: a log line stays one readable line; the full error
 * is on the task (`edgeq show`). */
const firstLine = (message: string) => {
  const line = message.trim().split("\n")[0] ?? "";
  return line.length > 200 ? `${line.slice(0, 200)}…` : line;
};

/** What the log says about an ack's answer: what happened, and a detail (an error's first line). */
function describe(item: AckItem, result: AckResult): [string, string?] {
  if (!result.ok) {
    if (result.error.code === "task_cancelled") return ["cancelled"];
    if (result.error.code === "lease_lost") return ["lease lost before the ack", "another worker may run it"];
    return ["ack failed", firstLine(`${result.error.code}: ${result.error.message}`)];
  }
  if (result.state === "cancelled") return ["cancelled"];
  if (item.kind === "complete") return ["completed"];
  if (item.kind === "release") return ["handed back", "pending, attempt not counted"];
  return [result.state === "dead" ? "failed (dead)" : "failed (will retry)", firstLine(item.error)];
}

/** One log line: `<id> <what> in <duration>[: <detail>]`. */
const line = (id: string, started: number, [what, detail]: [string, string?]) =>
  `${id} ${what} in ${seconds(Date.now() - started)}${detail ? `: ${detail}` : ""}`;

/** The report of an ack's answer (the worker's events). */
function reportOf(task: LeasedTask, item: AckItem, result: AckResult, durationMs: number): TaskReport {
  if (!result.ok) {
    if (result.error.code === "task_cancelled") return { kind: "cancelled", task, durationMs };
    if (result.error.code === "lease_lost") return { kind: "lease_lost", task, durationMs };
    return { kind: "ack_failed", task, error: result.error, durationMs };
  }
  if (result.state === "cancelled") return { kind: "cancelled", task, durationMs };
  if (item.kind === "complete") return { kind: "completed", task, result: item.result, durationMs };
  if (item.kind === "release") return { kind: "released", task, durationMs };
  return {
    kind: "failed",
    task,
    error: item.error,
    retryable: item.retryable,
    dead: result.state === "dead",
    durationMs,
  };
}

/** Logs and reports an ack's answer. */
function tell(reporter: Reporter, task: LeasedTask, started: number, item: AckItem, result: AckResult, unrun = "") {
  const [what, detail] = describe(item, result);
  reporter.log(line(task.id, started, [`${what}${unrun}`, detail]));
  reporter.report(reportOf(task, item, result, Date.now() - started));
}

/** A handler's failure as the API takes it: 1 to MAX_ERROR_MESSAGE_CHARS characters. */
function errorText(message: string): string {
  const text = message.trim() || "failed (no message)";
  return text.length > MAX_ERROR_MESSAGE_CHARS ? text.slice(0, MAX_ERROR_MESSAGE_CHARS) : text;
}

/**
 * Hands back a task leased after the worker began stopping, without running it.
 *
 * @example
 * await releaseUnrun(task, acks, reporter);
 */
export async function releaseUnrun(task: LeasedTask, acks: AckBatcher, reporter: Reporter): Promise<void> {
  const started = Date.now();
  const item: AckItem = { kind: "release", id: task.id, lease_token: task.lease_token };
  tell(reporter, task, started, item, await acks.send(item), " unrun");
}

/**
 * One leased task on its way through the worker: its handler runs while a {@link LeaseKeeper} heart-beats;
 * then it is completed or failed (one batch ack), or, if stopped first, handed back (shutdown) or dropped
 * (cancelled, lease lost). `done` settles when all of that is over, the task's child processes included.
 *
 * @example
 * const running = new RunningTask(task, deps);
 * running.stopAndRelease(); // on shutdown: stops it and releases it, unless its handler already finished
 * await running.done;
 */
export class RunningTask {
  /** Settles (never rejects) once the task is acked, handed back or dropped. */
  readonly done: Promise<void>;
  /** "acking" from the moment the handler finished: from then on the outcome is acked whatever happens. */
  private phase: "running" | "acking" = "running";
  private readonly controller = new AbortController();

  constructor(
    readonly task: LeasedTask,
    private readonly deps: RunDeps,
  ) {
    this.done = this.run().catch((error: unknown) => {
      deps.reporter.log(`${task.id} worker error: ${(error as Error).stack ?? String(error)}`);
    });
  }

  /** Whether the task was stopped for a shutdown and handed back (released) rather than acked. */
  get stoppedForShutdown(): boolean {
    const reason: unknown = this.controller.signal.reason;
    return this.phase === "running" && reason instanceof TaskStopped && reason.reason === "shutdown";
  }

  /** Stops the task and releases it, if its handler has not finished yet. Returns whether it did. */
  stopAndRelease(): boolean {
    if (this.phase !== "running") return false;
    this.stop("shutdown");
    return true;
  }

  private stop(reason: StopReason): void {
    if (!this.controller.signal.aborted) this.controller.abort(new TaskStopped(reason));
  }

  /** Whether its handler is still running (the task holds a concurrency slot). */
  get running(): boolean {
    return this.phase === "running";
  }

  private context(keeper: LeaseKeeper): TaskContext {
    const { api } = this.deps;
    const signal = this.controller.signal;
    const stopOn409 = (error: unknown): never => {
      const reason = stopReasonOf(error);
      if (reason) this.stop(reason);
      throw error;
    };
    return {
      signal,
      heartbeat: (update) => keeper.beat(update),
      // The API takes whole percents 0-100: 33.3 is 33, not a refusal that fails the handler.
      progress: (percent, message) =>
        keeper.beat({
          progress: Math.min(100, Math.max(0, Math.round(percent))),
          ...(message === undefined ? {} : { message }),
        }),
      checkpoint: (value) => keeper.beat({ checkpoint: value }),
      putArtifact: (name, bytes, type) => api.putArtifact(this.task, name, bytes, type, signal).catch(stopOn409),
      listArtifacts: () => api.listArtifacts(this.task).catch(stopOn409),
    };
  }

  private async run(): Promise<void> {
    const { task } = this;
    const { acks, reporter } = this.deps;
    const log = reporter.log;
    const started = Date.now();
    const signal = this.controller.signal;
    const keeper = new LeaseKeeper(
      this.deps.api,
      this.deps.beats,
      task,
      this.deps.visibilityS,
      (r) => this.stop(r),
      log,
    );
    keeper.start();
    const { timeout } = this.deps;
    const timer = timeout === null ? undefined : setTimeout(() => this.stop("timeout"), timeout.seconds * 1000);

    const handled: Promise<Outcome> = Promise.resolve()
      .then(() => this.deps.run(task, this.context(keeper)))
      .catch((error: unknown): Outcome => ({
        kind: "fail",
        // A handler that stopped because it was told to has nothing to add to the reason it was told.
        error: error instanceof TaskStopped ? "" : (error as Error).message,
        retryable: true,
      }))
      .then((outcome) => {
        if (!signal.aborted) this.phase = "acking";
        return outcome;
      });
    const stopped = new Promise<void>((resolve) => signal.addEventListener("abort", () => resolve(), { once: true }));
    await Promise.race([handled, stopped]);
    clearTimeout(timer);

    if (this.phase === "running") {
      const reason = signal.reason instanceof TaskStopped ? signal.reason.reason : "lease_lost";
      if (reason === "timeout" && timeout !== null) {
        // The handler's processes are being killed; the lease is kept until they are gone, then the task
        // fails (retryable) with the reason and whatever the handler reported as it died.
        const outcome = await handled;
        keeper.stop();
        const detail = outcome.kind === "fail" ? outcome.error.trim() : "";
        const error = `timed out after ${timeout.seconds}s (${timeout.source})${detail ? `; ${detail}` : ""}`;
        const item: AckItem = {
          kind: "fail",
          id: task.id,
          lease_token: task.lease_token,
          error: errorText(error),
          retryable: true,
        };
        tell(reporter, task, started, item, await acks.send(item));
        return;
      }
      keeper.stop();
      if (reason === "shutdown") {
        // Release while the handler's child process is being killed: the server knows at once.
        const item: AckItem = { kind: "release", id: task.id, lease_token: task.lease_token };
        const [result] = await Promise.all([acks.send(item), handled]);
        tell(reporter, task, started, item, result);
      } else {
        await handled;
        log(line(task.id, started, [reason === "cancelled" ? "cancelled" : "lease lost", "stopped, not acked"]));
        reporter.report({
          kind: reason === "cancelled" ? "cancelled" : "lease_lost",
          task,
          durationMs: Date.now() - started,
        });
      }
      return;
    }

    keeper.stop();
    const outcome = await handled;
    const base = { id: task.id, lease_token: task.lease_token };
    let item: AckItem =
      outcome.kind === "complete"
        ? { kind: "complete", ...base, result: outcome.result }
        : {
            kind: "fail",
            ...base,
            error: errorText(outcome.error),
            retryable: outcome.retryable,
            ...(outcome.retryAfterS === undefined
              ? {}
              : { retry_after_s: Math.min(Math.max(outcome.retryAfterS, 0), MAX_DELAY_S) }),
          };
    const sent = acks.send(item);
    this.deps.onFree();
    let result = await sent;
    if (
      !result.ok &&
      item.kind === "complete" &&
      ["payload_too_large", "invalid_request"].includes(result.error.code)
    ) {
      // The result itself was refused (e.g. over 256 KiB): the same run would be refused again.
      item = { kind: "fail", ...base, error: errorText(`result refused: ${result.error.message}`), retryable: false };
      result = await acks.send(item);
    }
    tell(reporter, task, started, item, result);
  }
}
