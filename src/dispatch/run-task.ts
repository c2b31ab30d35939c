import type { Db } from "../db/client";
import type { StoredTask } from "../contracts/stored-task";
import type { Effects } from "../effects/follow";
import type { AckKind, AckOutcome, ChildTask, FailItem, QueueConfig, TaskStore } from "../engine/store";
import { describeZodError } from "../contracts/describe-zod-error";
import { EdgeqError } from "../contracts/errors";
import type { Env } from "../env";
import { PermanentError, RetryAfterError } from "../processors/errors";
import type { ProcessorRegistry } from "../processors/registry";
import type { ProcessorContext } from "../processors/types";
import { processorContext, type Beat, type DependencyReader } from "./processor-context";

/** What the coordinator needs to run one leased task. */
export interface RunTaskDeps {
  /** The task's database: its store settles the run (fenced), its handle is the processor's `ctx.db`. */
  store: TaskStore;
  db: Db;
  env: Env;
  registry: ProcessorRegistry;
  config: QueueConfig;
  now: () => number;
  /** Where a run reports its changes (the effects owner, src/effects/): a heartbeat's progress here; the
   * drain reports its leases and settled tasks. */
  effects: Pick<Effects, "after">;
  /** A page of a task's dependencies, each read where it lives (the coordinator passes the shard layer's
   * reader, src/shards/dependency-pages.ts); absent, `ctx.dependencies()` reads the task's own store only. */
  dependencies?: DependencyReader;
}

export type RunOutcome = "completed" | "retrying" | "dead" | "cancelled" | "lease_lost";

export interface TaskRunResult {
  id: string;
  outcome: RunOutcome;
  children: ChildTask[];
  /** The retry time when `retrying`. */
  runAt?: number;
  error?: string;
  /** The holder write that settled the run, with the engine's outcome: reported as an HTTP ack's is. */
  ack?: { kind: AckKind; outcome: AckOutcome };
}

/** Longest a processor may run one task: 10 minutes. A hung call would otherwise be heart-beaten forever;
 * past this the task fails (retryable) and its lease is released for another attempt. */
export const MAX_TASK_RUN_MS = 10 * 60 * 1000;

/** Heartbeat a third of the visibility timeout: two heartbeats can be lost before the lease lapses. */
const HEARTBEATS_PER_LEASE = 3;

/** A heartbeat outcome that means "stop": the task was cancelled or the lease is gone. */
function isStop(error: unknown): error is EdgeqError {
  return error instanceof EdgeqError && (error.code === "task_cancelled" || error.code === "lease_lost");
}

/**
 * Runs one leased task with its processor and settles it through the same fenced engine calls an
 * external worker uses: heartbeats while it runs (extending the lease by its own length, as it was leased),
 * then complete, or fail — permanent for `PermanentError` or an invalid payload, after `retryAfterS` for
 * `RetryAfterError`, and retryable (its message in the error history) for anything else. A heartbeat
 * carrying progress is reported to the effects owner, as an HTTP heartbeat's is (its `progress` event).
 *
 * @example
 * const result = await runTask({ store: shard.store, db: shard.db, env, registry, config, now: Date.now, effects }, leasedRow);
 */
export async function runTask(deps: RunTaskDeps, task: StoredTask): Promise<TaskRunResult> {
  const { db, env, config, now } = deps;
  const leaseToken = task.leaseToken!;
  // The lease's own length (a lease from before the column existed: the queue's), for the heartbeat pace.
  const leaseS = task.leaseVisibilityS ?? config.visibility_timeout_s;
  const fail = (item: Omit<FailItem, "id" | "leaseToken">) => settleFailure(deps, task, item);

  const processorType = config.processor ?? task.type;
  const processor = deps.registry.get(processorType);
  if (!processor) {
    return fail({ message: `no processor registered for "${processorType}"`, retryable: false });
  }
  const parsed = processor.payload.safeParse(JSON.parse(task.payload));
  if (!parsed.success) {
    return fail({ message: `invalid payload: ${describeZodError(parsed.error, "payload")}`, retryable: false });
  }

  const abort = new AbortController();
  const beat: Beat = async (fields) => {
    try {
      await deps.store.heartbeatTask({ id: task.id, leaseToken, ...fields }, now());
    } catch (error) {
      if (isStop(error)) abort.abort(error);
      throw error;
    }
    if (fields.progress !== undefined || fields.progressMessage !== undefined) {
      deps.effects.after({ kind: "progress", queue: task.queue, id: task.id });
    }
  };
  const heartbeat = setInterval(
    () => {
      beat({}).catch((error: unknown) => {
        if (!isStop(error)) console.error(`task ${task.id}: heartbeat failed`, error);
      });
    },
    Math.max(1000, (leaseS * 1000) / HEARTBEATS_PER_LEASE),
  );
  const deadline = setTimeout(
    () => abort.abort(new Error(`timed out after ${MAX_TASK_RUN_MS / 1000} s`)),
    MAX_TASK_RUN_MS,
  );

  const ctx = processorContext(task, {
    store: deps.store,
    dependencies: deps.dependencies,
    db,
    env,
    now,
    signal: abort.signal,
    beat,
  });

  try {
    // ctx.env is the Worker's env, typed as the processor's author declared it (a claim nothing checks).
    const result = await raceAbort(processor.run(parsed.data, ctx as ProcessorContext<never>), abort.signal);
    const [outcome] = await deps.store.completeTasks([{ id: task.id, leaseToken, result }], now());
    if (outcome?.ok) {
      return { id: task.id, outcome: "completed", children: outcome.children, ack: { kind: "complete", outcome } };
    }
    // An oversized result changed nothing: fail the task with the reason rather than leave its lease to lapse
    // unexplained. Running it again would most likely produce the same result, so it is permanent.
    if (outcome?.ok === false && outcome.error.code === "payload_too_large") {
      return fail({ message: outcome.error.message, retryable: false });
    }
    return stopped(
      task.id,
      outcome?.ok === false ? outcome.error : undefined,
      outcome && { kind: "complete", outcome },
    );
  } catch (error) {
    const reason: unknown = abort.signal.aborted ? abort.signal.reason : error;
    if (isStop(reason)) return stopped(task.id, reason);
    if (reason instanceof PermanentError) return fail({ message: reason.message, retryable: false });
    if (reason instanceof RetryAfterError) {
      return fail({ message: reason.message, retryAfterS: reason.retryAfterS });
    }
    const message = reason instanceof Error ? `${reason.name}: ${reason.message}` : String(reason);
    return fail({ message });
  } finally {
    clearInterval(heartbeat);
    clearTimeout(deadline);
  }
}

/** Rejects as soon as `signal` aborts, so a processor that ignores its signal cannot hold the slot. */
function raceAbort<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    if (signal.aborted) return onAbort();
    signal.addEventListener("abort", onAbort, { once: true });
    void work.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

async function settleFailure(
  deps: RunTaskDeps,
  task: StoredTask,
  item: Omit<FailItem, "id" | "leaseToken">,
): Promise<TaskRunResult> {
  const [outcome] = await deps.store.failTasks([{ id: task.id, leaseToken: task.leaseToken!, ...item }], deps.now());
  const ack = outcome && { kind: "fail" as const, outcome };
  if (!outcome?.ok) return stopped(task.id, outcome?.error, ack);
  return {
    id: task.id,
    outcome: outcome.state === "pending" ? "retrying" : outcome.state === "dead" ? "dead" : "cancelled",
    children: [],
    runAt: outcome.state === "pending" ? outcome.run_at : undefined,
    error: item.message,
    ack,
  };
}

/** A run that ended without settling its task: cancelled (a heartbeat or the ack found the cancel), or its
 * lease lost. `ack` is the write that found it, if one did. */
function stopped(id: string, error: EdgeqError | undefined, ack?: TaskRunResult["ack"]): TaskRunResult {
  return {
    id,
    outcome: error?.code === "task_cancelled" ? "cancelled" : "lease_lost",
    children: [],
    error: error?.message,
    ...(ack ? { ack } : {}),
  };
}
