// `node scripts/hang-up-probe.mjs [--url http://127.0.0.1:8787 --token …] [--trials 5]`: what a running
// edgeq server (by default one it starts itself: `wrangler dev --env local`, as `npm start` serves) makes of
// long polls whose clients hang up (docs/api.md, "What request.signal gives, where"). Prints one JSON report:
//   reported    — a poll whose client closed its socket: was it withdrawn (request.signal fired in the
//                 Worker), i.e. does a task enqueued afterwards stay pending instead of being leased to it?
//   hungUp      — two polls (wait_s 20) hung up after a second, a live client leasing with wait_s 2 in a
//                 loop and claiming on receipt: how long from each enqueue until the live client holds the task.
//   withdrawn   — a poll named with waiter_id, withdrawn (POST …/lease/withdraw): how soon it answers, and
//                 whether a task enqueued afterwards stays pending.
import { request as httpRequest } from "node:http";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import process from "node:process";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { startWranglerDev } from "./wrangler-dev.mjs";

/** How long a hung-up client keeps its poll open before closing the socket: the "after a second". */
const HANG_UP_AFTER_MS = 1_000;

/** How long the probe watches for a task to be leased to a poll whose client is gone: a parked poll is
 * served within milliseconds of the enqueue's wake-up, so 3 s separates "parked" from "withdrawn" widely. */
const WATCH_MS = 3_000;

/** How often a task's state is read while watching: fine enough for the 3 s window, light on the server. */
const READ_EVERY_MS = 50;

/** Past this a live client is taken not to get the task at all: the issue saw 12 s and more, and before the
 * fix each of the two gone polls could hold the task for a whole 10 s claim window (20 s); 45 s is well past. */
const GIVE_UP_MS = 45_000;

const { values } = parseArgs({
  options: { url: { type: "string" }, token: { type: "string" }, trials: { type: "string", default: "5" } },
});
const token = values.token ?? "edgeq-dev-token";
const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const persistTo = values.url ? undefined : await mkdtemp(join(tmpdir(), "edgeq-hang-up-"));
const server = values.url ? null : await startWranglerDev({ root, token, persistTo, logLevel: "warn" });
const base = values.url ?? server?.url ?? "";

/**
 * One API call.
 * @param {string} method @param {string} path @param {unknown} [body]
 * @returns {Promise<any>}
 */
async function api(method, path, body) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
  return res.json();
}

/**
 * A long poll whose client closes its socket after `afterMs`, without reading an answer.
 * @param {string} queue @param {number} afterMs
 */
function hangingPoll(queue, afterMs) {
  const url = new URL(`${base}/v1/queues/${queue}/lease`);
  const req = httpRequest(url, {
    method: "POST",
    agent: false,
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
  });
  req.on("error", () => {}); // the hang-up itself
  req.end(JSON.stringify({ max: 1, wait_s: 20 }));
  return sleep(afterMs).then(() => void req.destroy());
}

/** @param {string} queue @returns {Promise<string>} */
async function enqueueOne(queue) {
  const { tasks } = await api("POST", `/v1/queues/${queue}/tasks`, { payload: { at: Date.now() } });
  return tasks[0].id;
}

/** Whether the task was leased (to anyone) within WATCH_MS. @param {string} id */
async function leasedWithin(id) {
  const end = Date.now() + WATCH_MS;
  while (Date.now() < end) {
    if ((await api("GET", `/v1/tasks/${id}`)).state === "processing") return true;
    await sleep(READ_EVERY_MS);
  }
  return false;
}

/** Is a hang-up reported to the Worker? One poll hangs up; a task enqueued after it must stay pending. */
async function reported() {
  const queue = `probe-reported-${Date.now()}`;
  await hangingPoll(queue, HANG_UP_AFTER_MS);
  await sleep(HANG_UP_AFTER_MS); // time for a reported hang-up to reach the coordinator
  const id = await enqueueOne(queue);
  return { leasedToTheGonePoll: await leasedWithin(id) };
}

/**
 * The scenario, `trials` times: two polls hang up; a live client leases with wait_s 2 in a loop
 * (claiming what a wait hands it); a task is enqueued; how long until the live client holds it.
 * @param {number} trials
 */
async function hungUp(trials) {
  /** @type {number[]} */
  const ms = [];
  for (let trial = 0; trial < trials; trial++) {
    const queue = `probe-hung-up-${Date.now()}`; // a fresh queue: exactly two gone polls parked
    await Promise.all([hangingPoll(queue, HANG_UP_AFTER_MS), hangingPoll(queue, HANG_UP_AFTER_MS)]);
    // Enqueue at a different point of the live client's 2 s cycle each trial.
    let got = /** @type {number | null} */ (null);
    let stop = false;
    const live = (async () => {
      while (!stop) {
        const { tasks } = await api("POST", `/v1/queues/${queue}/lease`, { max: 1, wait_s: 2 });
        for (const t of tasks) {
          if (t.claim_by !== null)
            await api("POST", `/v1/queues/${queue}/extend`, { leases: [{ id: t.id, lease_token: t.lease_token }] });
          await api("POST", `/v1/tasks/${t.id}/complete`, { lease_token: t.lease_token });
          got = Date.now();
          stop = true;
        }
      }
    })();
    await sleep(300 + (trial * 2_000) / trials);
    const at = Date.now();
    await enqueueOne(queue);
    const deadline = at + GIVE_UP_MS;
    while (got === null && Date.now() < deadline) await sleep(READ_EVERY_MS);
    stop = true;
    await live;
    ms.push(got === null ? Infinity : got - at);
  }
  return { trials, msToLiveClient: ms, maxMs: Math.max(...ms) };
}

/** A named poll withdrawn by its client: how soon it answers; a task enqueued after stays pending. */
async function withdrawn() {
  const queue = `probe-withdrawn-${Date.now()}`;
  const waiter_id = `probe-${Date.now()}`;
  const poll = api("POST", `/v1/queues/${queue}/lease`, { max: 1, wait_s: 20, waiter_id });
  poll.catch(() => {}); // awaited below; a refusal must not end the probe before then
  await sleep(HANG_UP_AFTER_MS);
  const at = Date.now();
  const answer = await api("POST", `/v1/queues/${queue}/lease/withdraw`, { waiter_id });
  const polled = await poll;
  const answeredMs = Date.now() - at;
  const id = await enqueueOne(queue);
  return { answer, tasks: polled.tasks.length, answeredMs, leasedAfterwards: await leasedWithin(id) };
}

try {
  const report = {
    server: values.url ? base : "wrangler dev --env local (started by the probe)",
    reported: await reported(),
    hungUp: await hungUp(Number(values.trials)),
    // An edgeq from before the withdraw route refuses waiter_id: the report says so and goes on.
    withdrawn: await withdrawn().catch((/** @type {Error} */ error) => ({ error: error.message })),
  };
  console.log(JSON.stringify(report, null, 2));
} finally {
  await server?.stop();
  if (persistTo) await rm(persistTo, { recursive: true, force: true });
}
process.exit(0);
