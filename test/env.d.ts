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
    }
  }
}
