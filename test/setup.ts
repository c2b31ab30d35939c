import { applyD1Migrations } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { encodeTime } from "ulid";

// The migrations wrangler applies, applied to every shard (DB, DB_1) before the tests run.
await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);
await applyD1Migrations(env.DB_1, env.TEST_MIGRATIONS);

// The counter fold's cursor (src/engine/counters-in-row.ts) placed before every clock range's end (2199): tasks
// below it are counted on their path. Test files share the database and a tick's fold moves the cursor to
// its `now`, so without this a file's counting would depend on which files ran a tick before it. Files that
// test counting in rows start after the cursor (test/support/fold-clock.ts: 2200 or later).
const COUNTED_ON_PATH_UNTIL = encodeTime(Date.parse("2199-01-01T00:00:00.000Z"), 10) + "0".repeat(16);
for (const db of [env.DB, env.DB_1]) {
  await db
    .prepare(
      `INSERT INTO sweep_cursors (name, position) VALUES ('counters', ?1)
       ON CONFLICT (name) DO UPDATE SET position = max(position, excluded.position)`,
    )
    .bind(COUNTED_ON_PATH_UNTIL)
    .run();
}
