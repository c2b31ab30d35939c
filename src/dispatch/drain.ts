import type { TaskRow } from "../db/schema";
import { leaseTasks } from "../engine/lease";
import type { PublishedEvent, TaskEventKind } from "../contracts/events";
import { MAX_BATCH } from "../contracts/limits";
import type { RateLimiter } from "./rate-limiter";
import { runTask, type RunTaskDeps, type TaskRunResult } from "./run-task";

/**
 * Most tasks one drain starts. A drain runs inside one Durable Object alarm invocation, which has Worker
 * limits (developers.cloudflare.com/workers/platform/limits): 30 s of CPU by default (configurable to
 * 5 min), 10,000 subrequests on the Paid plan and 50 on Free, and 6 simultaneous outgoing connections.
 * A task costs a handful of subrequests (its share of a lease, heartbeats, R2 writes, model or webhook
 * calls, the ack) and little CPU (processors mostly wait on I/O), so 100 tasks per drain stays inside the
 * Paid limits with room; the coordinator re-arms its alarm at once when a drain stops here with work
 * left. Concurrency above 6 only helps processors whose waits are not outgoing connections.
 */
export const MAX_TASKS_PER_DRAIN = 100;

export interface DrainDeps extends RunTaskDeps {
  queue: string;
  limiter: RateLimiter;
  /** Called for each child enqueued into another queue, so its coordinator hears of it. */
  wake: (queue: string, runAt: number) => Promise<void>;
  /**
   * Tells the queue's event stream what the drain did, each after its write committed: the rows it leased,
   * then the tasks' outcomes (completed, failed, dead, cancelled; a same-queue child's "enqueued"),
   * gathered and sent once per turn of the loop rather than once per task.
   */
  events?: {
    leased: (rows: TaskRow[]) => Promise<void>;
    settled: (events: PublishedEvent[]) => Promise<void>;
  };
}

/** A run's outcome as the event stream names it (a lost lease published nothing: someone else holds it). */
const OUTCOME_EVENT: Partial<Record<TaskRunResult["outcome"], TaskEventKind>> = {
  completed: "completed",
  retrying: "failed",
  dead: "dead",
  cancelled: "cancelled",
};

export interface DrainResult {
  results: TaskRunResult[];
  /** When to drain again (work left over, rate-limited, or a retry coming due); null when idle. */
  nextAt: number | null;
}

/**
 * Runs the queue's due push tasks: leases as many as free slots (`concurrency`), the rate limit and the
 * budget allow, runs each with its processor, and leases again as slots free up — until nothing is due or
 * the budget is spent. Every task goes through `runTask`, i.e. the same fenced engine calls as any worker.
 *
 * @example
 * const { results, nextAt } = await drainQueue({ db, env, registry, config, now, queue, limiter, wake });
 */
export async function drainQueue(deps: DrainDeps, maxTasks = MAX_TASKS_PER_DRAIN): Promise<DrainResult> {
  const { config, limiter, now } = deps;
  const running = new Set<Promise<void>>();
  const results: TaskRunResult[] = [];
  let started = 0;
  let nextAt: number | null = null;
  const settled: PublishedEvent[] = [];
  // A lost event must not stop the drain (the tasks are settled; a client resyncs over HTTP).
  const flush = async () => {
    if (settled.length === 0 || !deps.events) return;
    await deps.events
      .settled(settled.splice(0))
      .catch((error: unknown) => console.error(`push ${deps.queue}: publishing outcomes failed`, error));
  };

  const start = (task: Parameters<typeof runTask>[1]) => {
    limiter.record(now());
    started++;
    const run: Promise<void> = runTask(deps, task)
      .then(async (result) => {
        results.push(result);
        const kind = OUTCOME_EVENT[result.outcome];
        if (kind) settled.push({ kind, id: result.id });
        for (const child of result.children)
          if (child.queue === deps.queue) settled.push({ kind: "enqueued", id: child.id });
        if (result.outcome === "retrying" && result.runAt !== undefined) {
          nextAt = Math.min(nextAt ?? Infinity, result.runAt);
        }
        for (const child of result.children) {
          if (child.queue !== deps.queue) await deps.wake(child.queue, child.run_at);
          else if (child.run_at > now()) nextAt = Math.min(nextAt ?? Infinity, child.run_at);
        }
      })
      .catch((error: unknown) => {
        // runTask settles every processor error itself; this is D1 or a bug. The lease will lapse and the
        // reaper retries the task, so log and go on with the others.
        console.error(`push ${deps.queue}: task ${task.id} could not be settled`, error);
      })
      .finally(() => running.delete(run));
    running.add(run);
  };

  for (;;) {
    await flush();
    if (started >= maxTasks) {
      nextAt = now(); // budget spent with work possibly left: come back at once, in a fresh invocation
      break;
    }
    const slots = config.concurrency - running.size;
    const allowed = limiter.available(now());
    if (slots <= 0 || allowed <= 0) {
      if (running.size > 0) {
        await Promise.race(running);
        continue;
      }
      nextAt = limiter.nextAllowedAt(now());
      break;
    }
    const max = Math.min(slots, allowed, maxTasks - started, MAX_BATCH);
    const leased = await leaseTasks(
      deps.db,
      { queue: deps.queue, max, visibilityTimeoutS: config.visibility_timeout_s, holder: `edgeq-push:${deps.queue}` },
      now(),
    );
    if (leased.length > 0) await deps.events?.leased(leased);
    for (const task of leased) start(task);
    if (leased.length === 0) {
      if (running.size === 0) break;
      await Promise.race(running); // a finishing task may have chained a due child into this queue
    }
  }
  await Promise.all(running);
  await flush();
  return { results, nextAt };
}
