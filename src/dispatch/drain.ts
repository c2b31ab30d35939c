import { eventRowOf } from "../effects/changes";
import type { AckKind, AckOutcome } from "../engine/store";
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
}

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
 * What it did goes to the effects owner (`deps.effects`) as any worker's calls would: its leases (with
 * their rows), then its settling writes as one `acked` change per turn of the loop — an HTTP ack's, children
 * included, so a child of another queue is relayed home, its coordinator woken and its `enqueued` published
 * — and the runs a cancel stopped as `cancelled`. Its own queue's retries and children it runs itself
 * (`nextAt`, the next turn), so that coordinator is not woken for them (`drainedQueue`).
 *
 * @example
 * const { results, nextAt } = await drainQueue({ store: shard.store, db: shard.db, env, registry, config, now, effects, queue, limiter });
 */
export async function drainQueue(deps: DrainDeps, maxTasks = MAX_TASKS_PER_DRAIN): Promise<DrainResult> {
  const { config, limiter, now } = deps;
  const running = new Set<Promise<void>>();
  const results: TaskRunResult[] = [];
  let started = 0;
  let nextAt: number | null = null;
  // What the runs settled since the last turn, reported together (one change per turn, not per task).
  const outcomes: AckOutcome[] = [];
  const kinds: AckKind[] = [];
  const cancelled: string[] = [];
  // Those of them that held a flow key's slot (keyed, and running): their cancel frees it for a waiting poll.
  let cancelledKeyed = false;
  const report = () => {
    if (outcomes.length > 0) {
      deps.effects.after({
        kind: "acked",
        outcomes: outcomes.splice(0),
        kinds: kinds.splice(0),
        drainedQueue: deps.queue,
      });
    }
    if (cancelled.length > 0) {
      const ids = cancelled.splice(0);
      deps.effects.after({ kind: "cancelled", queue: deps.queue, ids, freesFlowKey: cancelledKeyed });
      cancelledKeyed = false;
    }
  };

  const start = (task: Parameters<typeof runTask>[1]) => {
    limiter.record(now());
    started++;
    const run: Promise<void> = runTask(deps, task)
      .then((result) => {
        results.push(result);
        if (result.ack) {
          outcomes.push(result.ack.outcome);
          kinds.push(result.ack.kind);
        }
        // The ack reports no event for a task it found cancelled (an HTTP holder is told task_cancelled);
        // push dispatch publishes the cancel it observed, as it did before.
        if (result.outcome === "cancelled") {
          cancelled.push(result.id);
          cancelledKeyed ||= task.flowKey !== null;
        }
        if (result.outcome === "retrying" && result.runAt !== undefined) {
          nextAt = Math.min(nextAt ?? Infinity, result.runAt);
        }
        for (const child of result.children) {
          if (child.queue === deps.queue && child.run_at > now()) nextAt = Math.min(nextAt ?? Infinity, child.run_at);
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
    report();
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
    const leased = await deps.store.leaseTasks(
      { queue: deps.queue, max, visibilityTimeoutS: config.visibility_timeout_s, holder: `edgeq-push:${deps.queue}` },
      now(),
    );
    if (leased.length > 0) {
      deps.effects.after({
        kind: "leased",
        queue: deps.queue,
        ids: leased.map((t) => t.id),
        rows: leased.map(eventRowOf),
      });
    }
    for (const task of leased) start(task);
    if (leased.length === 0) {
      if (running.size === 0) break;
      await Promise.race(running); // a finishing task may have chained a due child into this queue
    }
  }
  await Promise.all(running);
  report();
  return { results, nextAt };
}
