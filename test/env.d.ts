import type { D1Migration } from "cloudflare:test";
import type { Env as WorkerEnv } from "../src/env";

declare global {
  namespace Cloudflare {
    interface GlobalProps {
      mainModule: typeof import("../src/index");
    }
    interface Env extends WorkerEnv {
      TEST_MIGRATIONS: D1Migration[];
      /** The second local shard (wrangler.toml [env.local]). */
      DB_1: D1Database;
      /** A Worker's own migrations folder before and after an upgrade of edgeq (test/support/user-migrations.ts). */
      USER_MIGRATIONS: { before: D1Migration[]; after: D1Migration[] };
      /** An empty database (vitest.config.ts), not a shard: the Worker's own folder is applied to it. */
      USER_DB: D1Database;
      /** An empty database (vitest.config.ts), not a shard: one test file migrates and uses it alone. */
      OWN_DB: D1Database;
      /** An empty database (vitest.config.ts), not a shard: the reuse of rows' tests (test/engine/d1/reuse-rows.test.ts),
       * whose walk reads the rows past the prune's cursor whatever their queue. */
      REUSE_DB: D1Database;
      /** An empty database (vitest.config.ts), not a shard: the tombstones' tests (test/engine/d1/tombstones.test.ts),
       * whose walk reads the rows below the counter fold's cursor and whose prune walks the whole database. */
      TOMBSTONE_DB: D1Database;
      /** Two empty databases each (vitest.config.ts) that stand in for the two shards: test/support/own-shards.ts. */
      /** An empty database (vitest.config.ts), not a shard: the one the tests of plans under statistics (ANALYZE)
       * fill and analyse (test/engine/stats-plans/), so no other file's plans see its statistics. */
      STATS_DB: D1Database;
      TICK_DB: D1Database;
      TICK_DB_1: D1Database;
      SETTLE_DB: D1Database;
      SETTLE_DB_1: D1Database;
      /** "1" when the run audits query plans (EDGEQ_SQL_AUDIT=1: test/support/sql-audit.ts), else "". */
      SQL_AUDIT: string;
    }
  }
}
