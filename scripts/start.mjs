// `npm start`: applies the D1 migrations to the local database, then serves the Worker with
// `wrangler dev` on 127.0.0.1:$PORT (default 8787) with cron testing enabled
// (GET /__scheduled?cron=*+*+*+*+* runs the tick by hand).
import { spawn, spawnSync } from "node:child_process";

const DEV_TOKEN = "edgeq-dev-token"; // keep in step with src/http/auth.ts
const port = process.env.PORT || "8787";
const token = process.env.EDGEQ_TOKEN || DEV_TOKEN;
const persist = process.env.EDGEQ_PERSIST_DIR ? ["--persist-to", process.env.EDGEQ_PERSIST_DIR] : [];

const migrate = spawnSync("wrangler", ["d1", "migrations", "apply", "DB", "--local", ...persist], {
  stdio: "inherit",
  env: { ...process.env, CI: "true" },
});
if (migrate.status !== 0) {
  console.error("edgeq: applying migrations to the local D1 failed; see the output above");
  process.exit(migrate.status ?? 1);
}

console.log(`
edgeq: serving on http://127.0.0.1:${port}
edgeq: bearer token: ${token}${token === DEV_TOKEN ? "  (development default; set EDGEQ_TOKEN to change it)" : ""}
edgeq: try  curl -H "Authorization: Bearer ${token}" http://127.0.0.1:${port}/v1/queues
`);

const dev = spawn(
  "wrangler",
  [
    "dev",
    "--ip",
    "127.0.0.1",
    "--port",
    port,
    "--test-scheduled",
    "--var",
    "ENVIRONMENT:development",
    "--var",
    `EDGEQ_TOKEN:${token}`,
    ...persist,
    ...process.argv.slice(2),
  ],
  { stdio: "inherit" },
);
for (const signal of /** @type {const} */ (["SIGINT", "SIGTERM"])) process.on(signal, () => dev.kill(signal));
dev.on("exit", (code, signal) => process.exit(code ?? (signal ? 0 : 1)));
