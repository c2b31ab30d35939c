import { env } from "cloudflare:workers";
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { openDb } from "../../../src/db/client";
import { idLowerBound, pruneWindow, PRUNE_WINDOW, retentionCutoffId } from "../../../src/engine/purge";
import { DEFAULT_QUEUE_CONFIG } from "../../../src/engine/queue-config";
import { d1TaskStore } from "../../../src/engine/d1-store";
import { db, uniqueQueue, PROCESSORS } from "../../helpers";
import { clockRange } from "../../support/clock-range";
import { meteredD1 } from "../../support/metered-d1";
import { besideUnrelatedEdges } from "../../support/unrelated-edges";
import { storeFixtures } from "../conformance/fixtures";
import { D1_STORE } from "../conformance/store-kinds";

// D1 store only: purges and the retention prune walk the primary key, whose ULIDs sort by creation time —
// this store's layout, read window by window (src/engine/purge.ts).

const { store, enqueueOne, completedTask } = storeFixtures(D1_STORE);

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
/** A walk prunes every queue's tasks below its cutoff: this file works in a clock range of its own. */
const clock = clockRange("engine/d1/prune-walk");
const T0 = clock.day(0);

async function exists(id: string): Promise<boolean> {
  return (await db().get(sql`SELECT 1 AS present FROM tasks WHERE id = ${id}`)) !== undefined;
}

describe("the id bound of a purge on D1", () => {
  it("keys the id bound to the time: every id created before `before` sorts below it", async () => {
    const queue = uniqueQueue();
    const id = await enqueueOne(queue, {}, T0 + 123);
    expect(id < idLowerBound(T0 + 124)).toBe(true);
    expect(id < idLowerBound(T0 + 123)).toBe(false);
  });
});

/** A whole walk of the retention prune from the lowest id to the cutoff, as the ticks make it window by window. */
async function pruneWalk(now: number): Promise<number> {
  const below = await retentionCutoffId(db(), now);
  let after = "";
  let pruned = 0;
  do {
    const step = await pruneWindow(db(), now, { after, below });
    pruned += step.pruned;
    after = step.next;
  } while (after !== "");
  return pruned;
}

describe("the retention prune's walk", () => {
  it("honours each queue's retention_s and the default for unconfigured queues", async () => {
    const short = uniqueQueue();
    const unconfigured = uniqueQueue();
    await store().putQueueConfig(short, { retention_s: 3600 }, T0, PROCESSORS);
    const shortDone = await completedTask(short, {}, T0); // finished T0 + 1
    const shortLive = await enqueueOne(short, { runAt: T0 + 365 * DAY_MS }, T0);
    const defaultDone = await completedTask(unconfigured, {}, T0); // finished T0 + 1
    const retentionMs = DEFAULT_QUEUE_CONFIG.retention_s * 1000;

    // Exactly at the retention boundary: kept (finished_at must be strictly older).
    await pruneWalk(T0 + 1 + HOUR_MS);
    expect(await exists(shortDone)).toBe(true);

    await pruneWalk(T0 + 2 + HOUR_MS);
    expect(await exists(shortDone)).toBe(false);
    expect(await exists(defaultDone)).toBe(true);
    expect(await exists(shortLive)).toBe(true);

    await pruneWalk(T0 + 1 + retentionMs);
    expect(await exists(defaultDone)).toBe(true);
    expect(await pruneWalk(T0 + 2 + retentionMs)).toBeGreaterThanOrEqual(1);
    expect(await exists(defaultDone)).toBe(false);
    expect(await exists(shortLive)).toBe(true);
  });

  it("keeps a queue's tasks longer when its retention is longer than the default", async () => {
    const long = uniqueQueue();
    await store().putQueueConfig(long, { retention_s: 30 * 24 * 3600 }, T0, PROCESSORS);
    const done = await completedTask(long, {}, T0);
    await pruneWalk(T0 + 10 * DAY_MS);
    expect(await exists(done)).toBe(true);
    await pruneWalk(T0 + 31 * DAY_MS);
    expect(await exists(done)).toBe(false);
  });
});

describe("pruneByRetention (a tick's share of the walk)", () => {
  it("reads a window of live tasks below the cutoff, never all of them, and goes on from there at the next tick", async () => {
    // Days no other test of this file uses, far below the cutoff of `now` (the window reads ids by time,
    // whatever their queue).
    const t = clock.day(400);
    const now = t + 30 * DAY_MS;
    const queue = uniqueQueue("prune-walk");
    // Three windows of live tasks (delayed a year), then a finished task behind them.
    const live: string[] = [];
    for (let i = 0; i < 3; i++) {
      const input = Array.from({ length: PRUNE_WINDOW }, () => ({ runAt: t + 365 * DAY_MS }));
      live.push(...(await store().enqueueTasks(queue, input, t + i)).tasks.map((task) => task.id));
    }
    const done = await completedTask(queue, {}, t + 10);

    // One window over the live tasks: it reads PRUNE_WINDOW of them, deletes none, and names where to go on.
    const meter = meteredD1(env.DB);
    const below = await retentionCutoffId(db(), now);
    const first = await pruneWindow(openDb(meter.db), now, { after: idLowerBound(t), below });
    expect(first).toEqual({ pruned: 0, read: PRUNE_WINDOW, next: live[PRUNE_WINDOW - 1] });
    expect(meter.usage.rowsRead).toBeLessThanOrEqual(PRUNE_WINDOW + 1);

    // Tick after tick (from wherever other files' ticks left the walk), each reading a bounded number of rows,
    // until the walk has passed the finished task: it is gone, every live task is kept.
    let ticks = 0;
    while (await exists(done)) {
      expect(++ticks).toBeLessThan(500);
      meter.reset();
      const { pruned } = await d1TaskStore(openDb(meter.db)).pruneByRetention(now);
      // A window reads PRUNE_WINDOW rows to find its end, and when it holds finished tasks, the same rows
      // again in each statement of the deleting batch — the edges, the pruned dependents' remote waits, the
      // delete — (one more read per finished row, for its queue's retention); another window only after one
      // that was mostly deleted. Besides, one read of every queue's retention for the cutoff.
      const queues = (await db().get<{ n: number }>(sql`SELECT count(*) AS n FROM queues`))!.n;
      expect(meter.usage.largestCallRead).toBeLessThanOrEqual(Math.max(4 * PRUNE_WINDOW, queues) + 10);
      expect(meter.usage.rowsRead).toBeLessThanOrEqual(
        4 * PRUNE_WINDOW * (1 + (2 * pruned) / PRUNE_WINDOW) + queues + 10,
      );
    }
    const left = await db().get<{ n: number }>(sql`SELECT count(*) AS n FROM tasks WHERE queue = ${queue}`);
    expect(left!.n).toBe(live.length);
    await db().run(sql`DELETE FROM tasks WHERE queue = ${queue}`);
  });
});

describe("the retention prune and dependency edges", () => {
  async function edgesOf(id: string): Promise<number> {
    const row = await db().get<{ n: number }>(
      sql`SELECT count(*) AS n FROM task_edges WHERE dependency = ${id} OR dependent = ${id}`,
    );
    return row!.n;
  }

  it("deletes an edge once both its tasks are pruned, keeping it while either end is kept", async () => {
    // Days of their own in this file's range (the walk reads ids by time, whatever their queue).
    const t = clock.day(600);
    const [short, long] = [uniqueQueue("prune-edges"), uniqueQueue("prune-edges-long")];
    await store().putQueueConfig(short, { retention_s: 3600 }, t, PROCESSORS);
    await store().putQueueConfig(long, { retention_s: 30 * 24 * 3600 }, t, PROCESSORS);
    const [a, b] = [await completedTask(short, {}, t), await completedTask(short, {}, t)];
    const live = await enqueueOne(short, { runAt: t + 365 * DAY_MS }, t);
    const { tasks } = await store().enqueueTasks(long, [{ type: "join", dependsOn: [a, b] }], t + 5);
    const join = tasks[0]!.id;
    // A dependent pruned while its dependency lives on (cancelled while waiting): the edge waits for both.
    const { tasks: gone } = await store().enqueueTasks(short, [{ type: "gone", dependsOn: [live] }], t + 5);
    await store().cancelTask(gone[0]!.id, t + 6);
    await store().cancelTask(join, t + 6); // finished: prunable after the long retention
    expect([await edgesOf(a), await edgesOf(b), await edgesOf(join), await edgesOf(live)]).toEqual([1, 1, 2, 1]);

    await pruneWalk(t + 2 * HOUR_MS); // a, b and `gone` pruned; the join kept, and its edges with it
    expect(await exists(a)).toBe(false);
    expect(await exists(gone[0]!.id)).toBe(false);
    expect(await edgesOf(join)).toBe(2);
    expect(await edgesOf(live)).toBe(1);
    const page = await store().listDependencies(join, { limit: 10 });
    expect(page.entries.map((e) => e.state)).toEqual([null, null]);

    await pruneWalk(t + 31 * DAY_MS); // the join pruned: its edges go with it; the live task's stays
    expect(await exists(join)).toBe(false);
    expect([await edgesOf(a), await edgesOf(b), await edgesOf(join)]).toEqual([0, 0, 0]);
    expect(await edgesOf(live)).toBe(1);

    await store().cancelTask(live, t + 32 * DAY_MS);
    await pruneWalk(t + 32 * DAY_MS + 2 * HOUR_MS); // its last end pruned: gone
    expect(await edgesOf(live)).toBe(0);
  });

  it("deletes a dependency's delivered settlements to other databases with it; one still owed stays", async () => {
    const t = clock.day(700);
    const q = uniqueQueue("prune-remote-edges");
    await store().putQueueConfig(q, { retention_s: 3600 }, t, PROCESSORS);
    const [x, y] = [await enqueueOne(q, {}, t), await enqueueOne(q, {}, t)];
    await store().recordRemoteEdges(
      [
        { dependency: x, dependent: "D-told", dependentQueue: "joins" },
        { dependency: y, dependent: "D-owed", dependentQueue: "joins" },
      ],
      t,
    );
    await store().cancelQueueTasks(q, {}, t + 1); // both finish: both settlements owed
    expect(await store().dropSettlements([{ dependency: x, dependent: "D-told" }], t + 2)).toBe(1);
    const outbox = async () =>
      (
        await db().all<{ dependent: string }>(
          sql`SELECT dependent FROM remote_edges WHERE dependency IN (${x}, ${y}) ORDER BY dependent`,
        )
      ).map((r) => r.dependent);
    expect(await outbox()).toEqual(["D-owed", "D-told"]); // the delivered one kept for x's dependents page

    await pruneWalk(t + 2 * HOUR_MS); // x and y pruned
    expect([await exists(x), await exists(y)]).toEqual([false, false]);
    expect(await outbox()).toEqual(["D-owed"]); // still owed: its delivery deletes it (the dependency is gone)
    expect(await store().dropSettlements([{ dependency: y, dependent: "D-owed" }], t + 3 * HOUR_MS)).toBe(1);
    expect(await outbox()).toEqual([]);
  });
});

describe("the retention prune's edges beside many unrelated edges", () => {
  it("reads rows in proportion to its window's tasks and their edges, not to task_edges", async () => {
    // A day of its own in this file's range (the window reads ids by time, whatever their queue).
    const t = clock.day(800);
    const q = uniqueQueue("prune-edges-reads");
    await store().putQueueConfig(q, { retention_s: 3600 }, t, PROCESSORS);
    // A few finished tasks with edges between them: a join of two, both pruned together.
    const [a, b] = [await completedTask(q, {}, t), await completedTask(q, {}, t)];
    const { tasks } = await store().enqueueTasks(q, [{ type: "join", dependsOn: [a, b] }], t + 5);
    await store().cancelTask(tasks[0]!.id, t + 6);
    // Thousands of edges of other tasks: a delete that scanned task_edges (the window's edges written inside
    // its IN as a UNION ALL) read every one of them.
    const UNRELATED = 5_000;
    await besideUnrelatedEdges(db(), { prefix: `~${q}-`, n: UNRELATED }, async () => {
      const meter = meteredD1(env.DB);
      const now = t + 2 * HOUR_MS;
      // The window: ids of this day only (below its first hour's end), so it holds these three tasks.
      const step = await pruneWindow(openDb(meter.db), now, {
        after: idLowerBound(t),
        below: idLowerBound(t + HOUR_MS),
      });
      expect(step.pruned).toBe(3);
      expect(await exists(a)).toBe(false);
      expect(await edgesOf(a)).toBe(0);
      console.log(`a prune window of 3 tasks beside ${UNRELATED} unrelated edges: ${meter.usage.rowsRead} rows read`);
      // The scan of task_edges read every edge (5,058 in all, measured).
      expect(meter.usage.rowsRead).toBeLessThan(200);
    });
  });

  async function edgesOf(id: string): Promise<number> {
    const row = await db().get<{ n: number }>(
      sql`SELECT count(*) AS n FROM task_edges WHERE dependency = ${id} OR dependent = ${id}`,
    );
    return row!.n;
  }
});
