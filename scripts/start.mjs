// `npm start`: applies the D1 migrations to the local database, then serves the Worker with
// `wrangler dev` on 127.0.0.1:$PORT (default 8787) with cron testing enabled
// (GET /__scheduled?cron=*+*+*+*+* runs the tick by hand).
import { spawn, spawnSync } from "node:child_process";

const DEV_TOKEN = "edgeq-dev-token"; // keep in step with src/http/auth.ts
const port = process.env.PORT || "8787";
const token = process.env.EDGEQ_TOKEN || DEV_TOKEN;
const persist = process.env.EDGEQ_PERSIST_DIR ? ["--persist-to", process.env.EDGEQ_PERSIST_DIR] : [];

const migrate = spawnSync("wrangler", ["d1", "migrations", "apply", "DB", "--local", "--env", "local", ...persist], {
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
    "--env",
    "local",
    "--ip",
    "127.0.0.1",
    "--port",
    port,
    "--test-scheduled",
    "--var",
    `EDGEQ_TOKEN:${token}`,
    ...persist,
    ...process.argv.slice(2),
  ],
  { stdio: "inherit" },
);
// Once the server answers, say which processor engines are active (local development has no Workers AI).
async function announceEngines() {
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 120; i++) {
    try {
      const res = await fetch(`${base}/v1/processors`, { headers: { Authorization: `Bearer ${token}` } });
      if (res.ok) {
        const { processors } = await res.json();
        console.log("\nedgeq: processor engines (push mode):");
        for (const p of processors) {
          console.log(
            `  ${p.type.padEnd(10)} ${p.available ? "active " : "off    "} ${p.engine}${p.note ? ` — ${p.note}` : ""}`,
          );
        }
        console.log("");
        return;
      }
    } catch {
      // not up yet
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  console.error("edgeq: the server did not answer within 60 s; engines unknown");
}
void announceEngines();

for (const signal of /** @type {const} */ (["SIGINT", "SIGTERM"])) process.on(signal, () => dev.kill(signal));
dev.on("exit", (code, signal) => process.exit(code ?? (signal ? 0 : 1)));
