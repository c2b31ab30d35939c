import { sql } from "drizzle-orm";
import type { Db } from "../../src/db/client";

/**
 * Inserts `n` pending tasks of `queue` straight into D1 in one statement (a recursive CTE), ids
 * `{queue}-{00000000}` from `first`: tens of thousands in well under a second, where the engine's enqueue
 * would take a call per 1,000. For tests that need many live tasks around the ones they look at.
 *
 * @example
 * await seedPending(db(), "backlog", 20_000, { runAt: now - 60_000, createdAt: now - 60_000 });
 */
export async function seedPending(
  db: Db,
  queue: string,
  n: number,
  at: { runAt: number; createdAt: number; priority?: number; first?: number },
): Promise<void> {
  const first = at.first ?? 0;
  await db.run(sql`WITH RECURSIVE c(i) AS (SELECT ${first} UNION ALL SELECT i + 1 FROM c WHERE i < ${first + n - 1})
    INSERT INTO tasks (id, queue, state, priority, max_attempts, run_at, created_at, updated_at)
    SELECT ${queue} || printf('-%08d', i), ${queue}, 'pending', ${at.priority ?? 0}, 3, ${at.runAt}, ${at.createdAt},
      ${at.createdAt} FROM c`);
}
