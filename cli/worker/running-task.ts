import { MAX_DELAY_S, MAX_ERROR_MESSAGE_CHARS } from "../../src/contracts/limits";
import type { AckBatcher } from "./ack-batcher";
import type { AckItem, AckResult, WorkerApi } from "./api";
import { LeaseKeeper, stopReasonOf } from "./lease-keeper";
import {
  TaskStopped,
  type HandlerContext,
  type LeasedTask,
  type Log,
  type Outcome,
  type RunTimeout,
  type StopReason,
  type TaskHandler,
} from "./types";

/** What a running task needs from its worker. */
export interface RunDeps {
  api: WorkerApi;
  acks: AckBatcher;
  handler: TaskHandler;
  visibilityS: number;
  /** Per-task run-time limit, or null for none. */
  timeout: RunTimeout | null;
  log: Log;
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
    if (result.code === "task_cancelled") return ["cancelled"];
    if (result.code === "lease_lost") return ["lease lost before the ack", "another worker may run it"];
    return ["ack failed", firstLine(`${result.code}: ${result.message}`)];
  }
  if (result.state === "cancelled") return ["cancelled"];
  if (item.kind === "complete") return ["completed"];
  if (item.kind === "release") return ["handed back", "pending, attempt not counted"];
  return [result.state === "dead" ? "failed (dead)" : "failed (will retry)", firstLine(item.error)];
}

/** One log line: `<id> <what> in <duration>[: <detail>]`. */
const line = (id: string, started: number, [what, detail]: [string, string?]) =>
  `${id} ${what} in ${seconds(Date.now() - started)}${detail ? `: ${detail}` : ""}`;

/** A handler's failure as the API takes it: 1 to MAX_ERROR_MESSAGE_CHARS characters. */
function errorText(message: string): string {
  const text = message.trim() || "failed (no message)";
  return text.length > MAX_ERROR_MESSAGE_CHARS ? text.slice(0, MAX_ERROR_MESSAGE_CHARS) : text;
}

/**
 * Hands back a task leased after the worker began stopping, without running it.
 *
 * @example
 * await releaseUnrun(task, acks, log);
 */
export async function releaseUnrun(task: LeasedTask, acks: AckBatcher, log: Log): Promise<void> {
  const started = Date.now();
  const item: AckItem = { kind: "release", id: task.id, lease_token: task.lease_token };
  const [what, detail] = describe(item, await acks.send(item));
  log(line(task.id, started, [`${what} unrun`, detail]));
}

/**
 * One leased task on its way through the worker: its handler runs while a {@link LeaseKeeper} heart-beats;
 * then it is completed or failed (one batch ack), or, if stopped first, handed back (shutdown) or dropped
 * (cancelled, lease lost). `done` settles when all of that is over, the task's child processes included.
 *
 * @example
 * const running = new RunningTask(task, deps);
 * running.handBack(); // on shutdown: stops it and releases it, unless its handler already finished
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
      deps.log(`${task.id} worker error: ${(error as Error).stack ?? String(error)}`);
    });
  }

  /** Whether the task was stopped for a shutdown and handed back (released) rather than acked. */
  get handedBack(): boolean {
    const reason: unknown = this.controller.signal.reason;
    return this.phase === "running" && reason instanceof TaskStopped && reason.reason === "shutdown";
  }

  /** Stops the task and releases it, if its handler has not finished yet. Returns whether it did. */
  handBack(): boolean {
    if (this.phase !== "running") return false;
    this.stop("shutdown");
    return true;
  }

  private stop(reason: StopReason): void {
    if (!this.controller.signal.aborted) this.controller.abort(new TaskStopped(reason));
  }

  private context(keeper: LeaseKeeper): HandlerContext {
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
      putArtifact: (name, bytes, type) => api.putArtifact(this.task, name, bytes, type, signal).catch(stopOn409),
      listArtifacts: () => api.listArtifacts(this.task).catch(stopOn409),
    };
  }

  private async run(): Promise<void> {
    const { task } = this;
    const { handler, acks, log } = this.deps;
    const started = Date.now();
    const signal = this.controller.signal;
    const keeper = new LeaseKeeper(this.deps.api, task, this.deps.visibilityS, (r) => this.stop(r), log);
    keeper.start();
    const { timeout } = this.deps;
    const timer = timeout === null ? undefined : setTimeout(() => this.stop("timeout"), timeout.seconds * 1000);

    const handled: Promise<Outcome> = handler
      .run(task, this.context(keeper))
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
        log(line(task.id, started, describe(item, await acks.send(item))));
        return;
      }
      keeper.stop();
      if (reason === "shutdown") {
        // Release while the handler's child process is being killed: the server knows at once.
        const item: AckItem = { kind: "release", id: task.id, lease_token: task.lease_token };
        const [result] = await Promise.all([acks.send(item), handled]);
        log(line(task.id, started, describe(item, result)));
      } else {
        await handled;
        log(line(task.id, started, [reason === "cancelled" ? "cancelled" : "lease lost", "stopped, not acked"]));
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
    let result = await acks.send(item);
    if (!result.ok && item.kind === "complete" && ["payload_too_large", "invalid_request"].includes(result.code)) {
      // The result itself was refused (e.g. over 256 KiB): the same run would be refused again.
      item = { kind: "fail", ...base, error: errorText(`result refused: ${result.message}`), retryable: false };
      result = await acks.send(item);
    }
    log(line(task.id, started, describe(item, result)));
  }
}
