import { sql, type SQL } from "drizzle-orm";
import type { Db } from "../db/client";
import { idInOtherQueue } from "../contracts/task-field";
import { tasksField, type TaskField } from "./enqueue-rows";

/**
 * Task ids are unique across queues (the primary key of `tasks`), and a client may supply its own. An
 * enqueue whose id is already a task of *another* queue is refused whole with `409 id_in_other_queue`
 * naming that queue: answering that queue's task as `deduplicated` would tell the client its task is in
 * the queue it named, when nothing was enqueued there. (The same id in the same queue stays a dedupe.)
 */

/** One client-supplied id of an enqueue call, by its place in the call. */
export interface ClientId {
  i: number;
  id: string;
}

/**
 * The condition an enqueue's insert carries when the call has client ids: true only while none of `ids`
 * (a JSON array) is a task of another queue — so a statement that would meet one inserts none of its rows,
 * atomically (a concurrent enqueue of the id elsewhere cannot slip between a check and the insert).
 * Reads one primary-key probe per id; writes nothing.
 *
 * @example
 * sql`INSERT INTO tasks … FROM json_each(${rows}) AS j WHERE ${noIdOfOtherQueue(queue, ids)}`;
 */
export function noIdOfOtherQueue(queue: string, ids: string): SQL {
  return sql`NOT EXISTS (SELECT 1 FROM json_each(${ids}) AS k JOIN tasks o ON o.id = k.value
    WHERE o.queue <> ${queue})`;
}

/**
 * Throws `id_in_other_queue` for the first of `ids` that is a task of another queue on `db`: the check an
 * enqueue of several statements runs before its first insert (one read). It binds each id with its place
 * and nothing more, whatever else a caller's objects carry: an enqueue's whole rows (their JSON, payloads
 * and all) were ~3.7 MB for 10,000 tasks of `{ i }`, past D1's 2 MB for a bound string (SQLITE_TOOBIG);
 * 10,000 ids with their places are ~460 KB.
 *
 * @example
 * await refuseIdsOfOtherQueues(db, "emails", [{ i: 0, id: "01J…" }]);
 */
export async function refuseIdsOfOtherQueues(
  db: Db,
  queue: string,
  ids: ClientId[],
  field: TaskField = tasksField,
): Promise<void> {
  if (ids.length === 0) return;
  const found = await db.all<{ i: number; id: string; queue: string }>(sql`SELECT k.value->>'i' AS i, t.id, t.queue
    FROM json_each(${JSON.stringify(ids.map(({ i, id }) => ({ i, id })))}) AS k JOIN tasks t ON t.id = k.value->>'id'
    WHERE t.queue <> ${queue}`);
  const first = found.sort((a, b) => Number(a.i) - Number(b.i))[0];
  if (first) throw idInOtherQueue(Number(first.i), first.id, first.queue, field);
}
