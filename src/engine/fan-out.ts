import { sql, type SQL } from "drizzle-orm";
import { batchAll, type Db } from "../db/client";
import { EdgeqError } from "../contracts/errors";
import { MAX_FAN_OUT } from "../contracts/limits";
import { joinField } from "../contracts/task-field";
import type { TaskState } from "../contracts/states";
import { edgesSql, hasDependencies, refuseUnknownDependencies, waitingShape } from "./dependencies";
import { remoteWaitsSql } from "./remote-dependencies";
import type { EnqueueOutcome } from "./enqueue";
import {
  chunkRows,
  countEnqueuedSql,
  insertRows,
  insertSql,
  tasksField,
  type NewTask,
  type TaskField,
} from "./enqueue-rows";

/** What a fan-out made: its children in input order, its join, and the earliest run time among them. */
export interface FanOutResult {
  tasks: EnqueueOutcome[];
  join: EnqueueOutcome;
  earliestRunAt: number | null;
}

/**
 * Enqueues `children` and a `join` task that depends on every one of them (and on the join's own
 * `dependsOn`, which must exist), all in `queue`, in ONE D1 batch: all of them or none. The join waits until
 * every child finished (src/engine/dependencies.ts) and reads their results with `listDependencies`.
 *
 * Bounded by MAX_FAN_OUT children and one enqueue statement's JSON (MAX_ENQUEUE_CHUNK_BYTES): the batch is
 * one transaction, as long as one chunk of a plain enqueue. Neither the children nor the join carry a dedupe
 * key (nor, over the API, an id of the caller's): one deduplicated onto an older task would make the join
 * wait on a task the call did not make, or leave children without their join (docs/dependencies.md); ids
 * given here are new ones the caller made (a partition's slot ids). Refusals are 400s naming the field (`tasks[i].dedupe_key`, `join.depends_on[k]`), checked before anything
 * is stored.
 *
 * @example
 * const { tasks, join } = await enqueueFanOut(db, "chapters", chapters, { type: "stitch" }, Date.now());
 */
export async function enqueueFanOut(
  db: Db,
  queue: string,
  children: NewTask[],
  join: NewTask,
  now: number,
  field: TaskField = tasksField,
): Promise<FanOutResult> {
  if (children.length === 0 || children.length > MAX_FAN_OUT) {
    throw new EdgeqError(
      "invalid_request",
      `tasks: a fan-out with a join has 1 to ${MAX_FAN_OUT} children (got ${children.length}); enqueue more in calls of their own, then the join with depends_on`,
    );
  }
  const keyed = children.findIndex((c) => c.dedupeKey !== undefined);
  if (keyed >= 0) {
    throw new EdgeqError("invalid_request", `${field(keyed, "dedupe_key")}: a fan-out's children take no dedupe_key`);
  }
  if (join.dedupeKey !== undefined) {
    throw new EdgeqError("invalid_request", "join.dedupe_key: a fan-out's join takes no dedupe_key");
  }
  const rows = insertRows(children, now, field);
  if (chunkRows(rows).length > 1) {
    throw new EdgeqError(
      "payload_too_large",
      `tasks: a fan-out's children are one statement of its batch, at most ${MAX_FAN_OUT} tasks and 1 MiB of JSON`,
    );
  }
  // The join's own dependencies (before the children) must exist; the children are made by the batch.
  await refuseUnknownDependencies(db, rows, field);
  await refuseUnknownDependencies(db, insertRows([join], now, joinField), joinField);
  const joinRow = insertRows(
    [{ ...join, dependsOn: [...(join.dependsOn ?? []), ...rows.map((r) => r.id)] }],
    now,
    joinField,
  )[0]!;
  const statements: SQL[] = [
    insertSql(queue, rows, now, sql`true`, hasDependencies(rows) ? waitingShape(now) : undefined),
    ...(hasDependencies(rows) ? [edgesSql(rows, now)] : []),
    countEnqueuedSql(rows, now),
    // Reads the children the statement above made: a batch's statements run in order, in one transaction.
    insertSql(queue, [joinRow], now, sql`true`, waitingShape(now)),
    // The join's dependencies on other databases, found there by the shard layer (remote-dependencies.ts).
    ...[remoteWaitsSql([joinRow], now)].filter((s): s is SQL => s !== null),
    edgesSql([joinRow], now),
    countEnqueuedSql([joinRow], now),
  ];
  const results = await batchAll<{ id: string; state: TaskState }>(db, statements);
  const made = new Map(results[0]!.map((r) => [r.id, r.state]));
  const joinMade = results[hasDependencies(rows) ? 4 : 3]![0];
  // Ids made here (by the caller's shard layer or insertRows) are new: every row was inserted.
  const state = (id: string) => made.get(id) ?? "pending";
  return {
    tasks: rows.map((r) => ({ id: r.id, state: state(r.id), deduplicated: false })),
    join: { id: joinRow.id, state: joinMade?.state ?? "waiting", deduplicated: false },
    earliestRunAt: Math.min(...rows.map((r) => r.run_at)),
  };
}
