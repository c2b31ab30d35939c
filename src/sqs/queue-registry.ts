import type { QueueConfig, TaskStore } from "../engine/store";
import { SQS_MAX_TAGS } from "../contracts/limits";

/**
 * Queues as the SQS endpoint sees them. edgeq queues exist by name: a queue *exists* for SQS when it has
 * a stored config (CreateQueue writes one; so does `PUT /v1/queues/{q}/config`) or live tasks that no
 * cancel is pending for (a queue used only through the native API). SQS-only settings — DelaySeconds and
 * ReceiveMessageWaitTimeSeconds, which the native API takes per call instead — and its tags are columns of
 * the config row.
 */

/** What the SQS endpoint needs to know about one queue. */
export interface SqsQueue {
  name: string;
  config: QueueConfig;
  /** Default DelaySeconds of messages sent over SQS. */
  delayS: number;
  /** Default WaitTimeSeconds of ReceiveMessage. */
  receiveWaitS: number;
  /** Its tags (TagQueue), key -> value. */
  tags: Record<string, string>;
  /** When its config was last written (ms), or null for a queue without one. */
  updatedAt: number | null;
}

/**
 * The queue, or null when it does not exist (see the module comment). One read by primary key; a queue
 * without a config row costs a second read on the live-task index.
 *
 * @example
 * const queue = await findSqsQueue(store, "emails");
 */
export async function findSqsQueue(store: TaskStore, name: string): Promise<SqsQueue | null> {
  const row = await store.readQueueRecord(name);
  if (!row && !(await store.hasUncancelledLiveTask(name))) return null;
  return {
    name,
    config: await store.getQueueConfig(name),
    delayS: row?.sqsDelayS ?? 0,
    receiveWaitS: row?.sqsReceiveWaitS ?? 0,
    tags: row?.sqsTags == null ? {} : (JSON.parse(row.sqsTags) as Record<string, string>),
    updatedAt: row?.updatedAt ?? null,
  };
}

/** A change to a queue's settings: edgeq config fields and the two SQS-only ones. */
export interface SqsQueuePatch {
  config: Partial<QueueConfig>;
  delayS?: number;
  receiveWaitS?: number;
}

/**
 * Writes a queue's config (creating it) and its SQS-only settings. The config goes through the store's
 * putQueueConfig (its rules apply); the SQS settings are written after it, on the record it just upserted.
 *
 * @example
 * await saveSqsQueue(store, "emails", { config: { visibility_timeout_s: 60 }, delayS: 5 }, Date.now(), ["tts"]);
 */
export async function saveSqsQueue(
  store: TaskStore,
  name: string,
  patch: SqsQueuePatch,
  now: number,
  processors: readonly string[],
): Promise<void> {
  await store.putQueueConfig(name, patch.config, now, processors);
  await store.setSqsSettings(name, { delayS: patch.delayS, receiveWaitS: patch.receiveWaitS });
}

/**
 * Adds tags to a queue — a key it already has takes the new value — unless it would then carry more than
 * SQS_MAX_TAGS; answers false (and changes nothing) then. Atomic (the store's addQueueTags), so two TagQueue
 * calls at once both land and the bound holds against the merged set. A queue with no config (used only
 * natively) gets a record holding just its tags: its config the defaults, as before.
 *
 * @example
 * const added = await addSqsTags(store, "emails", { team: "growth" }, Date.now());
 */
export function addSqsTags(
  store: TaskStore,
  name: string,
  tags: Record<string, string>,
  now: number,
): Promise<boolean> {
  return store.addQueueTags(name, tags, SQS_MAX_TAGS, now);
}

/**
 * Removes tags from a queue by key; keys it does not have are ignored. One write.
 *
 * @example
 * await removeSqsTags(store, "emails", ["team"]);
 */
export function removeSqsTags(store: TaskStore, name: string, keys: string[]): Promise<void> {
  return store.removeQueueTags(name, keys);
}

/**
 * DeleteQueue's first step on one database: the queue's config goes. Sending to the name afterwards is
 * QueueDoesNotExist until it is created again. Its live tasks are cancelled next, as a queue cancel's are
 * (src/sqs/queue-operations.ts); each step is idempotent.
 *
 * @example
 * await retireSqsQueue(store, "emails");
 */
export function retireSqsQueue(store: TaskStore, name: string): Promise<void> {
  return store.deleteQueueRecord(name);
}

/**
 * DeleteQueue's last step on one database: the queue's finished tasks are deleted, up to
 * MAX_ROWS_PER_TICK_STATEMENT of them (any more are pruned by retention).
 *
 * @example
 * await purgeSqsQueue(store, "emails", Date.now());
 */
export async function purgeSqsQueue(store: TaskStore, name: string, now: number): Promise<void> {
  await store.purgeTasks(name, { before: now + 1 });
}

/**
 * Names of every queue that exists (see the module comment), sorted, optionally by prefix. Reads the
 * config table and the live-task index only, never finished tasks.
 *
 * @example
 * const names = await listSqsQueueNames(store, "prod-");
 */
export async function listSqsQueueNames(store: TaskStore, prefix: string | undefined): Promise<string[]> {
  const names = await store.listQueueNamesInUse();
  return names.filter((n) => prefix === undefined || n.startsWith(prefix)).sort();
}

/** Message counts of a queue, as GetQueueAttributes reports them. */
export interface SqsQueueCounts {
  /** Pending and due: ApproximateNumberOfMessages. */
  visible: number;
  /** Leased: ApproximateNumberOfMessagesNotVisible. */
  inFlight: number;
  /** Pending, not yet due: ApproximateNumberOfMessagesDelayed. */
  delayed: number;
}

/** Counts of the queue's live tasks (the live index only). */
export async function countSqsMessages(store: TaskStore, name: string, now: number): Promise<SqsQueueCounts> {
  const counts = await store.countLiveTasks(name, now);
  return { visible: counts.due, inFlight: counts.processing, delayed: counts.notDue };
}
