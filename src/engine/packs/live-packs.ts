import { sql, type SQL } from "drizzle-orm";
import type { Db } from "../../db/client";
import { getQueueConfig, type QueueConfig } from "../queue-config";
import { decodePack, type Pack, type PackRowRead } from "./pack-row";

/**
 * Live packs as the live reads (live-reads.ts, live-front.ts) read them: through the live index
 * (`packs_live`: queue, priority DESC, run_at, id WHERE finished_at IS NULL), one entry and one row each, and of
 * each row only the columns the live figures need — the slots' states and attempts always, the lease list
 * only when a slot is processing, the bodies only when a slot is processing or waiting (its own run time
 * `t`, its first start `st`, a cancel request `cr` live in the body). A pack of plain pending slots, the bulk
 * of a backlog, is read without its bodies: their run time is the pack's.
 */

/**
 * The columns a live read takes: the pack's own, its lease list only when a slot is processing, and of its
 * bodies only the three fields a live figure reads (`t`, `st`, `cr`), only when a slot is processing or
 * waiting — projected in SQL, so a pack of large payloads costs the walk no memory.
 */
const LIVE_COLUMNS = sql.raw(`id, queue, type, priority, run_at, max_attempts, created_at, finished_at, ver, st, at,
  CASE WHEN instr(st, 'r') > 0 THEN lk END AS lk,
  CASE WHEN instr(st, 'r') > 0 THEN json(leases) END AS leases,
  CASE WHEN instr(st, 'r') > 0 OR instr(st, 'w') > 0 THEN (SELECT json_group_array(json_object(
      't', s.value->'t', 'st', s.value->'st', 'cr', s.value->'cr'))
    FROM (SELECT value FROM json_each(packs.slots) ORDER BY key) AS s) END AS slots`);

/** A pack row as the live reads select it: the lease columns only of packs with a processing slot, bodies
 * only of those with a processing or waiting slot. */
type LiveRow = Omit<PackRowRead, "lk" | "leases" | "slots"> & {
  lk: string | null;
  leases: string | null;
  slots: string | null;
};

/** A live row as a pack: bodies hold `t`, `st` and `cr` only (null where absent: read them with `?? `), or
 * nothing when no slot needs them; slots not processing have no lease (their state says they need none). */
function decodeLive(row: LiveRow): Pack {
  return decodePack({
    ...row,
    lk: row.lk ?? " ".repeat(row.st.length),
    leases: row.leases ?? "[]",
    slots: row.slots ?? JSON.stringify(Array.from({ length: row.st.length }, () => ({}))),
  });
}

/** The SELECT of live packs, in the live index's order, `where` added to the index's condition. */
export function livePacksSql(where: SQL, limit?: number): SQL {
  const bound = limit === undefined ? sql`` : sql` LIMIT ${limit}`;
  return sql`SELECT ${LIVE_COLUMNS} FROM packs INDEXED BY packs_live
    WHERE finished_at IS NULL${where} ORDER BY queue, priority DESC, run_at, id${bound}`;
}

/** Live packs of one queue, or of every queue (`queue` undefined), in the live index's order. */
export async function readLivePacks(db: Db, queue?: string): Promise<Pack[]> {
  const where = queue === undefined ? sql`` : sql` AND queue = ${queue}`;
  return (await db.all<LiveRow>(livePacksSql(where))).map(decodeLive);
}

/** Live packs of a SELECT built by livePacksSql, decoded. */
export function decodeLiveRows(rows: unknown[]): Pack[] {
  return (rows as LiveRow[]).map(decodeLive);
}

/** Each queue's config, read once per queue a call meets (the backoffs a slot's leasable time needs). */
export function configsOf(db: Db): (queue: string) => Promise<QueueConfig> {
  const seen = new Map<string, Promise<QueueConfig>>();
  return (queue) => {
    let config = seen.get(queue);
    if (!config) {
      config = getQueueConfig(db, queue);
      seen.set(queue, config);
    }
    return config;
  };
}
