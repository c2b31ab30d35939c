import type { EventRow } from "../protocols/durable-objects";
import type { PublishedEvent } from "../contracts/events";
import type { TaskRow } from "../db/schema";
import type { AckKind, AckOutcome } from "../engine/ack";
import type { RevokedTask } from "../engine/revoke";

/**
 * What a state change did, as an operation reports it to the effects owner (follow.ts). Every entry point
 * (HTTP, SQS, the coordinator's own leases and push runs) describes its change with one of these and hands
 * it over; none of them decides by itself whom to wake or what to publish.
 */
export type Change =
  /** Tasks were written; `ids` are the ones new (a deduplicated task is not), `parts` the partitions written. */
  | { kind: "enqueued"; queue: string; ids: string[]; earliestRunAt: number | null; parts: number[] }
  /** Tasks were leased (directly, for a waiter, or by push dispatch); `rows`, when the leaser has them,
   * spare the event hub its D1 read. */
  | { kind: "leased"; queue: string; ids: string[]; rows?: EventRow[] }
  /** Push dispatch settled tasks: their events, derived per outcome by the drain (src/dispatch/drain.ts). */
  | { kind: "settled"; queue: string; events: PublishedEvent[] }
  /** Holder writes that end or hand back an attempt, each with its kind (complete, fail, release). */
  | { kind: "acked"; outcomes: AckOutcome[]; kinds: AckKind[] }
  /** A heartbeat recorded progress (or a message) on a running task. */
  | { kind: "progress"; queue: string; id: string }
  /** Tasks became cancelled (pending ones at once; running ones when their holder next writes). */
  | { kind: "cancelled"; queue: string; ids: string[] }
  /** Dead or cancelled tasks were put back to pending, due at `runAt`. */
  | { kind: "redriven"; queue: string; ids: string[]; runAt: number }
  /** A queue has work due at `runAt` that no task event announces (a schedule fired or was triggered). */
  | { kind: "due"; queue: string; runAt: number }
  /** The cron tick swept a queue: work is due at `runAt` (reaped retries, relayed or found due tasks),
   * and the reaper's `events` (failed, dead, cancelled, released) are published on the same wake-up. */
  | { kind: "swept"; queue: string; runAt?: number; events: PublishedEvent[] }
  /** A coordinator took back provisional leases made for a poll withdrawn while they were in flight (no
   * client holds them): pending again; published as released, the queue's other partitions woken. */
  | { kind: "revoked"; queue: string; part: number; tasks: RevokedTask[] }
  /** A coordinator took back a withdrawn poll's hand-outs (src/engine/lapse.ts): leasable now, still
   * processing under their holder's token until another lease takes them — no event (nothing changed hands
   * yet); the queue's other partitions' polls are woken (they lease from every partition). */
  | { kind: "lapsed"; queue: string; part: number }
  /** Tasks became leasable on one partition while long polls wait at other partitions' coordinators
   * (`parts`): those serve their polls, which lease from every partition. */
  | { kind: "sibling-arrivals"; queue: string; parts: number[] }
  /** Health was evaluated and may have recorded alerts to deliver. */
  | { kind: "alerts-recorded" }
  /** A partition started moving to another shard: relay its tasks for a while after the answer. */
  | { kind: "move-started"; queue: string; part: number };

/**
 * What an event shows of a task row its leaser already holds (the event hub then reads nothing).
 *
 * @example
 * effects.after({ kind: "leased", queue, ids: rows.map((r) => r.id), rows: rows.map(eventRowOf) });
 */
export function eventRowOf(row: TaskRow): EventRow {
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
