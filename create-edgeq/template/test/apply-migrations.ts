import { applyD1Migrations } from "cloudflare:test";
import { env } from "cloudflare:workers";

// edgeq's migrations (vitest.config.ts reads them), applied to the test database before the tests run.
await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);
