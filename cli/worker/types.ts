import type { InferResponseType } from "hono/client";
import type { Client } from "../client";

/** A task as the lease API hands it out, with its lease token. */
export type LeasedTask = InferResponseType<Client["v1"]["queues"][":queue"]["lease"]["$post"], 200>["tasks"][number];

/** An artifact as the API describes it. */
export interface ArtifactInfo {
  name: string;
  content_type: string;
  size: number;
}

/** What a handler decided: complete with a result, or fail (retryable or not, optionally after a delay). */
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

/** A per-task run-time limit: `--timeout`, else the queue's `max_run_s`. */
export interface RunTimeout {
  seconds: number;
  /** Where the limit came from, named in the failure: "--timeout" or "the queue's max_run_s". */
  source: string;
}

/** Thrown by handler-context calls after the task was stopped; carries the reason. */
export class TaskStopped extends Error {
  override readonly name = "TaskStopped";
  constructor(readonly reason: StopReason) {
    super(`task stopped: ${reason}`);
  }
}

/** What a handler may do while it runs a task. */
export interface HandlerContext {
  /** Aborted (with a {@link TaskStopped} reason) when the task must stop: kill child processes, return. */
  signal: AbortSignal;
  /** Extends the lease now and records progress and/or a checkpoint (any JSON a retry receives back). */
  heartbeat(update: { progress?: number; message?: string; checkpoint?: unknown }): Promise<void>;
  /** Uploads an artifact of the task (fenced by its lease). */
  putArtifact(name: string, bytes: Uint8Array, contentType: string): Promise<ArtifactInfo>;
  /** The task's stored artifacts. */
  listArtifacts(): Promise<ArtifactInfo[]>;
}

/**
 * Runs one leased task. It returns an {@link Outcome}; a thrown error fails the task (retryable). The
 * worker owns the lease: heartbeats, acks and hand-backs are not the handler's business.
 */
export interface TaskHandler {
  /** Shown in the worker's start line, e.g. `exec "./render.sh"`. */
  describe: string;
  run(task: LeasedTask, ctx: HandlerContext): Promise<Outcome>;
}

/** One line of the worker's stderr log. */
export type Log = (line: string) => void;
