import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { openDb } from "../../../src/db/client";
import { d1TaskStore } from "../../../src/engine/d1-store";
import { REUSE_WALK } from "../../../src/engine/reuse-rows";
import { hybridTaskStore } from "../../../src/engine/hybrid/hybrid-store";
import { packTaskStore } from "../../../src/engine/packs/pack-store";
import { idLowerBound, PRUNE_WINDOW } from "../../../src/engine/purge";
import type { StoredTask } from "../../../src/contracts/stored-task";
import type { TaskStore } from "../../../src/engine/store";
import { meteredD1 } from "../../support/metered-d1";
import { fillAndAnalyse, FILLED_QUEUES, filledQueue } from "./fill";

// Query plans once a database has statistics (docs/design/packs.md, "Plans under statistics"). A deployed D1
// database gets ANALYZE statistics over time (`PRAGMA optimize`), and with them SQLite's planner may order a
// join or pick an index differently: a plan that probed by key can become a scan of a table. So the hot paths
// of the served store (the hybrid: rows and packs) run here on a database of their own (STATS_DB), filled as
// a shard looks after a while and analysed, and each is held to rows read in proportion to its own tasks —
// never to the tens of thousands the database holds. A failure names the statement that read the most.

/** Statements of the last measured call with their rows read, the largest first (a failure's message). */
const statements: Array<[number, string, unknown[]]> = [];
const meter = meteredD1(env.STATS_DB, {
  onStatement: (query, read, values) => statements.push([read, query, values]),
});
const store: TaskStore = hybridTaskStore(openDb(meter.db));
const rowStore = d1TaskStore(openDb(meter.db));
const packStore = packTaskStore(openDb(meter.db));

/** Rows read by `run`, checked against `bound`; over it, the message names the statement that read the most
 * and its plan as D1 runs it (EXPLAIN QUERY PLAN with the same bound values). */
async function readsAtMost<T>(what: string, bound: number, run: () => Promise<T>): Promise<T> {
  meter.reset();
  statements.length = 0;
  const answer = await run();
  const read = meter.usage.rowsRead;
  console.log(`${what}: ${read} rows read (bound ${bound})`);
  if (read > bound) {
    const [most, query, values] = statements.sort((a, b) => b[0] - a[0])[0]!;
    const plan = await env.STATS_DB.prepare(`EXPLAIN QUERY PLAN ${query}`)
      .bind(...values)
      .all<{ detail: string }>();
    expect.fail(
      `${what} read ${read} rows, more than ${bound}; the statement that read the most (${most} rows):\n` +
        `${query.replace(/\s+/g, " ").slice(0, 400)}\nits plan: ${plan.results.map((r) => r.detail).join("; ")}`,
    );
  }
  return answer;
}

/** Rows a write of a holder may read: a few per item, and a pack write's slots (its splice walks the pack's
 * slots in SQL: ~5 rows a slot of each pack it rewrites, docs/design/packs.md "Speed as served"). */
const holderBound = (items: number, packSlots = 0) => 50 + 30 * items + 6 * packSlots;

const fence = (t: StoredTask) => ({ id: t.id, leaseToken: t.leaseToken! });
const isPackTask = async (id: string) => (await packStore.findTaskState(id)) !== null;

let now = 0;
beforeAll(async () => {
  // An hour after the fill: its leases are still held (3,600 s), nothing of it is past the default retention.
  now = (await fillAndAnalyse()) + 60_000;
}, 600_000);

describe("the served store's hot paths read in proportion to their own tasks once the database has statistics", () => {
  it("enqueue: into rows (one task, a dedupe key, dependencies) and into packs (calls of 100 and of 2)", async () => {
    const queue = "stats-enqueue";
    // An enqueue of one's two walks for a row to reuse read REUSE_WALK rows each at most: past the prune's
    // cursor, then below the counter fold's for a tombstone (src/engine/reuse-rows.ts).
    await readsAtMost("enqueue of 1 into rows", 20 + REUSE_WALK, () =>
      store.enqueueTasks(queue, [{ payload: 1 }], ++now),
    );
    await readsAtMost("enqueue of 1 with a dedupe key", 20 + REUSE_WALK, () =>
      store.enqueueTasks(queue, [{ payload: 1, dedupeKey: "k" }], ++now),
    );
    const [a, b] = (await store.enqueueTasks(queue, [{}, {}], ++now)).tasks;
    await readsAtMost("enqueue of 1 with 2 dependencies (on pack tasks)", 120, () =>
      store.enqueueTasks(queue, [{ dependsOn: [a!.id, b!.id] }], ++now),
    );
    await readsAtMost("enqueue of 100 into packs", 20, () =>
      store.enqueueTasks(
        queue,
        Array.from({ length: 100 }, (_, i) => ({ payload: i })),
        ++now,
      ),
    );
    await readsAtMost("enqueue of 2 into packs", 20, () => store.enqueueTasks(queue, [{}, {}], ++now));
  });

  it("lease of 1 and of 100, and the holder's writes on row tasks and pack tasks", async () => {
    const queue = "stats-lease";
    // 100 row tasks (a group keeps a call in rows) and 100 pack tasks, the rows first in lease order.
    await store.enqueueTasks(
      queue,
      Array.from({ length: 100 }, (_, i) => ({ payload: i, group: "g" })),
      ++now,
    );
    await store.enqueueTasks(
      queue,
      Array.from({ length: 100 }, (_, i) => ({ payload: i })),
      ++now,
    );
    const lease = (max: number) => store.leaseTasks({ queue, max, visibilityTimeoutS: 600, holder: "w" }, ++now);
    const [first] = await readsAtMost("lease of 1", 100, () => lease(1));
    const leased = await readsAtMost("lease of 100 (99 rows, 1 pack task)", 12 * 100, () => lease(100));
    const packed = await readsAtMost("lease of 100 (pack tasks)", 12 * 100, () => lease(100));
    const rows = [first!, ...leased.filter((t) => !packed.includes(t))].slice(0, 99);
    expect(await isPackTask(rows[0]!.id)).toBe(false);
    expect(await isPackTask(packed[0]!.id)).toBe(true);

    // Row tasks: heartbeat, extend, complete, fail.
    await readsAtMost("heartbeat of a row task", holderBound(1), () => store.heartbeatTask(fence(rows[0]!), ++now));
    await readsAtMost("extend of 10 row tasks", holderBound(10), () =>
      store.extendLeases(rows.slice(0, 10).map(fence), ++now),
    );
    await readsAtMost("complete of 1 row task", holderBound(1), () => store.completeTasks([fence(rows[0]!)], ++now));
    await readsAtMost("complete of 40 row tasks", holderBound(40), () =>
      store.completeTasks(rows.slice(1, 41).map(fence), ++now),
    );
    await readsAtMost("fail of 40 row tasks", holderBound(40), () =>
      store.failTasks(
        rows.slice(41, 81).map((t) => ({ ...fence(t), message: "no" })),
        ++now,
      ),
    );
    // Pack tasks (their pack of 100 slots): heartbeat, extend, complete, fail.
    await readsAtMost("heartbeat of a pack task", holderBound(1, 100), () =>
      store.heartbeatTask(fence(packed[0]!), ++now),
    );
    await readsAtMost("extend of 10 pack tasks", holderBound(10, 100), () =>
      store.extendLeases(packed.slice(0, 10).map(fence), ++now),
    );
    await readsAtMost("complete of 1 pack task", holderBound(1, 100), () =>
      store.completeTasks([fence(packed[0]!)], ++now),
    );
    await readsAtMost("fail of 10 pack tasks", holderBound(10, 100), () =>
      store.failTasks(
        packed.slice(1, 11).map((t) => ({ ...fence(t), message: "no" })),
        ++now,
      ),
    );
    await readsAtMost("complete of the other 89 pack tasks", holderBound(89, 100), () =>
      store.completeTasks(packed.slice(11).map(fence), ++now),
    );
  });

  it("lease and complete on a filled queue", async () => {
    const queue = filledQueue(3);
    const lease = (max: number) => store.leaseTasks({ queue, max, visibilityTimeoutS: 600, holder: "w" }, ++now);
    const [one] = await readsAtMost("lease of 1 on a filled queue", 100, () => lease(1));
    const many = await readsAtMost("lease of 100 on a filled queue", 12 * 100, () => lease(100));
    await readsAtMost("complete of 1 on a filled queue", holderBound(1, 100), () =>
      store.completeTasks([fence(one!)], ++now),
    );
    await readsAtMost("complete of 100 on a filled queue", holderBound(100, 200), () =>
      store.completeTasks(many.map(fence), ++now),
    );
  });

  // A row task's completion that settles a waiting dependent runs the trigger
  // `tasks_settle_dependents` (migration 0016), whose step 1 (`FROM s JOIN task_edges e ... GROUP BY`) scanned
  // all of task_edges once the database had statistics (1,633 rows read here; EXPLAIN: "SCAN e", then "SEARCH
  // s USING AUTOMATIC COVERING INDEX"). Migration 0024 recreates it with its joins pinned (CROSS JOIN, as
  // settledDependentsSql): docs/design/packs.md, "Plans under statistics".
  it("a completion that settles dependents reads in proportion to them (the dependents trigger, 0024)", async () => {
    const deps = "stats-deps";
    const [row] = (await store.enqueueTasks(deps, [{ payload: "row" }], ++now)).tasks;
    const [p1, p2] = (await store.enqueueTasks(deps, [{}, {}], ++now)).tasks;
    await store.enqueueTasks(deps, [{ dependsOn: [row!.id, p1!.id] }, { dependsOn: [p2!.id] }], ++now);
    const held = await store.leaseTasks({ queue: deps, max: 3, visibilityTimeoutS: 600, holder: "w" }, ++now);
    expect(held).toHaveLength(3);
    // The three items, and the two dependents they settle (each: its edges, its row, the report's walk).
    await readsAtMost("complete of a row task and 2 pack tasks with dependents", holderBound(3, 2) + 30 * 2, () =>
      store.completeTasks(held.map(fence), ++now),
    );
  });

  it("the cron tick's retention: the row prune reads its windows, the pack prune its queues' seeks and the packs it deletes", async () => {
    const queue = "stats-retention";
    await store.putQueueConfig(queue, { retention_s: 60 }, now, []);
    // What the fill left past retention (its short-retention queue) is pruned first, so the pass measured
    // deletes this test's packs only.
    for (let i = 0; i < 10 && (await packStore.pruneByRetention(now)).pruned > 0; i++);
    // Finished packs past retention, a row task depending on one of them (an edge the prune deletes with it).
    const ids = (await store.enqueueTasks(queue, [{}, {}, {}, {}], ++now)).tasks.map((t) => t.id);
    await store.enqueueTasks(queue, [{ payload: "dependent", dependsOn: [ids[0]!] }], ++now);
    const held = await store.leaseTasks({ queue, max: 5, visibilityTimeoutS: 600, holder: "w" }, ++now);
    await store.completeTasks(held.filter((t) => ids.includes(t.id)).map(fence), ++now);
    now += 120_000;
    // A pass: one seek per queue with finished packs (FILLED_QUEUES and this test's), and the doomed packs.
    const pruned = await readsAtMost("pack retention pass", 10 * (FILLED_QUEUES + 5) + 50, () =>
      packStore.pruneByRetention(now),
    );
    expect(pruned.pruned).toBeGreaterThanOrEqual(1);
    // The row prune walks the primary key a window at a time (PRUNE_WINDOW rows), each window's statements
    // reading it again: bounded by its windows, never by the table.
    const rowPass = await readsAtMost("row prune pass", 5 * PRUNE_WINDOW * 3, () => rowStore.pruneByRetention(now));
    expect(rowPass.windows).toBeLessThanOrEqual(3);
  });

  it("the cron tick's live front reads the fronts of the queues with live tasks, not their backlogs", async () => {
    const live = await env.STATS_DB.prepare(
      `SELECT count(*) AS n FROM (SELECT queue FROM tasks WHERE finished_at IS NULL
        UNION SELECT queue FROM packs WHERE finished_at IS NULL)`,
    ).first<{ n: number }>();
    // Per queue: its front's index entries and rows, a few priorities deep (LIVE_FRONT_MIN_PENDING each).
    await readsAtMost(`live front of ${live!.n} queues`, 250 * live!.n, () => store.readLiveFront(now));
  });

  it("purge: over packs in proportion to its queue's packs; over rows the key below `before`", async () => {
    const queue = "stats-purge";
    await store.enqueueTasks(
      queue,
      Array.from({ length: 100 }, (_, i) => ({ payload: i })),
      ++now,
    );
    const held = await store.leaseTasks({ queue, max: 100, visibilityTimeoutS: 600, holder: "w" }, ++now);
    await store.completeTasks(held.map(fence), ++now);
    const purged = await readsAtMost("purge of a finished pack of 100 (packs)", 200, () =>
      packStore.purgeTasks(queue, { before: ++now }),
    );
    expect(purged.purged).toBe(100);
    // The row store's purge walks `tasks`' key below `before` (it keeps no index of finished tasks: purge.ts), so
    // it reads every row created before `before`: a walk the statistics must not make any longer.
    const below = await env.STATS_DB.prepare("SELECT count(*) AS n FROM tasks WHERE id < ?")
      .bind(idLowerBound(now))
      .first<{ n: number }>();
    await readsAtMost("purge over rows", below!.n + 20, () => rowStore.purgeTasks(queue, { before: now }));
  });
});
