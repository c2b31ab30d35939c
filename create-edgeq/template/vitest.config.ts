import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";

// The tests run inside workerd, the runtime of `wrangler dev` and of Cloudflare, against real local D1
// and Durable Objects configured from wrangler.toml. test/apply-migrations.ts applies the migrations
// wrangler applies (wrangler.toml's migrations_dir) before the tests run. The token and the environment are
// set here, not taken from .dev.vars, which a fresh clone (CI) does not have.
export default defineConfig(async () => {
  const migrations = await readD1Migrations("node_modules/edgeq/migrations");
  return {
    plugins: [
      cloudflareTest({
        wrangler: { configPath: "./wrangler.toml" },
        miniflare: { bindings: { TEST_MIGRATIONS: migrations, EDGEQ_TOKEN: "test-token", ENVIRONMENT: "test" } },
      }),
    ],
    test: { setupFiles: ["./test/apply-migrations.ts"] },
  };
});
