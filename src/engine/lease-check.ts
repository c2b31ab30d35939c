import { sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { fenceMissError, leaseFenceSql } from "./ack";
import type { StoredTask } from "../contracts/stored-task";
import { rowFromRaw } from "./task-row";

/**
 * Checks, without writing, that `leaseToken` holds a live lease on the task — for writes that go to
 * another store (an artifact upload to R2). Throws `lease_lost` or `not_found` like the fenced writes.
 *
 * @example
 * await assertLeaseHeld(db, id, token, Date.now());
 */
export async function assertLeaseHeld(db: Db, id: string, leaseToken: string, now: number): Promise<StoredTask> {
  const raw = await db.get<Record<string, unknown>>(
    sql`SELECT * FROM tasks WHERE ${leaseFenceSql(sql`${id}`, sql`${leaseToken}`, now)}`,
  );
  if (raw) return rowFromRaw(raw);
  throw await fenceMissError(db, id);
}
