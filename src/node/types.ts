import type { Artifact, LeasedTask } from "../client/types";
import type { EdgeqError } from "../contracts/errors";

export type { Artifact, LeasedTask };

/** What a task's run came to: complete with a result, or fail (retryable or not, optionally after a delay). */
export type Outcome =
  { kind: "complete"; result: unknown } | { kind: "fail"; error: string; retryable: boolean; retryAfterS?: number };

/** Why a running task was stopped before its handler finished. */
export type StopReason =
  /** The worker is shutting down: the task is handed back (released), its attempt not counted. */
  | "shutdown"
  /** A heartbeat was answered `task_cancelled`: the task is cancelled on the server. */
  | "cancelled"
  /** A heartbeat was answered `lease_lost` (or the task is gone): someone else may hold it now. */
  | "lease_lost"
  /** The task ran past its time limit ({@link RunTimeout}): it is failed, retryable. */
  | "timeout";

/** A per-task run-time limit, and where it came from (named in the failure, e.g. "the queue's max_run_s"). */
export interface RunTimeout {
  seconds: number;
  source: string;
}

/** The reason an aborted `ctx.signal` carries, and what context calls throw after the task was stopped. */
export class TaskStopped extends Error {
  override readonly name = "TaskStopped";
  constructor(readonly reason: StopReason) {
    super(`task stopped: ${reason}`);
  }
}

/** A heartbeat's update: progress (0-100), a message, a checkpoint (any JSON a retry receives back). */
export interface HeartbeatUpdate {
  progress?: number;
  message?: string;
  checkpoint?: unknown;
}

/** What a handler may do while it runs a task. */
export interface TaskContext {
  /** Aborted (its reason a {@link TaskStopped}) when the task must stop: the lease was lost, the task was
   * cancelled, it ran past its time limit, or the worker is handing it back. Stop, and return or throw. */
  signal: AbortSignal;
  /** Extends the lease now and records progress (percent, rounded and kept within 0-100) and a message. */
  progress(percent: number, message?: string): Promise<void>;
  /** Extends the lease now and saves a checkpoint: a retry of this task gets it back as `task.checkpoint`. */
  checkpoint(value: unknown): Promise<void>;
  /** Extends the lease now, recording any of progress, message and checkpoint together. */
  heartbeat(update: HeartbeatUpdate): Promise<void>;
  /** Uploads an artifact of the task (fenced by its lease). */
  putArtifact(name: string, bytes: Uint8Array, contentType: string): Promise<Artifact>;
  /** The task's stored artifacts. */
  listArtifacts(): Promise<Artifact[]>;
}

/** Runs one leased task to an {@link Outcome}; a throw fails the task (retryable). */
export type RunTask = (task: LeasedTask, ctx: TaskContext) => Promise<Outcome>;

/** One human-readable line about what the worker did (the CLI prints them). */
export type Log = (line: string) => void;

/** What happened to a task, as the worker reports it (the `Worker`'s events). */
export type TaskReport =
  | { kind: "completed"; task: LeasedTask; result: unknown; durationMs: number }
  | {
      kind: "failed";
      task: LeasedTask;
      error: string;
      retryable: boolean;
      /** Whether the server made it dead (permanent, or its last attempt). */
      dead: boolean;
      durationMs: number;
    }
  /** Handed back unfinished (shutdown): pending at once, the attempt not counted. */
  | { kind: "released"; task: LeasedTask; durationMs: number }
  | { kind: "cancelled"; task: LeasedTask; durationMs: number }
  /** The lease was gone (expired, taken over): the work may be redone elsewhere; nothing was recorded. */
  | { kind: "lease_lost"; task: LeasedTask; durationMs: number }
  /** The outcome could not be recorded (after retries): the task will come back when its lease runs out. */
  | { kind: "ack_failed"; task: LeasedTask; error: EdgeqError; durationMs: number };

/** Where the worker's internals send lines and reports. */
export interface Reporter {
  log: Log;
  report(report: TaskReport): void;
}
