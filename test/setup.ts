import { env } from "cloudflare:workers";
import { prepareShard } from "./support/own-shards";

// The migrations wrangler applies, applied to every shard (DB, DB_1) before the tests run, and the counter
// fold's cursor placed (test/support/own-shards.ts).
await prepareShard(env.DB);
await prepareShard(env.DB_1);
