// `npm start`: applies the D1 migrations to the local database, serves the Worker with `wrangler dev` on
// 127.0.0.1:$PORT (default 8787), and runs the cron schedule of wrangler.toml's [env.local.triggers]
// locally, as Cloudflare runs it in production (wrangler dev alone never fires a cron).
//
// Environment: PORT, EDGEQ_TOKEN (default: the development token), SQS_CREDENTIALS (the SQS endpoint's
// "AKID:secret" pairs; default: the published development pair, and none at all with an EDGEQ_TOKEN of
// your own), EDGEQ_PERSIST_DIR (local state; default .wrangler/state), EDGEQ_LOCAL_CRONS (comma-separated
// cron expressions that replace the schedule, e.g. "*/10 * * * * *" to tick every ten seconds while
// developing). Arguments after `npm start --` go to `wrangler dev`. Only /health, the docs and the
// dashboard's page answer without the token: docs/api.md, "What `npm start` serves".
import { dirname, join } from "node:path";
import process from "node:process";
import { setInterval } from "node:timers";
import { fileURLToPath } from "node:url";
import { fireTick, readCrons, startCronDriver } from "./cron-driver.mjs";
import { startWranglerDev } from "./wrangler-dev.mjs";

const DEV_TOKEN = "edgeq-dev-token"; // keep in step with src/http/auth.ts
const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const port = Number(process.env.PORT || 8787);
const token = process.env.EDGEQ_TOKEN || DEV_TOKEN;
const sqsCredentials = process.env.SQS_CREDENTIALS || undefined;
/** The token the cron driver presents: EDGEQ_TOKEN may list several (rotation); any one is accepted. */
const bearer = token.split(",")[0]?.trim() || token;
const crons = process.env.EDGEQ_LOCAL_CRONS
  ? process.env.EDGEQ_LOCAL_CRONS.split(",").map((c) => c.trim())
  : readCrons(join(root, "wrangler.toml"), "local");

/** How often start.mjs checks that whatever started it is still there: once a second stops an orphaned
 * server (npm does not pass SIGTERM on to its script) within a second, for a negligible cost. */
const PARENT_CHECK_MS = 1_000;

/** @param {string} line */
const say = (line) => console.log(`edgeq: ${line}`);

const server = await startWranglerDev({
  root,
  token,
  sqsCredentials,
  port,
  persistTo: process.env.EDGEQ_PERSIST_DIR || undefined,
  extraArgs: process.argv.slice(2),
  onOutput: (text, stream) => process[stream].write(text),
}).catch((error) => {
  // wrangler's own output, above, says why.
  console.error(`edgeq: ${error instanceof Error ? error.message.split("\n")[0] : error}; see the output above`);
  return process.exit(1);
});

// Only now that /health answers: the address printed is one that serves.
console.log(`
edgeq: serving on ${server.url}
edgeq: bearer token: ${token}${token === DEV_TOKEN ? "  (development default; set EDGEQ_TOKEN to change it)" : ""}
edgeq: try  curl -H "Authorization: Bearer ${token}" ${server.url}/v1/queues`);

// Which processor engines are active (local development has no Workers AI).
const res = await fetch(`${server.url}/v1/processors`, { headers: { Authorization: `Bearer ${token}` } });
if (res.ok) {
  const { processors } =
    /** @type {{ processors: { type: string, available: boolean, engine: string, note?: string }[] }} */ (
      await res.json()
    );
  say("processor engines (push mode):");
  for (const p of processors) {
    console.log(
      `  ${p.type.padEnd(10)} ${p.available ? "active " : "off    "} ${p.engine}${p.note ? ` — ${p.note}` : ""}`,
    );
  }
}

const driver = startCronDriver({
  crons,
  async fire(cron, at) {
    const started = Date.now();
    await fireTick(server.url, bearer);
    say(`cron "${cron}" tick for ${at.toISOString()} fired (${Date.now() - started} ms)`);
  },
});
const next = driver.next();
say(
  crons.length === 0
    ? "no cron schedule in wrangler.toml [env.local.triggers]"
    : `running the cron schedule ${crons.map((c) => `"${c}"`).join(", ")} locally; next tick ${next?.at.toISOString() ?? "never"}`,
);
console.log("");

let stopping = false;
/** @param {string} why */
async function shutdown(why) {
  if (stopping) return;
  stopping = true;
  say(`${why}: stopping`);
  driver.stop();
  await server.stop();
  process.exit(0);
}
for (const signal of /** @type {const} */ (["SIGINT", "SIGTERM", "SIGHUP"])) {
  process.on(signal, () => void shutdown(signal));
}
const parent = process.ppid;
setInterval(() => {
  if (process.ppid !== parent) void shutdown("the process that started npm start is gone");
}, PARENT_CHECK_MS).unref();
void server.exited.then((code) => {
  if (stopping) return;
  driver.stop();
  console.error(`edgeq: wrangler dev exited (${code}); stopping`);
  process.exit(code || 1);
});
