import { env } from "cloudflare:workers";
import { sql } from "drizzle-orm";
import { encodeTime, monotonicFactory } from "ulid";
import { applyD1Migrations } from "cloudflare:test";
import { beforeAll, beforeEach, describe, expect, it } from "vitest";
import { openDb } from "../../../src/db/client";
import { d1TaskStore } from "../../../src/engine/d1-store";
import type { TaskStore } from "../../../src/engine/store";
import { PRUNE_CURSOR } from "../../../src/engine/purge";
import { TOMBSTONE_KEEP_MS, TOMBSTONE_MARK, tombstoneIdOf } from "../../../src/engine/tombstone-mark";
import { COUNTER_FOLD_CURSOR, MAX_FOLD_TASKS } from "../../../src/engine/counters-in-row";
import { meteredD1 } from "../../support/metered-d1";
import { PROCESSORS, uniqueQueue } from "../../helpers";

// A completion on a queue of `retention_s: 0` makes its task's row a tombstone (src/engine/complete-tombstone.ts):
// one row written, the task gone for every client at once, its counter events folded under its queue, the row
// reused by a later enqueue of one (src/engine/reuse-rows.ts) or pruned after TOMBSTONE_KEEP_MS. A database of
// its own (TOMBSTONE_DB): the reuse walks the rows below the counter fold's cursor whatever their queue, and
// the prune walks every row. Each test starts on an empty table a day past the last one, with the fold's cursor
// just below it.

const DAY_MS = 86_400_000;
const MINUTE_MS = 60_000;
const db = () => openDb(env.TOMBSTONE_DB);
/** Each test's start: the fold's cursor is placed 30 s below it (the fold's grace), its tasks come after. */
let T = Date.parse("2026-02-01T00:00:00.000Z");

function measured(): { store: TaskStore; written: () => number; reset: () => void } {
  const meter = meteredD1(env.TOMBSTONE_DB);
  return { store: d1TaskStore(openDb(meter.db)), written: () => meter.usage.rowsWritten, reset: () => meter.reset() };
}
const store = d1TaskStore(db());

/** The cron tick's counter fold, at `now`, as far as it goes. */
async function fold(now: number): Promise<void> {
  for (let i = 0; i < 20; i++) if (!(await store.foldCountersInRows(now)).more) return;
}

/** The cron tick's retention prune at `now`, from the bottom of the table, until a round deletes nothing. */
async function prune(now: number): Promise<number> {
  await db().run(sql`DELETE FROM sweep_cursors WHERE name = ${PRUNE_CURSOR}`);
  let pruned = 0;
  for (let i = 0; i < 20; i++) {
    const step = await store.pruneByRetention(now);
    pruned += step.pruned;
    if (step.pruned === 0) break;
  }
  return pruned;
}

beforeAll(async () => {
  await applyD1Migrations(env.TOMBSTONE_DB, env.TEST_MIGRATIONS);
});
beforeEach(async () => {
  T += DAY_MS;
  // The last test's tombstones would be this one's to reuse or prune.
  await db().run(sql`DELETE FROM tasks`);
  await fold(T);
});

async function keepingNothing(prefix: string): Promise<string> {
  const queue = uniqueQueue(prefix);
  await store.putQueueConfig(queue, { retention_s: 0 }, T, PROCESSORS);
  return queue;
}

/** Enqueues `n` tasks at `at` on `queue`, one call, and leases them. */
async function leased(s: TaskStore, queue: string, n: number, at: number) {
  const { tasks } = await s.enqueueTasks(
    queue,
    Array.from({ length: n }, (_, i) => ({ payload: { secret: i }, group: "g", dedupeKey: `k${i}` })),
    at,
  );
  const held = await s.leaseTasks({ queue, max: n, visibilityTimeoutS: 30, holder: "w" }, at + 1);
  expect(held.map((t) => t.id).sort()).toEqual(tasks.map((t) => t.id).sort());
  return held.map((t) => ({ id: t.id, leaseToken: t.leaseToken! }));
}

async function rowOf(id: string): Promise<Record<string, unknown> | undefined> {
  return db().get<Record<string, unknown>>(sql`SELECT * FROM tasks WHERE id = ${id}`);
}

async function rowCount(): Promise<number> {
  return (await db().get<{ n: number }>(sql`SELECT count(*) AS n FROM tasks`))!.n;
}

/** The counters of `queue`'s default type, folded or not (what the metrics and stats read). */
async function countsOf(queue: string): Promise<Record<string, number>> {
  const rows = await store.sumCounters({ queue });
  return (rows.find((r) => r.type === "default") ?? {}) as Record<string, number>;
}

describe("a completion that keeps nothing makes a tombstone", () => {
  it("writes one row a task: its own, moved out of every client's reach with nothing it carried", async () => {
    const { store: metered, written, reset } = measured();
    const queue = await keepingNothing("tomb-one");
    const at = T + MINUTE_MS;
    for (const n of [1, 3]) {
      const held = await leased(metered, queue, n, at);
      reset();
      const done = await metered.completeTasks(
        held.map((h) => ({ ...h, result: { answer: 42 } })),
        at + 500,
      );
      expect(done.map((o) => o.ok && o.state)).toEqual(held.map(() => "completed"));
      expect(done.map((o) => o.ok && o.queue)).toEqual(held.map(() => queue));
      // No counter row: the completion's event joins the row's own (the delete it replaces wrote 2 a task).
      expect(written()).toBe(n);
      for (const { id } of held) {
        expect(await rowOf(id)).toBeUndefined();
        await expect(store.getTask(id)).rejects.toMatchObject({ code: "not_found" });
        const tombstone = await rowOf(tombstoneIdOf(id));
        expect(tombstone).toMatchObject({
          queue: `~${queue}`,
          state: "completed",
          payload: "null",
          result: null,
          group_key: null,
          dedupe_key: null,
          lease_token: null,
          finished_at: at + 500,
        });
        // The lease's slot for a lapsed lease taken over is null here (the fold reads arrays only).
        const events = (JSON.parse(tombstone!.uncounted as string) as unknown[]).filter(Array.isArray).map((e) => e[0]);
        expect(events).toEqual(["enqueued", "leased", "completed"]);
      }
    }
    // In no list, count or stats of its queue, nor a queue of its own.
    expect((await store.listTasks(queue, { limit: 50 })).tasks).toEqual([]);
    expect((await store.queueStats(queue, {}, at + 1_000)).counts.completed).toBe(0);
    const listed = (await store.listQueues()).map((q) => q.queue);
    expect(listed).toContain(queue);
    expect(listed.filter((q) => q.startsWith("~"))).toEqual([]);
    // Counted under its queue at once, and the same once the fold added the events up.
    const counted = { enqueued: 4, leased: 4, completed: 4, run_count: 4 };
    expect(await countsOf(queue)).toMatchObject(counted);
    await fold(at + 5 * MINUTE_MS);
    expect(await countsOf(queue)).toMatchObject(counted);
    const strays = await db().get<{ n: number }>(sql`SELECT count(*) AS n FROM task_counters WHERE queue LIKE '~%'`);
    expect(strays!.n).toBe(0);
  });

  it("frees its id at once: a client's enqueue of the same id makes a new task", async () => {
    const queue = await keepingNothing("tomb-id");
    const id = monotonicFactory()(T + MINUTE_MS);
    await store.enqueueTasks(queue, [{ id }], T + MINUTE_MS);
    const [held] = await store.leaseTasks({ queue, max: 1, visibilityTimeoutS: 30, holder: "w" }, T + MINUTE_MS);
    expect(held!.id).toBe(id);
    expect((await store.completeTasks([{ id, leaseToken: held!.leaseToken! }], T + MINUTE_MS + 1))[0]!.ok).toBe(true);
    const again = await store.enqueueTasks(queue, [{ id, payload: "again" }], T + MINUTE_MS + 2);
    expect(again.tasks[0]).toMatchObject({ id, state: "pending", deduplicated: false });
    expect(await store.findTaskState(id)).toBe("pending");
  });

  it("frees the flow slot its keyed task held: the answer says so, and the key's next task is leased", async () => {
    const queue = uniqueQueue("tomb-flow");
    await store.putQueueConfig(queue, { retention_s: 0, flow: { default: { concurrency: 1 } } }, T, PROCESSORS);
    const at = T + MINUTE_MS;
    await store.enqueueTasks(queue, [{ key: "tenant" }, { key: "tenant" }], at);
    const first = await store.leaseTasks({ queue, max: 2, visibilityTimeoutS: 30, holder: "w" }, at + 1);
    expect(first).toHaveLength(1);
    const [done] = await store.completeTasks([{ id: first[0]!.id, leaseToken: first[0]!.leaseToken! }], at + 2);
    expect(done).toMatchObject({ ok: true, state: "completed", frees_flow_slot: true });
    expect(await rowOf(tombstoneIdOf(first[0]!.id))).toBeDefined();
    expect(await store.leaseTasks({ queue, max: 2, visibilityTimeoutS: 30, holder: "w" }, at + 3)).toHaveLength(1);
  });
});

describe("a tombstone is reused or pruned", () => {
  it("an enqueue of one, of any queue, takes it once folded: the row an insert makes, 2 rows written, no row more", async () => {
    const { store: metered, written, reset } = measured();
    const zero = await keepingNothing("tomb-reuse");
    const other = uniqueQueue("tomb-taker");
    const at = T + MINUTE_MS;
    const [held] = await leased(store, zero, 1, at);
    await store.completeTasks([held!], at + 2);
    const tombstone = tombstoneIdOf(held!.id);
    // Not folded yet: its events are still in it, so an enqueue inserts.
    const before = await rowCount();
    await store.enqueueTasks(other, [{ payload: "early" }], at + 3);
    expect(await rowCount()).toBe(before + 1);
    expect(await rowOf(tombstone)).toBeDefined();

    await fold(at + 5 * MINUTE_MS);
    const later = at + 5 * MINUTE_MS;
    const task = { payload: { fresh: true }, priority: 2, group: "g2", type: "kind", maxAttempts: 4 };
    // A client's id is never given a reused row: this one is inserted, the twin of the next.
    const twin = await store.enqueueTasks(other, [{ ...task, id: monotonicFactory()(later) }], later);
    const rows = await rowCount();
    reset();
    const reused = await metered.enqueueTasks(other, [task], later);
    expect(reused.tasks[0]).toMatchObject({ state: "pending", deduplicated: false });
    expect(written()).toBe(2);
    expect(await rowCount()).toBe(rows);
    expect(await rowOf(tombstone)).toBeUndefined();
    const butId = (row: Record<string, unknown> | undefined) =>
      Object.fromEntries(Object.entries(row!).filter(([name]) => name !== "id"));
    expect(butId(await rowOf(reused.tasks[0]!.id))).toEqual(butId(await rowOf(twin.tasks[0]!.id)));
    // The tombstone's counts stayed its queue's; the new task is counted as any.
    expect(await countsOf(zero)).toMatchObject({ enqueued: 1, completed: 1 });
    const kind = (await store.sumCounters({ queue: other })).find((r) => r.type === "kind");
    expect(kind).toMatchObject({ enqueued: 2 });
  });

  it("is found among many other queues' rows: tombstones lie above every task, the oldest taken first", async () => {
    const zero = await keepingNothing("tomb-mixed");
    const busy = uniqueQueue("tomb-busy");
    const at = T + MINUTE_MS;
    const made: string[] = [];
    // Each tombstone's task between 40 tasks of a queue that keeps its own (finished and live).
    for (let k = 0; k < 3; k++) {
      const { tasks } = await store.enqueueTasks(
        busy,
        Array.from({ length: 40 }, () => ({})),
        at + k * 10,
      );
      const kept = await store.leaseTasks({ queue: busy, max: 20, visibilityTimeoutS: 30, holder: "w" }, at + k * 10);
      await store.completeTasks(
        kept.map((t) => ({ id: t.id, leaseToken: t.leaseToken! })),
        at + k * 10 + 1,
      );
      expect(tasks).toHaveLength(40);
      const [held] = await leased(store, zero, 1, at + k * 10 + 2);
      await store.completeTasks([held!], at + k * 10 + 3);
      made.push(tombstoneIdOf(held!.id));
    }
    await fold(at + 5 * MINUTE_MS);
    const { store: metered, written, reset } = measured();
    for (const [k, tombstone] of made.entries()) {
      reset();
      await metered.enqueueTasks(busy, [{ payload: k }], at + 5 * MINUTE_MS);
      expect(written()).toBe(2);
      expect(await rowOf(tombstone)).toBeUndefined();
      for (const later of made.slice(k + 1)) expect(await rowOf(later)).toBeDefined();
    }
    // None left: the next one inserts.
    const rows = await rowCount();
    await store.enqueueTasks(busy, [{ payload: "last" }], at + 5 * MINUTE_MS);
    expect(await rowCount()).toBe(rows + 1);
  });

  it("the prune leaves it TOMBSTONE_KEEP_MS for a reuse, then deletes it", async () => {
    const queue = await keepingNothing("tomb-prune");
    const at = T + MINUTE_MS;
    const [held] = await leased(store, queue, 1, at);
    await store.completeTasks([held!], at + 2);
    const tombstone = tombstoneIdOf(held!.id);
    await fold(at + 5 * MINUTE_MS);
    expect(await prune(at + 2 + TOMBSTONE_KEEP_MS - 1_000)).toBe(0);
    expect(await rowOf(tombstone)).toBeDefined();
    expect(await prune(at + 2 + TOMBSTONE_KEEP_MS + 1_000)).toBe(1);
    expect(await rowOf(tombstone)).toBeUndefined();
  });

  it("of a dependent is never reused, and goes with its waits on other databases after TOMBSTONE_KEEP_MS", async () => {
    const queue = await keepingNothing("tomb-dependent");
    const at = T + MINUTE_MS;
    const { tasks } = await store.enqueueTasks(queue, [{ type: "first" }], at);
    const first = tasks[0]!.id;
    const { tasks: joined } = await store.enqueueTasks(queue, [{ type: "then", dependsOn: [first] }], at);
    const dependent = joined[0]!.id;
    const [a] = await store.leaseTasks({ queue, max: 1, visibilityTimeoutS: 30, holder: "w" }, at + 1);
    expect(a!.id).toBe(first);
    await store.completeTasks([{ id: first, leaseToken: a!.leaseToken! }], at + 2);
    const [b] = await store.leaseTasks({ queue, max: 1, visibilityTimeoutS: 30, holder: "w" }, at + 3);
    expect(b!.id).toBe(dependent);
    await store.completeTasks([{ id: dependent, leaseToken: b!.leaseToken! }], at + 4);
    const tombstone = tombstoneIdOf(dependent);
    expect(await rowOf(tombstone)).toMatchObject({ depends_on: JSON.stringify([first]) });
    // A wait it had on a task of another database, settled, as src/engine/remote-dependencies.ts keeps it.
    const elsewhere = monotonicFactory()(at);
    await db().run(sql`INSERT INTO remote_waits (dependent, dependency, outcome)
      VALUES (${dependent}, ${elsewhere}, 'completed')`);
    const waits = async () =>
      (await db().get<{ n: number }>(sql`SELECT count(*) AS n FROM remote_waits WHERE dependent = ${dependent}`))!.n;

    await fold(at + 5 * MINUTE_MS);
    const rows = await rowCount();
    await store.enqueueTasks(uniqueQueue("tomb-taker"), [{}], at + 5 * MINUTE_MS);
    expect(await rowCount()).toBe(rows + 1);
    expect(await rowOf(tombstone)).toBeDefined();
    await prune(at + 4 + TOMBSTONE_KEEP_MS - 1_000);
    expect(await rowOf(tombstone)).toBeDefined();
    expect(await waits()).toBe(1);
    await prune(at + 4 + TOMBSTONE_KEEP_MS + 1_000);
    expect(await rowOf(tombstone)).toBeUndefined();
    expect(await waits()).toBe(0);
  });

  it("is not made of a task something still needs: a `then` parent keeps its id until the prune", async () => {
    const queue = await keepingNothing("tomb-then");
    const at = T + MINUTE_MS;
    await store.enqueueTasks(queue, [{ type: "parent", then: [{ type: "child" }] }], at);
    const [parent] = await store.leaseTasks({ queue, max: 1, visibilityTimeoutS: 30, holder: "w" }, at + 1);
    await store.completeTasks([{ id: parent!.id, leaseToken: parent!.leaseToken! }], at + 2);
    expect(await store.findTaskState(parent!.id)).toBe("completed");
    expect(await rowOf(tombstoneIdOf(parent!.id))).toBeUndefined();
  });
});

describe("the counter fold of tombstones", () => {
  it("folds MAX_FOLD_TASKS tombstones a round at most, each once, the cursor at the last one's task", async () => {
    const queue = uniqueQueue("tomb-fold");
    const at = T + MINUTE_MS;
    const minute = Math.floor(at / MINUTE_MS) * MINUTE_MS;
    const n = MAX_FOLD_TASKS + 50;
    const prefix = encodeTime(at, 10);
    // Tombstones of n tasks of one millisecond (their ids in order of k), each keeping its completion's event.
    await db().run(sql`WITH RECURSIVE k(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM k WHERE i < ${n - 1})
      INSERT INTO tasks (id, queue, state, max_attempts, run_at, created_at, updated_at, finished_at, uncounted)
      SELECT ${TOMBSTONE_MARK} || ${prefix} || printf('%016d', i), ${TOMBSTONE_MARK} || ${queue}, 'completed', 3,
        ${at}, ${at}, ${at}, ${at}, json_array(json_array('completed', ${minute}, 5))
      FROM k`);
    const first = await store.foldCountersInRows(at + 5 * MINUTE_MS);
    expect(first).toEqual({ tasks: MAX_FOLD_TASKS, more: true });
    const cursor = await db().get<{ position: string }>(
      sql`SELECT position FROM sweep_cursors WHERE name = ${COUNTER_FOLD_CURSOR}`,
    );
    expect(cursor!.position).toBe(`${prefix}${String(MAX_FOLD_TASKS - 1).padStart(16, "0")}`);
    expect(await countsOf(queue)).toMatchObject({ completed: n });
    await fold(at + 5 * MINUTE_MS);
    const folded = await db().get<{ completed: number }>(
      sql`SELECT sum(completed) AS completed FROM task_counters WHERE queue = ${queue}`,
    );
    expect(folded!.completed).toBe(n);
    expect(await countsOf(queue)).toMatchObject({ completed: n });
  });
});

describe("tombstones under concurrent producers and workers", () => {
  it("five minutes of single-task enqueues and completions: each task leased and completed once, counted once, the table not growing", async () => {
    const queue = await keepingNothing("tomb-busy-life");
    const perMinute = 24;
    const seen = new Map<string, number>();
    for (let minute = 0; minute < 5; minute++) {
      const at = T + (minute + 1) * MINUTE_MS;
      // 24 producers of one task each, at once; then 4 workers leasing one at a time until none is left.
      const made = await Promise.all(
        Array.from({ length: perMinute }, (_, i) => store.enqueueTasks(queue, [{ payload: { minute, i } }], at)),
      );
      expect(made.map((m) => m.tasks[0]!.deduplicated)).toEqual(made.map(() => false));
      const worker = async (w: number) => {
        for (;;) {
          const [task] = await store.leaseTasks({ queue, max: 1, visibilityTimeoutS: 30, holder: `w${w}` }, at + 1);
          if (task === undefined) return;
          seen.set(task.id, (seen.get(task.id) ?? 0) + 1);
          const [done] = await store.completeTasks([{ id: task.id, leaseToken: task.leaseToken! }], at + 2);
          expect(done).toMatchObject({ ok: true, state: "completed" });
        }
      };
      await Promise.all([0, 1, 2, 3].map(worker));
      // The tick of that minute: the fold passes this minute's tasks, so the next minute reuses their rows.
      await fold(at + MINUTE_MS);
      // Every row is a tombstone now, and there are as many as one minute's tasks: none was inserted past them.
      const rows = await db().get<{ n: number; tombstones: number }>(
        sql`SELECT count(*) AS n, sum(substr(id, 1, 1) = ${TOMBSTONE_MARK}) AS tombstones FROM tasks`,
      );
      expect(rows).toEqual({ n: perMinute, tombstones: perMinute });
    }
    expect(seen.size).toBe(5 * perMinute);
    expect([...seen.values()].every((n) => n === 1)).toBe(true);
    expect(await countsOf(queue)).toMatchObject({
      enqueued: 5 * perMinute,
      leased: 5 * perMinute,
      completed: 5 * perMinute,
    });
  });
});
