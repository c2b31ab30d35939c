// Long-poll latency probe against a running server (`npm start`, or any edgeq): the long-poll
// A/B docs/api.md reports ("Long polls", Latency). First 200 single-task enqueues alone, 25 ms apart (an enqueue's own latency); then 4
// pollers park in long polls (`wait_s: 2`) while 200 single-task enqueues arrive 25 ms apart, and each
// task's enqueue-to-lease latency is taken from the time the producer sent it. Prints p50 / p90 / p99.
//
//   PORT=8799 EDGEQ_LOCAL_CRONS="0 0 1 1 *" npm start        # in one shell (no tick during the probe)
//   URL=http://127.0.0.1:8799 node scripts/long-poll-probe.mjs
//
// URL (default http://127.0.0.1:8787), TOKEN (default the development token), N (default 200).
import { performance } from "node:perf_hooks";
import process from "node:process";
import { setTimeout as sleep } from "node:timers/promises";

const base = process.env.URL ?? "http://127.0.0.1:8787";
const token = process.env.TOKEN ?? "edgeq-dev-token";
const count = Number(process.env.N ?? 200);
/** Gap between enqueues: slower than the pollers' round trip, so each task finds a poll waiting. */
const GAP_MS = 25;
const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" };

/**
 * @param {string} path
 * @param {unknown} body
 * @returns {Promise<any>}
 */
async function post(path, body) {
  const res = await fetch(base + path, { method: "POST", headers, body: JSON.stringify(body) });
  if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
  return res.json();
}

/**
 * @param {number[]} values
 * @param {number} p
 */
function pct(values, p) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]?.toFixed(0);
}

/** @type {(name: string, values: number[]) => string} */
const line = (name, values) =>
  `${name}: n=${values.length} p50 ${pct(values, 50)} p90 ${pct(values, 90)} p99 ${pct(values, 99)} ms`;

// 1. Enqueues alone.
/** @type {number[]} */
const alone = [];
const quiet = `probe-alone-${Date.now()}`;
for (let i = 0; i < count; i++) {
  const t0 = performance.now();
  await post(`/v1/queues/${quiet}/tasks`, { tasks: [{ payload: { i } }] });
  alone.push(performance.now() - t0);
  await sleep(GAP_MS);
}

// 2. Enqueues into a queue four long polls wait on.
const queue = `probe-poll-${Date.now()}`;
/** @type {number[]} */
const latency = [];
/** @type {number[]} */
const calls = [];
let stop = false;
const pollers = Array.from({ length: 4 }, async () => {
  while (!stop) {
    /** @type {{ tasks: Array<{ id: string; lease_token: string; payload: { t0: number } }> }} */
    const { tasks } = await post(`/v1/queues/${queue}/lease`, { max: 100, visibility_timeout_s: 300, wait_s: 2 });
    const now = Date.now();
    for (const t of tasks) latency.push(now - t.payload.t0);
    if (tasks.length > 0) {
      await post(`/v1/queues/${queue}/ack`, {
        complete: tasks.map((t) => ({ id: t.id, lease_token: t.lease_token })),
      });
    }
  }
});
await sleep(500);
for (let i = 0; i < count; i++) {
  const t0 = Date.now();
  await post(`/v1/queues/${queue}/tasks`, { tasks: [{ payload: { t0 } }] });
  calls.push(Date.now() - t0);
  await sleep(GAP_MS);
}
const deadline = Date.now() + 10_000;
while (latency.length < count && Date.now() < deadline) await sleep(50);
stop = true;
await Promise.all(pollers);
console.log(line("enqueue alone", alone));
console.log(line("enqueue with 4 long polls waiting", calls));
console.log(line("enqueue to lease", latency));
