import { env } from "cloudflare:workers";
import { afterAll } from "vitest";
import { prepareShard } from "./support/own-shards";
import { explainNewStatements, recordStatements } from "./support/sql-audit";

// The migrations wrangler applies, applied to every shard (DB, DB_1) before the tests run, and the counter
// fold's cursor placed (test/support/own-shards.ts).
await prepareShard(env.DB);
await prepareShard(env.DB_1);

// The query-plan audit, only when asked for (EDGEQ_SQL_AUDIT=1: test/support/sql-audit.ts).
if (env.SQL_AUDIT === "1") {
  recordStatements();
  afterAll(explainNewStatements);
}
