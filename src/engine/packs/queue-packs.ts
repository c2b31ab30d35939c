import { sql, type SQL } from "drizzle-orm";

/**
 * Every pack of `queue`, live or finished, as a WHERE term over `packs` (or its alias `p`): the queue's live
 * packs through `packs_live` and its finished ones through `packs_done` (migration 0023), which between them
 * index every pack by queue. Written as `queue = ?` alone, SQLite has no index to use (both are partial) and
 * scans every pack of the database (test/engine/packs/queue-probes.test.ts).
 *
 * @example
 * sql`SELECT count(*) FROM packs p WHERE ${packsOfQueueSql(queue, sql`p`)}`
 */
export function packsOfQueueSql(queue: string, p: SQL = sql`packs`): SQL {
  return sql`((${p}.queue = ${queue} AND ${p}.finished_at IS NULL) OR (${p}.queue = ${queue} AND ${p}.finished_at IS NOT NULL))`;
}
