import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

// Tests run inside workerd against real local D1 and Durable Objects, configured from wrangler.toml.
// The same migration files wrangler applies are applied by test/setup.ts.
export default defineConfig(async () => {
  const migrations = await readD1Migrations(fileURLToPath(new URL("./migrations", import.meta.url)));
  return {
    plugins: [
      cloudflareTest({
        wrangler: { configPath: "./wrangler.toml", environment: "local" },
        miniflare: {
          bindings: { TEST_MIGRATIONS: migrations, EDGEQ_TOKEN: "test-token", ENVIRONMENT: "test" },
        },
      }),
    ],
    test: {
      include: ["test/**/*.test.ts"],
      setupFiles: ["./test/setup.ts"],
      // Runs in Node: a real webhook receiver on 127.0.0.1 for the `http` processor tests.
      globalSetup: ["./test/support/webhook-receiver.ts"],
    },
  };
});
