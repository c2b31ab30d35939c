import * as z from "zod";
import { TASK_STATES } from "./states";

/** What happened to a task, as the event stream names it. */
export const TASK_EVENT_KINDS = [
  "enqueued",
  "leased",
  "progress",
  "completed",
  /** An attempt failed and the task will run again at `retry_at`. */
  "failed",
  "dead",
  "cancelled",
  /** Not started by its start deadline: ended by the cron tick (a final state). */
  "expired",
  /** Handed back unfinished by its holder (pending again, the attempt not counted). */
  "released",
  /** Sent back to pending from dead or cancelled (redrive, retry). */
  "redriven",
  /** Released from waiting: every dependency finished (pending now, due at its run_at). */
  "ready",
] as const;
export type TaskEventKind = (typeof TASK_EVENT_KINDS)[number];

/**
 * What a route tells the coordinator after its D1 write committed: which task, what happened. The
 * coordinator reads the rest (type, group, state, attempt, error) from the row, so every event carries
 * the task as it is after the write, and the routes send a few bytes per task.
 */
export const publishedEventSchema = z.object({
  kind: z.enum(TASK_EVENT_KINDS),
  id: z.string().min(1),
});
export type PublishedEvent = z.infer<typeof publishedEventSchema>;

/**
 * An event hub call that publishes a queue's events. On the wire the events go grouped in runs of one
 * kind (`groupEvents`): an ack or lease of 100 tasks sends one array of 100 strings instead of 100
 * objects, which the RPC copies and the hub validates (the object form was 6 % of the Worker's CPU in a
 * burn-down, docs/benchmarks.md section 3b).
 */
export const eventsPublishSchema = z.object({
  queue: z.string().min(1),
  events: z.array(z.object({ kind: z.enum(TASK_EVENT_KINDS), ids: z.array(z.string().min(1)) })),
});
export type EventsPublish = z.infer<typeof eventsPublishSchema>;

/** Events grouped for the wire (see eventsPublishSchema): each run of one kind becomes one group, so
 * the order of the events is kept exactly. */
export function groupEvents(events: PublishedEvent[]): EventsPublish["events"] {
  const groups: EventsPublish["events"] = [];
  for (const e of events) {
    const last = groups.at(-1);
    if (last?.kind === e.kind) last.ids.push(e.id);
    else groups.push({ kind: e.kind, ids: [e.id] });
  }
  return groups;
}

/** The events of a grouped publish, back one by one in their order. */
export function ungroupEvents(groups: EventsPublish["events"]): PublishedEvent[] {
  return groups.flatMap((g) => g.ids.map((id) => ({ kind: g.kind, id })));
}

/** One task event on the wire. `seq` grows by one per event within a queue. */
export const taskEventSchema = z.object({
  event: z.enum(TASK_EVENT_KINDS),
  seq: z.number().int().positive(),
  queue: z.string(),
  task_id: z.string(),
  type: z.string(),
  group: z.string().nullable(),
  state: z.enum(TASK_STATES),
  attempt: z.number().int(),
  at: z.string(),
  progress: z.number().int().nullable(),
  message: z.string().nullable(),
  /** The latest error (failed, dead). */
  error: z.string().nullable(),
  /** When a failed task runs again. */
  retry_at: z.string().nullable(),
});
export type TaskEvent = z.infer<typeof taskEventSchema>;

/** Counts per state of the queue, sent at most once a second while anything changes. */
export const countsEventSchema = z.object({
  event: z.literal("counts"),
  queue: z.string(),
  /** The last task event's seq when the counts were read. */
  seq: z.number().int().nonnegative(),
  counts: z.record(z.enum(TASK_STATES), z.number().int()),
  due: z.number().int(),
  oldest_due_at: z.string().nullable(),
  at: z.string(),
});
export type CountsEvent = z.infer<typeof countsEventSchema>;

/** First message on every socket: where the stream stands. */
export const helloEventSchema = z.object({ event: z.literal("hello"), queue: z.string(), seq: z.number().int() });

/** The events after `after` are no longer buffered: re-read over HTTP, then follow from `seq`. */
export const resyncEventSchema = z.object({
  event: z.literal("resync"),
  queue: z.string(),
  after: z.number().int(),
  seq: z.number().int(),
});

/** Any message the server sends on an events socket. */
export const streamMessageSchema = z.union([taskEventSchema, countsEventSchema, helloEventSchema, resyncEventSchema]);
export type StreamMessage = z.infer<typeof streamMessageSchema>;
