import type { D1Migration } from "cloudflare:test";
import type { Env as EdgeqEnv } from "edgeq";

// What the tests see: the Worker's bindings (wrangler.toml), the migrations vitest.config.ts reads, and
// src/index.ts as the Worker `exports.default` calls.
declare global {
  namespace Cloudflare {
    interface GlobalProps {
      mainModule: typeof import("../src/index");
    }
    interface Env extends EdgeqEnv {
      TEST_MIGRATIONS: D1Migration[];
    }
  }
}
