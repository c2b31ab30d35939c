import { applyD1Migrations } from "cloudflare:test";
import { env } from "cloudflare:workers";

// The migrations wrangler applies, applied to every shard (DB, DB_1) before the tests run.
await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);
await applyD1Migrations(env.DB_1, env.TEST_MIGRATIONS);
