import { eq, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { queues } from "../db/schema";

/**
 * The SQS endpoint's settings of a queue, columns of its `queues` row beside the config (src/sqs/): its
 * DelaySeconds and ReceiveMessageWaitTimeSeconds defaults and its tags. Each write is one statement.
 */

/**
 * Sets the SQS-only settings given (absent: kept) on the queue's row, when it has one (a row without one is
 * left absent: `putQueueConfig` creates it first).
 *
 * @example
 * await setSqsSettings(db, "emails", { delayS: 5 });
 */
export async function setSqsSettings(
  db: Db,
  queue: string,
  settings: { delayS?: number; receiveWaitS?: number },
): Promise<void> {
  if (settings.delayS === undefined && settings.receiveWaitS === undefined) return;
  await db.run(sql`UPDATE queues SET
      sqs_delay_s = coalesce(${settings.delayS ?? null}, sqs_delay_s),
      sqs_receive_wait_s = coalesce(${settings.receiveWaitS ?? null}, sqs_receive_wait_s)
    WHERE name = ${queue}`);
}

/**
 * Adds tags to a queue — a key it already has takes the new value — unless it would then carry more than
 * `max`; answers false (and changes nothing) then. One upsert that merges in SQL, so two calls at once both
 * land and the bound holds against the merged set. A queue with no row gets one holding just its tags: every
 * config field null, i.e. the defaults.
 *
 * @example
 * const added = await addQueueTags(db, "emails", { team: "growth" }, 50, Date.now());
 */
export async function addQueueTags(
  db: Db,
  queue: string,
  tags: Record<string, string>,
  max: number,
  now: number,
): Promise<boolean> {
  const merged = sql`json_patch(coalesce(queues.sqs_tags, '{}'), excluded.sqs_tags)`;
  const changed = await db.all<{ name: string }>(sql`INSERT INTO queues (name, updated_at, sqs_tags)
    VALUES (${queue}, ${now}, json(${JSON.stringify(tags)}))
    ON CONFLICT (name) DO UPDATE SET sqs_tags = ${merged}
      WHERE (SELECT count(*) FROM json_each(${merged})) <= ${max}
    RETURNING name`);
  return changed.length > 0;
}

/**
 * Removes tags from a queue by key; keys it does not have are ignored. One statement.
 *
 * @example
 * await removeQueueTags(db, "emails", ["team"]);
 */
export async function removeQueueTags(db: Db, queue: string, keys: string[]): Promise<void> {
  await db.run(sql`UPDATE queues SET sqs_tags = nullif(
      (SELECT json_group_object(t.key, t.value) FROM json_each(queues.sqs_tags) AS t
        WHERE t.key NOT IN (SELECT value FROM json_each(${JSON.stringify(keys)}))),
      '{}')
    WHERE name = ${queue} AND sqs_tags IS NOT NULL`);
}

/**
 * Deletes a queue's stored row (config, SQS settings, tags): the queue runs with the defaults again. Tasks
 * are left as they are. One statement.
 *
 * @example
 * await deleteQueueRecord(db, "emails");
 */
export async function deleteQueueRecord(db: Db, queue: string): Promise<void> {
  await db.delete(queues).where(eq(queues.name, queue));
}
