import { sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { applyFencedUpdate, leaseFenceSql, type AckOutcome, type FencedItem } from "./ack";
import { EdgeqError } from "./errors";
import { MAX_PAYLOAD_BYTES } from "./limits";

export interface CompleteItem extends FencedItem {
  /** Any JSON value; stored as the task's result. */
  result?: unknown;
}

const encoder = new TextEncoder();

/**
 * Completes up to MAX_BATCH processing tasks in one fenced statement. Each item succeeds or fails on its
 * own: a wrong, stale or expired token is `lease_lost` and changes nothing for that task. A task whose
 * cancel was requested ends `cancelled` instead (its result discarded) and reports `task_cancelled`.
 * A result over MAX_PAYLOAD_BYTES of JSON is `payload_too_large` and changes nothing for that task.
 *
 * @example
 * const [outcome] = await completeTasks(db, [{ id, leaseToken, result: { ok: true } }], Date.now());
 */
export async function completeTasks(db: Db, items: CompleteItem[], now: number): Promise<AckOutcome[]> {
  const sizes = items.map((i) => encoder.encode(JSON.stringify(i.result ?? null)).byteLength);
  const fitting = items.filter((_, k) => sizes[k]! <= MAX_PAYLOAD_BYTES);
  const applied = fitting.length
    ? await applyFencedUpdate(
        db,
        fitting.map((i) => ({ id: i.id, leaseToken: i.leaseToken, result: i.result ?? null })),
        (json) => sql`UPDATE tasks SET
        state = CASE WHEN tasks.cancel_requested = 1 THEN 'cancelled' ELSE 'completed' END,
        result = CASE WHEN tasks.cancel_requested = 1 THEN NULL ELSE j.value->'result' END,
        progress = CASE WHEN tasks.cancel_requested = 1 THEN tasks.progress ELSE 100 END,
        finished_at = ${now},
        lease_token = NULL,
        lease_expires_at = NULL,
        updated_at = ${now}
      FROM json_each(${json}) AS j
      WHERE ${leaseFenceSql(sql`j.value->>'id'`, sql`j.value->>'lease_token'`, now)}
      RETURNING tasks.id, tasks.queue, tasks.state, tasks.run_at`,
      )
    : [];
  let next = 0;
  return items.map((item, k): AckOutcome => {
    if (sizes[k]! <= MAX_PAYLOAD_BYTES) return applied[next++]!;
    return {
      id: item.id,
      ok: false,
      error: new EdgeqError(
        "payload_too_large",
        `task ${item.id}: the result is ${sizes[k]} bytes of JSON; the limit is ${MAX_PAYLOAD_BYTES} bytes`,
      ),
    };
  });
}
