import { sql } from "drizzle-orm";
import type { Db } from "../../src/db/client";

/**
 * Runs `measure` beside `n` dependency edges of no task (ids under `prefix`, which no ULID has), in `task_edges`
 * and, with `remoteQueue`, in `remote_edges` too: a statement that scans an edge table instead of probing its
 * key reads every one of them. The edges are deleted afterwards (files share the database).
 */
export async function besideUnrelatedEdges<T>(
  db: Db,
  opts: { prefix: string; n: number; remoteQueue?: string; at?: number },
  measure: () => Promise<T>,
): Promise<T> {
  const { prefix, n } = opts;
  const numbers = sql`WITH RECURSIVE i(k) AS (SELECT 1 UNION ALL SELECT k + 1 FROM i WHERE k < ${n})`;
  await db.run(sql`${numbers} INSERT INTO task_edges (dependency, dependent)
    SELECT ${prefix} || k, ${prefix} || 'x' || k FROM i`);
  if (opts.remoteQueue !== undefined) {
    await db.run(sql`${numbers} INSERT INTO remote_edges (dependency, dependent, dependent_queue, created_at)
      SELECT ${prefix} || k, ${prefix} || 'x' || k, ${opts.remoteQueue}, ${opts.at ?? 0} FROM i`);
  }
  try {
    return await measure();
  } finally {
    const range = sql`dependency >= ${prefix} AND dependency < ${prefix + "~"}`;
    await db.run(sql`DELETE FROM task_edges WHERE ${range}`);
    if (opts.remoteQueue !== undefined) await db.run(sql`DELETE FROM remote_edges WHERE ${range}`);
  }
}
