// `node scripts/plain-leasers-probe.mjs [--url http://127.0.0.1:8787 --token …] [-- <wrangler dev args>]`:
// plain long-poll clients against a running edgeq server (by default one it starts itself on a fresh local
// state: `wrangler dev --env local`, as `npm start` serves, plus any arguments after `--`). Each client
// leases with `wait_s` in a loop, "works" a while and completes — it never claims, as a client following
// the README's quick start does (issue 28, item 7) — while a producer enqueues single tasks more slowly
// than the clients finish them, so polls are waiting most of the time. Prints one JSON report: grants,
// completes that answered 409 (the task had gone to a second worker while the first worked on it), and the
// range of those first calls' delay after receipt. `-- --var ENVIRONMENT:test` serves it as where hang-ups
// are reported (src/http/request-operations.ts).
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { startWranglerDev } from "./wrangler-dev.mjs";

/** Clients leasing at once: several waiting polls at any moment, as in the audit's concurrent leasers. */
const CLIENTS = 16;

/** A task is enqueued this often (one call at a time): fewer than the clients can finish, so polls wait. */
const ENQUEUE_EVERY_MS = 150;

/** How long the producer runs; then the probe waits for the last tasks to complete. */
const RUN_MS = 40_000;

/** Each task's "work", drawn uniformly: around the 1 s contested window, as the audit's first calls
 * (0.8-2.3 s after receipt) were. */
const WORK_MIN_MS = 300;
const WORK_MAX_MS = 2_500;

/** The clients' long-poll wait. */
const WAIT_S = 5;

const { values, positionals } = parseArgs({
  options: { url: { type: "string" }, token: { type: "string" } },
  allowPositionals: true,
});
const token = values.token ?? "edgeq-dev-token";
const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const persistTo = values.url ? undefined : await mkdtemp(join(tmpdir(), "edgeq-plain-leasers-"));
const server = values.url
  ? null
  : await startWranglerDev({ root, token, persistTo, logLevel: "warn", extraArgs: positionals });
const base = values.url ?? server?.url ?? "";

/**
 * One API call: its status and JSON body.
 * @param {string} method @param {string} path @param {unknown} [body]
 * @returns {Promise<{ status: number, body: any }>}
 */
async function api(method, path, body) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: await res.json().catch(() => null) };
}

const queue = `probe-plain-${Date.now()}`;
const counts = { grants: 0, shortClaimWindow: 0, completed: 0, refused: 0, otherAnswers: 0 };
/** @type {number[]} */
const refusedAfterMs = [];
let stop = false;

/** A plain client: lease with a wait, work, complete; never claim. @param {number} n */
async function plainClient(n) {
  while (!stop) {
    const lease = await api("POST", `/v1/queues/${queue}/lease`, { max: 1, wait_s: WAIT_S, holder: `plain-${n}` });
    const task = lease.status === 200 ? lease.body.tasks[0] : undefined;
    if (lease.status !== 200) counts.otherAnswers++;
    if (task === undefined) continue;
    counts.grants++;
    if (task.claim_by !== null && task.claim_by !== task.lease_expires_at) counts.shortClaimWindow++;
    const received = Date.now();
    await sleep(WORK_MIN_MS + Math.random() * (WORK_MAX_MS - WORK_MIN_MS));
    const done = await api("POST", `/v1/tasks/${task.id}/complete`, { lease_token: task.lease_token });
    if (done.status === 200) counts.completed++;
    else if (done.status === 409) refusedAfterMs.push(Date.now() - received);
    else counts.otherAnswers++;
  }
}

const clients = Array.from({ length: CLIENTS }, (_, n) => plainClient(n));
const started = Date.now();
let enqueued = 0;
while (Date.now() - started < RUN_MS) {
  await api("POST", `/v1/queues/${queue}/tasks`, { tasks: [{ payload: { n: enqueued } }] });
  enqueued++;
  await sleep(ENQUEUE_EVERY_MS);
}
for (let i = 0; i < 120 && counts.completed < enqueued; i++) await sleep(500);
stop = true;
await Promise.all(clients);
counts.refused = refusedAfterMs.length;
refusedAfterMs.sort((a, b) => a - b);
console.log(
  JSON.stringify({
    clients: CLIENTS,
    enqueued,
    ...counts,
    refusedFirstCallMs: refusedAfterMs.length > 0 ? [refusedAfterMs[0], refusedAfterMs.at(-1)] : null,
  }),
);
await server?.stop();
