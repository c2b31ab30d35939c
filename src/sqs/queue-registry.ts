import { eq, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { queues } from "../db/schema";
import { cancelQueueTasks } from "../engine/cancel";
import { countLiveTasks } from "../engine/live-figures";
import { hasUncancelledLiveTask, listQueueNamesInUse } from "../engine/presence";
import { purgeTasks } from "../engine/purge";
import { getQueueConfig, putQueueConfig, type QueueConfig } from "../engine/queue-config";
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

/** The SQS-only settings of a queue with a stored config. */
interface SqsColumns {
  sqs_delay_s: number | null;
  sqs_receive_wait_s: number | null;
  sqs_tags: string | null;
  updated_at: number;
}

/**
 * The queue, or null when it does not exist (see the module comment). One read by primary key; a queue
 * without a config row costs a second read on the live-task index.
 *
 * @example
 * const queue = await findSqsQueue(db, "emails");
 */
export async function findSqsQueue(db: Db, name: string): Promise<SqsQueue | null> {
  const row = await db.get<SqsColumns>(
    sql`SELECT sqs_delay_s, sqs_receive_wait_s, sqs_tags, updated_at FROM queues WHERE name = ${name}`,
  );
  if (!row && !(await hasUncancelledLiveTask(db, name))) return null;
  return {
    name,
    config: await getQueueConfig(db, name),
    delayS: row?.sqs_delay_s ?? 0,
    receiveWaitS: row?.sqs_receive_wait_s ?? 0,
    tags: row?.sqs_tags == null ? {} : (JSON.parse(row.sqs_tags) as Record<string, string>),
    updatedAt: row?.updated_at ?? null,
  };
}

/** A change to a queue's settings: edgeq config fields and the two SQS-only ones. */
export interface SqsQueuePatch {
  config: Partial<QueueConfig>;
  delayS?: number;
  receiveWaitS?: number;
}

/**
 * Writes a queue's config (creating it) and its SQS-only settings. The config goes through the engine's
 * putQueueConfig (its rules apply); the SQS columns are written after it, on the row it just upserted.
 *
 * @example
 * await saveSqsQueue(db, "emails", { config: { visibility_timeout_s: 60 }, delayS: 5 }, Date.now(), ["tts"]);
 */
export async function saveSqsQueue(
  db: Db,
  name: string,
  patch: SqsQueuePatch,
  now: number,
  processors: readonly string[],
): Promise<void> {
  await putQueueConfig(db, name, patch.config, now, processors);
  if (patch.delayS !== undefined || patch.receiveWaitS !== undefined) {
    await db.run(sql`UPDATE queues SET
        sqs_delay_s = coalesce(${patch.delayS ?? null}, sqs_delay_s),
        sqs_receive_wait_s = coalesce(${patch.receiveWaitS ?? null}, sqs_receive_wait_s)
      WHERE name = ${name}`);
  }
}

/**
 * Adds tags to a queue — a key it already has takes the new value — unless it would then carry more than
 * SQS_MAX_TAGS; answers false (and changes nothing) then. One upsert that merges in SQL, so two TagQueue
 * calls at once both land and the bound holds against the merged set. A queue with no config row (used only
 * natively) gets one holding just its tags: every config field null, i.e. the defaults, as before.
 *
 * @example
 * const added = await addSqsTags(db, "emails", { team: "growth" }, Date.now());
 */
export async function addSqsTags(db: Db, name: string, tags: Record<string, string>, now: number): Promise<boolean> {
  const merged = sql`json_patch(coalesce(queues.sqs_tags, '{}'), excluded.sqs_tags)`;
  const changed = await db.all<{ name: string }>(sql`INSERT INTO queues (name, updated_at, sqs_tags)
    VALUES (${name}, ${now}, json(${JSON.stringify(tags)}))
    ON CONFLICT (name) DO UPDATE SET sqs_tags = ${merged}
      WHERE (SELECT count(*) FROM json_each(${merged})) <= ${SQS_MAX_TAGS}
    RETURNING name`);
  return changed.length > 0;
}

/**
 * Removes tags from a queue by key; keys it does not have are ignored. One statement.
 *
 * @example
 * await removeSqsTags(db, "emails", ["team"]);
 */
export async function removeSqsTags(db: Db, name: string, keys: string[]): Promise<void> {
  await db.run(sql`UPDATE queues SET sqs_tags = nullif(
      (SELECT json_group_object(t.key, t.value) FROM json_each(queues.sqs_tags) AS t
        WHERE t.key NOT IN (SELECT value FROM json_each(${JSON.stringify(keys)}))),
      '{}')
    WHERE name = ${name} AND sqs_tags IS NOT NULL`);
}

/**
 * DeleteQueue's first step on one database: the queue's config goes and its live tasks are cancelled
 * (pending ones at once, their ids added to `cancelledIds`; leased ones by cancel request: their holder's
 * next write ends them). Sending to the name afterwards is QueueDoesNotExist until it is created again.
 * Two statements, not one batch (the cancel is the engine's own call): each is idempotent.
 *
 * @example
 * await retireSqsQueue(db, "emails", Date.now(), cancelled);
 */
export async function retireSqsQueue(db: Db, name: string, now: number, cancelledIds: string[]): Promise<void> {
  await db.delete(queues).where(eq(queues.name, name));
  await cancelQueueTasks(db, name, {}, now, cancelledIds);
}

/**
 * DeleteQueue's last step on one database: the queue's finished tasks are deleted, up to
 * MAX_ROWS_PER_TICK_STATEMENT of them (any more are pruned by retention).
 *
 * @example
 * await purgeSqsQueue(db, "emails", Date.now());
 */
export async function purgeSqsQueue(db: Db, name: string, now: number): Promise<void> {
  await purgeTasks(db, name, { before: now + 1 });
}

/**
 * Names of every queue that exists (see the module comment), sorted, optionally by prefix. Reads the
 * config table and the live-task index only, never finished tasks.
 *
 * @example
 * const names = await listSqsQueueNames(db, "prod-");
 */
export async function listSqsQueueNames(db: Db, prefix: string | undefined): Promise<string[]> {
  const names = await listQueueNamesInUse(db);
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
export async function countSqsMessages(db: Db, name: string, now: number): Promise<SqsQueueCounts> {
  const counts = await countLiveTasks(db, name, now);
  return { visible: counts.due, inFlight: counts.processing, delayed: counts.notDue };
}
