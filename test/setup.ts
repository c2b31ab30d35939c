import { applyD1Migrations } from "cloudflare:test";
import { env } from "cloudflare:workers";

// The migrations wrangler applies, applied to each test file's isolated D1 before its tests run.
await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);
