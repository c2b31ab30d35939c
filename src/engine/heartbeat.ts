import { sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { batchAll } from "../db/client";
import { fenceMissError, keepLeaseSetSql, keptLeaseSql, leaseFenceSql, ownLeaseExpirySql } from "./ack";
import { recordCounters } from "./counters";
import { TaskCancelledError } from "../contracts/errors";
import { storedJsonError } from "../contracts/json-value";
import type { StoredTask } from "../contracts/stored-task";
import { rowFromRaw } from "./task-row";

export interface HeartbeatRequest {
  id: string;
  leaseToken: string;
  /** New lease length from now, in seconds; absent: the lease's own length (as it was leased). */
  extendS?: number;
  /** 0-100; absent keeps the stored value. */
  progress?: number;
  progressMessage?: string;
  /** Any JSON value a retry should resume from; absent keeps the stored checkpoint. */
  checkpoint?: unknown;
}

/**
 * Extends a lease (by `extendS`, else by the lease's own length) and records progress, fenced by the lease
 * token. If a cancel was requested the task
 * becomes cancelled instead and the holder gets `task_cancelled`: it should stop working.
 *
 * @example
 * await heartbeatTask(db, { id, leaseToken, extendS: 30, progress: 40, progressMessage: "3/7 items" }, Date.now());
 */
export async function heartbeatTask(db: Db, request: HeartbeatRequest, now: number): Promise<StoredTask> {
  if (request.checkpoint !== undefined) {
    const error = storedJsonError(request.checkpoint, "checkpoint");
    if (error) throw error;
  }
  const expiresAt = request.extendS === undefined ? ownLeaseExpirySql(now) : sql`${now + request.extendS * 1000}`;
  const { cancel, keep } = keptLeaseSql(
    { where: leaseFenceSql(sql`${request.id}`, sql`${request.leaseToken}`, now), returning: sql`*` },
    sql`${keepLeaseSetSql(expiresAt, now)},
      progress = coalesce(${request.progress ?? null}, progress),
      progress_message = coalesce(${request.progressMessage ?? null}, progress_message),
      checkpoint = coalesce(${request.checkpoint === undefined ? null : JSON.stringify(request.checkpoint)}, checkpoint)`,
    now,
  );
  // One batch: the task is either cancelled (a cancel was requested) or kept, never both.
  const [cancelled = [], kept = []] = await batchAll<Record<string, unknown>>(db, [cancel, keep]);
  const raw = cancelled[0] ?? kept[0];
  if (!raw) throw await fenceMissError(db, request.id);
  const row = rowFromRaw(raw);
  if (row.state === "cancelled") {
    await recordCounters(db, [{ queue: row.queue, type: row.type, counter: "cancelled" }], now);
    throw new TaskCancelledError(request.id);
  }
  return row;
}
