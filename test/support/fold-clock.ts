import { env } from "cloudflare:workers";
import { sql } from "drizzle-orm";
import { decodeTime } from "ulid";
import { openDb } from "../../src/db/client";
import { COUNTER_FOLD_CURSOR } from "../../src/engine/counters";

const DAY_MS = 86_400_000;
/** Where fold tests start when no fold ran yet: past every clock range (test/support/clock-range.ts). */
const FOLD_TESTS_START = Date.parse("2200-01-01T00:00:00.000Z");

/**
 * A time after the counter fold's cursor (src/engine/counters-in-row.ts), a day past it: the cursor is one per
 * database and only moves forward, and test files share the database, so a test of tasks that keep their
 * counts in their rows starts wherever the cursor is now, not at a fixed time another file's fold may have
 * passed. Far in the future: no other file's sweep reaches its tasks.
 */
export async function afterFoldCursor(): Promise<number> {
  const row = await openDb(env.DB).get<{ position: string }>(
    sql`SELECT position FROM sweep_cursors WHERE name = ${COUNTER_FOLD_CURSOR}`,
  );
  const at = row ? decodeTime(row.position) : 0;
  return Math.max(FOLD_TESTS_START, Math.ceil(at / DAY_MS) * DAY_MS + DAY_MS);
}
