import type { EventRow } from "../protocols/durable-objects";
import type { PublishedEvent } from "../contracts/events";
import type { StoredTask } from "../contracts/stored-task";
import type { AckKind, AckOutcome, EnqueueResult, QueueConfig, ReturnedTask, SettledDependent } from "../engine/store";

/**
 * What a state change did, as an operation reports it to the effects owner (follow.ts). Every entry point
 * (HTTP, RPC, SQS, the coordinator's own leases and push runs, the Scheduler, the cron tick) describes its
 * change with one of these and hands it over; none of them decides by itself whom to wake, what to publish
 * or when the schedules' alarm fires.
 */
export type Change =
  /** Tasks were written; `ids` are the ones new (a deduplicated task is not), `parts` the partitions written. */
  | {
      kind: "enqueued";
      queue: string;
      ids: string[];
      earliestRunAt: number | null;
      parts: number[];
      /** Some depend on tasks of other databases: a settlement owed before they were inserted is delivered
       * now, not at the next tick (src/shards/remote-settlements.ts). */
      remoteDependencies?: boolean;
      /** Written by the queue's coordinator for the enqueues it gathered (src/coordinator/gather.ts), which
       * it counted as they came: its wake-up is no arrival of its own. */
      gathered?: boolean;
    }
  /** Tasks were leased (directly, for a waiter, or by push dispatch); `rows`, when the leaser has them,
   * spare the event hub its D1 read. */
  | { kind: "leased"; queue: string; ids: string[]; rows?: EventRow[] }
  /** Holder writes that end or hand back an attempt, each with its kind (complete, fail, release). Push
   * dispatch names its queue (`drainedQueue`): the coordinator that made these acks runs that queue's retries
   * and same-queue children itself (src/dispatch/drain.ts), so it is not woken for them. */
  | { kind: "acked"; outcomes: AckOutcome[]; kinds: AckKind[]; drainedQueue?: string }
  /** A heartbeat recorded progress (or a message) on a running task. */
  | { kind: "progress"; queue: string; id: string }
  /** Tasks became cancelled (pending ones at once; running ones when their holder next writes). */
  | {
      kind: "cancelled";
      queue: string;
      ids: string[];
      /** A cancelled task may have held its flow key (docs/flow-control.md): an ordered key's waiting retry,
       * or a running keyed task ended by its heartbeat or a lease extension. The coordinators are woken at
       * once, so waiting polls and push dispatch take the key's next task: the task's partition's for one
       * id, every partition of the queue for more (a queue or bulk cancel: one call per partition rather than
       * a lookup per task). */
      freesFlowKey?: boolean;
    }
  /** A cancel was requested of running tasks held under a worker session: no beat asks the server soon, so
   * the queue's sessions are told to look now (src/coordinator/sessions.ts `check`). */
  | { kind: "cancel-requested"; queue: string }
  /** Tasks that a cancel or the reaper finished settled their dependents (src/engine/dependencies.ts): the
   * released ones (pending) are due, the ended ones (dead, cancelled) are published. An ack reports its
   * dependents in its own outcomes. */
  | { kind: "dependents-settled"; dependents: SettledDependent[] }
  /** Dead or cancelled tasks were put back to pending, due at `runAt`. */
  | { kind: "redriven"; queue: string; ids: string[]; runAt: number }
  /** A queue's config was written (`mode` as it now is): a push queue's coordinators run its backlog. */
  | { kind: "configured"; queue: string; mode: QueueConfig["mode"]; wake?: boolean }
  /** A schedule was created, changed or resumed, or the cron tick fired schedules (re-arming what an eviction
   * lost): a slot is due at `nextRunAt`, and the schedules' alarm (the Scheduler) must fire by then. */
  | { kind: "schedule-set"; nextRunAt: number }
  /** The cron tick swept a queue: work is due at `runAt` (reaped retries, relayed or found due tasks),
   * and the reaper's `events` (failed, dead, cancelled, released) are published on the same wake-up. */
  | { kind: "swept"; queue: string; runAt?: number; events: PublishedEvent[] }
  /** A coordinator returned to pending the provisional leases made for a poll withdrawn while they were in flight (no
   * client holds them): pending again; published as released, the queue's other partitions woken. */
  | { kind: "undelivered-returned"; queue: string; part: number; tasks: ReturnedTask[] }
  /** A coordinator ended the claim window of hand-outs (src/engine/end-claim-windows.ts): leasable now, still
   * processing under their holder's token until another lease takes them — no event (nothing changed hands
   * yet); the queue's other partitions' polls are woken (they lease from every partition). */
  | { kind: "claim-windows-ended"; queue: string; part: number }
  /** Tasks became leasable on one partition while long polls wait at other partitions' coordinators
   * (`parts`): those serve their polls, which lease from every partition. */
  | { kind: "sibling-arrivals"; queue: string; parts: number[] }
  /** Health was evaluated and may have recorded alerts to deliver. */
  | { kind: "alerts-recorded" }
  /** A partition started moving to another shard: relay its tasks for a while after the answer. */
  | { kind: "move-started"; queue: string; part: number };

/**
 * What an enqueue reports: the tasks it created (a deduplicated one is not new), the earliest run time and
 * the partitions written (src/shards/queue-ops.ts's enqueueToQueue).
 *
 * @example
 * effects.after(enqueuedChange("emails", await enqueueToQueue(env, route, tasks, now)));
 */
export function enqueuedChange(
  queue: string,
  result: EnqueueResult & { parts: number[]; remoteDependencies?: boolean },
): Change {
  return {
    kind: "enqueued",
    queue,
    ids: result.tasks.filter((t) => !t.deduplicated).map((t) => t.id),
    earliestRunAt: result.earliestRunAt,
    parts: result.parts,
    ...(result.remoteDependencies ? { remoteDependencies: true } : {}),
  };
}

/**
 * What an event shows of a task row its leaser already holds (the event hub then reads nothing).
 *
 * @example
 * effects.after({ kind: "leased", queue, ids: rows.map((r) => r.id), rows: rows.map(eventRowOf) });
 */
export function eventRowOf(row: StoredTask): EventRow {
  return {
    id: row.id,
    type: row.type,
    group_key: row.groupKey,
    state: row.state as EventRow["state"],
    attempts: row.attempts,
    run_at: row.runAt,
    errors: row.errors,
    progress: row.progress,
    progress_message: row.progressMessage,
  };
}
