import { env } from "cloudflare:workers";
import { openDb } from "../../../src/db/client";
import { d1TaskStore } from "../../../src/engine/d1-store";
import { hybridTaskStore } from "../../../src/engine/hybrid/hybrid-store";
import type { TaskStore } from "../../../src/engine/store";
import { T0 } from "../../helpers";
import { prepareShard } from "../../support/own-shards";

/**
 * A database of its own (STATS_DB, vitest.config.ts) filled as a deployed shard looks after a while — many
 * queues, tens of thousands of tasks in rows and in packs, most finished, some live and some leased, some
 * waiting on others — then analysed (ANALYZE, what `PRAGMA optimize` gives a long-lived D1 database), so the
 * planner plans with statistics. Its own database: the statistics are written into the database and change
 * the plans of every later statement on it, whoever runs it.
 */

const DAY_MS = 86_400_000;
/** The fill's time: its tasks are created from here on, a millisecond apart per call. */
export const FILLED_AT = T0 + 400 * DAY_MS;
/** Queues filled. */
export const FILLED_QUEUES = 40;
/** Row tasks per filled queue: five calls of 100. */
const ROWS_PER_QUEUE = 500;
/** Pack tasks per filled queue, in calls of these sizes: the first calls alternate two types (a pack per task:
 * the packs of one that coalesced single enqueues make), the calls of 100 take them in halves (two packs). */
const PACK_CALLS = [50, 50, 50, 25, 25, 100, 100, 100];
const ALTERNATING_UNTIL = 5;
/** Of each layout per queue, leased and then finished (the rest stays live). */
const FINISHED_PER_QUEUE = 400;
/** Of each layout per queue, leased and left held. */
const HELD_PER_QUEUE = 20;
/** The filled queue whose retention is short (60 s): the prune's walk has something past retention. */
export const SHORT_RETENTION_QUEUE = "stats-q0";

export const filledQueue = (i: number) => `stats-q${i}`;

/** The served store over the stats database (the hybrid: rows and packs side by side). */
export const statsStore = (d1: D1Database = env.STATS_DB): TaskStore => hybridTaskStore(openDb(d1));

/**
 * Migrates STATS_DB, fills it (about 20,000 tasks in rows and 20,000 in packs over FILLED_QUEUES queues,
 * with dependency edges between them) and analyses it (unless `analyse` is false: a run to compare plans
 * without statistics). Returns the time the fill ended.
 */
export async function fillAndAnalyse(analyse = true): Promise<number> {
  await prepareShard(env.STATS_DB);
  const store = statsStore();
  const rows = d1TaskStore(openDb(env.STATS_DB));
  let now = FILLED_AT;
  for (let q = 0; q < FILLED_QUEUES; q++) {
    const queue = filledQueue(q);
    if (queue === SHORT_RETENTION_QUEUE) await store.putQueueConfig(queue, { retention_s: 60 }, now, []);
    // Rows: calls of 100 (the row store's own enqueue: a call the hybrid keeps in rows, as one with a group).
    const rowIds: string[] = [];
    for (let c = 0; c < ROWS_PER_QUEUE / 100; c++) {
      const tasks = Array.from({ length: 100 }, (_, i) => ({ type: `t${i % 3}`, payload: { q, c, i } }));
      rowIds.push(...(await rows.enqueueTasks(queue, tasks, ++now)).tasks.map((t) => t.id));
    }
    // Packs: calls of several plain tasks, two types a call.
    const packIds: string[] = [];
    for (const [c, size] of PACK_CALLS.entries()) {
      const type = (i: number) => (c < ALTERNATING_UNTIL ? `p${i % 2}` : `p${Number(i >= size / 2)}`);
      const tasks = Array.from({ length: size }, (_, i) => ({ type: type(i), payload: { q, i } }));
      packIds.push(...(await store.enqueueTasks(queue, tasks, ++now)).tasks.map((t) => t.id));
    }
    // Dependents: rows waiting on a row task and a pack task each, and some on tasks that will finish.
    const dependents = Array.from({ length: 20 }, (_, i) => ({
      type: "dep",
      dependsOn: [rowIds[i * 7]!, packIds[i * 11]!],
    }));
    await store.enqueueTasks(queue, dependents, ++now);
    now = await leaseAndFinish(store, queue, now);
  }
  if (analyse) await env.STATS_DB.prepare("ANALYZE").run();
  return now;
}

/** Leases FINISHED_PER_QUEUE + HELD_PER_QUEUE of each layout's tasks of `queue` (100 a call), completes most of
 * the finished share and fails the rest for good (dead), leaves HELD_PER_QUEUE held. */
async function leaseAndFinish(store: TaskStore, queue: string, from: number): Promise<number> {
  let now = from;
  const leased = [];
  for (let n = 0; n < 2 * (FINISHED_PER_QUEUE + HELD_PER_QUEUE); n += 100) {
    const max = Math.min(100, 2 * (FINISHED_PER_QUEUE + HELD_PER_QUEUE) - n);
    leased.push(...(await store.leaseTasks({ queue, max, visibilityTimeoutS: 3600, holder: "fill" }, ++now)));
  }
  const finished = leased.slice(0, 2 * FINISHED_PER_QUEUE);
  for (let i = 0; i < finished.length; i += 100) {
    const part = finished.slice(i, i + 100);
    const failed = part.filter((_, k) => k % 10 === 9);
    const done = part.filter((_, k) => k % 10 !== 9);
    await store.completeTasks(
      done.map((t) => ({ id: t.id, leaseToken: t.leaseToken! })),
      ++now,
    );
    await store.failTasks(
      failed.map((t) => ({ id: t.id, leaseToken: t.leaseToken!, message: "no", retryable: false })),
      ++now,
    );
  }
  return now;
}
