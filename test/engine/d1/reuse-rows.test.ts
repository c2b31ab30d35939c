import { env } from "cloudflare:workers";
import { sql } from "drizzle-orm";
import { monotonicFactory } from "ulid";
import { applyD1Migrations } from "cloudflare:test";
import { beforeAll, beforeEach, describe, expect, it } from "vitest";
import { openDb } from "../../../src/db/client";
import { d1TaskStore } from "../../../src/engine/d1-store";
import { hybridTaskStore } from "../../../src/engine/hybrid/hybrid-store";
import type { TaskStore } from "../../../src/engine/store";
import { idLowerBoundSql, REUSE_WALK } from "../../../src/engine/reuse-rows";
import { idLowerBound, PRUNE_CURSOR } from "../../../src/engine/purge";
import { DEFAULT_QUEUE_CONFIG } from "../../../src/engine/queue-config";
import { meteredD1 } from "../../support/metered-d1";
import { PROCESSORS, uniqueQueue } from "../../helpers";

// An enqueue of one plain task takes a row past its retention instead of inserting one
// (src/engine/reuse-rows.ts): the same task as an insert makes, 2 rows written, and the prune's delete of the
// old row never comes. These hold it to that, and to leaving every row something still needs. A database of
// its own (REUSE_DB): the reuse walks the 16 rows past the retention prune's cursor whatever their queue, so
// another file's rows there (or its prune moving the cursor) would take the places this file's rows need.
// Each test starts a day past the last one's times, with the prune's cursor just below its own rows (as a
// prune leaves it in a database where nothing else is past retention).

const RETENTION_MS = DEFAULT_QUEUE_CONFIG.retention_s * 1000;
const DAY_MS = 86_400_000;
const db = () => openDb(env.REUSE_DB);
/** Each test's start, and a time past the default retention of a task finished at about then. */
let T0 = Date.parse("2026-01-01T00:00:00.000Z");
let LATER = 0;
beforeAll(async () => {
  await applyD1Migrations(env.REUSE_DB, env.TEST_MIGRATIONS);
});
beforeEach(async () => {
  T0 = (LATER || T0) + DAY_MS;
  LATER = T0 + RETENTION_MS + 3_600_000;
  await db().run(sql`INSERT INTO sweep_cursors (name, position) VALUES (${PRUNE_CURSOR}, ${idLowerBound(T0 - 1)})
    ON CONFLICT (name) DO UPDATE SET position = excluded.position`);
});

function measured(): { store: TaskStore; written: () => number; reset: () => void } {
  const meter = meteredD1(env.REUSE_DB);
  return { store: d1TaskStore(openDb(meter.db)), written: () => meter.usage.rowsWritten, reset: () => meter.reset() };
}

/** Enqueues, leases and completes `n` tasks on `queue` at T0, then folds their counter events (the tick's). */
async function finishedAtT0(store: TaskStore, queue: string, n: number): Promise<string[]> {
  const { tasks } = await store.enqueueTasks(
    queue,
    Array.from({ length: n }, (_, i) => ({ payload: { old: i } })),
    T0,
  );
  const leased = await store.leaseTasks({ queue, max: n, visibilityTimeoutS: 30, holder: "w" }, T0 + 1);
  const done = await store.completeTasks(
    leased.map((t) => ({ id: t.id, leaseToken: t.leaseToken!, result: { done: true } })),
    T0 + 2,
  );
  expect(done.every((o) => o.ok)).toBe(true);
  for (let i = 0; i < 20; i++) if (!(await store.foldCountersInRows(T0 + 120_000)).more) break;
  return tasks.map((t) => t.id);
}

/** A leased task's payload as its worker reads it (the store hands out the stored JSON text). */
function payloadOf(payload: unknown): unknown {
  return typeof payload === "string" ? JSON.parse(payload) : payload;
}

/** Every column of a task's row, by name, but its id. */
async function columnsOf(id: string): Promise<Record<string, unknown>> {
  const row = await db().get<Record<string, unknown>>(sql`SELECT * FROM tasks WHERE id = ${id}`);
  expect(row).toBeDefined();
  return Object.fromEntries(Object.entries(row!).filter(([name]) => name !== "id"));
}

describe("an enqueue of one task reuses a row past its retention", () => {
  it("makes the very row an insert makes, in every column, writing 2 rows; the old task is gone", async () => {
    const { store, written, reset } = measured();
    const queue = uniqueQueue("reuse");
    const [old] = await finishedAtT0(store, queue, 1);
    const task = { payload: { new: "x" }, priority: 3, group: "g", type: "kind", maxAttempts: 7 };
    // A client's id is never given a reused row: this one is inserted, the twin of the next.
    const inserted = await store.enqueueTasks(queue, [{ ...task, id: monotonicFactory()(LATER) }], LATER);
    reset();
    const reused = await store.enqueueTasks(queue, [task], LATER);
    const id = reused.tasks[0]!.id;
    expect(reused.tasks[0]).toMatchObject({ state: "pending", deduplicated: false });
    // The row and the live-index entry it enters again, as an insert writes.
    expect(written()).toBe(2);
    expect(await store.findTaskState(old!)).toBeNull();
    expect(await columnsOf(id)).toEqual(await columnsOf(inserted.tasks[0]!.id));
    // Nothing is left for the prune.
    expect((await store.pruneByRetention(LATER)).pruned).toBe(0);
    // And it is a task like any: leased, completed.
    const leased = await store.leaseTasks({ queue, max: 10, visibilityTimeoutS: 30, holder: "w" }, LATER + 1);
    expect(leased.map((t) => t.id).sort()).toEqual([id, inserted.tasks[0]!.id].sort());
    expect(payloadOf(leased.find((t) => t.id === id)!.payload)).toEqual({ new: "x" });
  });

  it("without a row past its retention it inserts, as before: a task within retention, a live one, an unfolded one", async () => {
    const { store, written, reset } = measured();
    const queue = uniqueQueue("reuse-none");
    const [kept] = await finishedAtT0(store, queue, 1);
    const live = (await store.enqueueTasks(queue, [{ payload: 1, runAt: LATER + RETENTION_MS }], T0)).tasks[0]!.id;
    // Finished a day ago: within the 7 days kept.
    reset();
    const fresh = await store.enqueueTasks(queue, [{ payload: 2 }], T0 + DAY_MS);
    expect(written()).toBe(2);
    expect(await store.findTaskState(kept!)).toBe("completed");
    expect(await store.findTaskState(live)).toBe("pending");
    expect(await store.findTaskState(fresh.tasks[0]!.id)).toBe("pending");
  });

  it("leaves a task another still names: a dependency with its dependents' edges, a dependent, a dead task of a queue keeping none", async () => {
    const { store } = measured();
    const queue = uniqueQueue("reuse-keep");
    const [dependency] = await finishedAtT0(store, queue, 1);
    // A dependent of a finished task (its edge names the dependency), finished too.
    const dependent = (await store.enqueueTasks(queue, [{ payload: "d", dependsOn: [dependency!] }], T0 + 3)).tasks[0]!
      .id;
    const [held] = await store.leaseTasks({ queue, max: 1, visibilityTimeoutS: 30, holder: "w" }, T0 + 4);
    expect(held!.id).toBe(dependent);
    await store.completeTasks([{ id: dependent, leaseToken: held!.leaseToken! }], T0 + 5);
    for (let i = 0; i < 20; i++) if (!(await store.foldCountersInRows(T0 + 120_000)).more) break;
    // A queue keeping no completed task keeps its dead ones for the default retention.
    const r0 = uniqueQueue("reuse-r0");
    await store.putQueueConfig(r0, { retention_s: 0, max_attempts: 1 }, T0, PROCESSORS);
    const dead = (await store.enqueueTasks(r0, [{ payload: "x" }], T0 + 6)).tasks[0]!.id;
    const [lease] = await store.leaseTasks({ queue: r0, max: 1, visibilityTimeoutS: 30, holder: "w" }, T0 + 7);
    await store.failTasks([{ id: dead, leaseToken: lease!.leaseToken!, message: "no" }], T0 + 8);
    for (let i = 0; i < 20; i++) if (!(await store.foldCountersInRows(T0 + 180_000)).more) break;
    expect(await store.findTaskState(dead)).toBe("dead");

    // Two days on, the queue keeping no completed task still keeps its dead one.
    await store.enqueueTasks(r0, [{ payload: "new" }], T0 + 2 * DAY_MS);
    expect(await store.findTaskState(dead)).toBe("dead");

    // Past the retention of all three: the dependency and the dependent are not taken (the prune deletes them,
    // and their edge with them); the dead task is, by the other queue's enqueue (a row of any queue).
    const { store: metered, written, reset } = measured();
    reset();
    const [made] = (await metered.enqueueTasks(queue, [{ payload: "new" }], LATER)).tasks;
    expect(written()).toBe(2);
    expect(await store.findTaskState(dependency!)).toBe("completed");
    expect(await store.findTaskState(dependent)).toBe("completed");
    expect(await store.findTaskState(dead)).toBeNull();
    expect(await columnsOf(made!.id)).toMatchObject({ queue, state: "pending", payload: '"new"' });
  });

  it("takes another queue's row past that queue's retention (a new queue beside old ones), never one its own queue still keeps", async () => {
    const { store, written, reset } = measured();
    // A queue keeping its tasks 30 days, and one keeping them the default 7, both finished at T0.
    const long = uniqueQueue("reuse-long");
    await store.putQueueConfig(long, { retention_s: 30 * 86_400 }, T0, PROCESSORS);
    const [keptLong] = await finishedAtT0(store, long, 1);
    const [old] = await finishedAtT0(store, uniqueQueue("reuse-old"), 1);
    // A new queue's first enqueue, past the default retention of those: it takes the row of the second, now a
    // task of its own in every column; the first is 30 days' and stays.
    const fresh = uniqueQueue("reuse-fresh");
    reset();
    const [made] = (await store.enqueueTasks(fresh, [{ payload: { n: 1 }, type: "kind" }], LATER)).tasks;
    expect(written()).toBe(2);
    expect(await store.findTaskState(old!)).toBeNull();
    expect(await store.findTaskState(keptLong!)).toBe("completed");
    const id = monotonicFactory()(LATER);
    const twin = (await store.enqueueTasks(fresh, [{ payload: { n: 1 }, type: "kind", id }], LATER)).tasks[0]!;
    expect(await columnsOf(made!.id)).toEqual(await columnsOf(twin.id));
  });

  it("rows the prune keeps at the bottom of the table (live tasks delayed a month) do not stop it: its walk begins a day below the retention's start", async () => {
    const { store, written, reset } = measured();
    const queue = uniqueQueue("reuse-bottom");
    // More than a walk's worth of live tasks, created long before, due long after.
    await store.enqueueTasks(
      queue,
      Array.from({ length: REUSE_WALK + 4 }, (_, i) => ({ payload: { delayed: i }, runAt: LATER + 30 * DAY_MS })),
      T0 - 30 * DAY_MS,
    );
    const [old] = await finishedAtT0(store, queue, 1);
    // The prune's cursor at the bottom, as a whole walk of the rows below its cutoff leaves it.
    await db().run(sql`UPDATE sweep_cursors SET position = '' WHERE name = ${PRUNE_CURSOR}`);
    reset();
    await store.enqueueTasks(queue, [{ payload: "new" }], LATER);
    expect(written()).toBe(2);
    expect(await store.findTaskState(old!)).toBeNull();
  });

  it("a new task whose dedupe key a live task holds reuses nothing: answered with the holder, the old row kept", async () => {
    const { store } = measured();
    const queue = uniqueQueue("reuse-dedupe");
    const [old] = await finishedAtT0(store, queue, 1);
    const holder = (await store.enqueueTasks(queue, [{ payload: 1, dedupeKey: "k" }], LATER)).tasks[0]!;
    expect(await store.findTaskState(old!)).toBeNull(); // the holder took it
    const [again] = await finishedAtT0(store, uniqueQueue("reuse-dedupe-2"), 1);
    const repeat = await store.enqueueTasks(queue, [{ payload: 2, dedupeKey: "k" }], LATER + 1);
    expect(repeat.tasks[0]).toMatchObject({ id: holder.id, deduplicated: true });
    expect(await store.findTaskState(again!)).toBe("completed");
  });

  it("the store as served (rows and packs) reuses for a call of one, and a call of two goes into a pack as before", async () => {
    const { store } = measured();
    const queue = uniqueQueue("reuse-served");
    const old = await finishedAtT0(store, queue, 2);
    const meter = meteredD1(env.REUSE_DB);
    const served = hybridTaskStore(openDb(meter.db));
    const one = await served.enqueueTasks(queue, [{ payload: "one" }], LATER);
    expect(meter.usage.rowsWritten).toBe(2);
    expect(await store.findTaskState(old[0]!)).toBeNull();
    expect(await store.findTaskState(old[1]!)).toBe("completed");
    const two = await served.enqueueTasks(queue, [{ payload: "a" }, { payload: "b" }], LATER);
    // A pack's tasks are no rows of `tasks`: the second old row is still there for the prune.
    expect(await store.findTaskState(old[1]!)).toBe("completed");
    const ids = [one, two].flatMap((r) => r.tasks.map((t) => t.id));
    const leased = await served.leaseTasks({ queue, max: 10, visibilityTimeoutS: 30, holder: "w" }, LATER + 1);
    expect(leased.map((t) => t.id).sort()).toEqual([...ids].sort());
  });

  it("concurrent enqueues take each reusable row once: 3 × REUSE_WALK tasks over REUSE_WALK rows, none lost or doubled", async () => {
    const { store } = measured();
    const queue = uniqueQueue("reuse-race");
    const old = await finishedAtT0(store, queue, REUSE_WALK);
    const n = 3 * REUSE_WALK;
    const made = await Promise.all(
      Array.from({ length: n }, (_, i) => store.enqueueTasks(queue, [{ payload: { i } }], LATER)),
    );
    const ids = made.map((m) => m.tasks[0]!.id);
    expect(new Set(ids).size).toBe(n);
    for (const id of old) expect(await store.findTaskState(id)).toBeNull();
    const leased = await store.leaseTasks({ queue, max: 100, visibilityTimeoutS: 30, holder: "w" }, LATER + 1);
    expect(leased.map((t) => t.id).sort()).toEqual([...ids].sort());
    expect(leased.map((t) => (payloadOf(t.payload) as { i: number }).i).sort((a, b) => a - b)).toEqual(
      Array.from({ length: n }, (_, i) => i),
    );
  });
});

describe("reuse beside the prune, leases and acks", () => {
  it("enqueues racing the prune and a worker: each old row goes once (pruned or reused), each new task is leased once and completes", async () => {
    const { store } = measured();
    const queue = uniqueQueue("reuse-mix");
    // Fewer old rows than a walk reads: the walks after them reach the new tasks, which no reuse may take.
    const old = await finishedAtT0(store, queue, REUSE_WALK / 2);
    const n = 2 * REUSE_WALK;
    // A worker leasing and completing while the enqueues and a prune run.
    const done = new Set<string>();
    let leases = 0;
    const worker = (async () => {
      while (done.size < n && leases < 2_000) {
        leases++;
        const held = await store.leaseTasks({ queue, max: 4, visibilityTimeoutS: 30, holder: "w" }, LATER + 1);
        const acked = await store.completeTasks(
          held.map((t) => ({ id: t.id, leaseToken: t.leaseToken! })),
          LATER + 2,
        );
        expect(acked.every((a) => a.ok && a.state === "completed")).toBe(true);
        for (const t of held) {
          expect(done.has(t.id)).toBe(false);
          done.add(t.id);
        }
        await Promise.resolve();
      }
    })();
    const [made, pruned] = await Promise.all([
      Promise.all(Array.from({ length: n }, (_, i) => store.enqueueTasks(queue, [{ payload: { i } }], LATER))),
      store.pruneByRetention(LATER),
    ]);
    await worker;
    const ids = made.map((m) => m.tasks[0]!.id);
    expect([...done].sort()).toEqual([...ids].sort());
    for (const id of old) expect(await store.findTaskState(id)).toBeNull();
    // Every old row went one way: the prune deleted some, the enqueues took the rest (a new id each).
    const rows = await db().get<{ n: number }>(sql`SELECT count(*) AS n FROM tasks WHERE queue = ${queue}`);
    expect(rows!.n).toBe(n);
    expect(pruned.pruned).toBeLessThanOrEqual(old.length);
    for (const id of ids) expect(await store.findTaskState(id)).toBe("completed");
  });
});

describe("idLowerBoundSql", () => {
  it("makes in SQL the id purge.ts's idLowerBound makes in JavaScript, at every bit of the 48", async () => {
    const times = [0, 1, 31, 32, 1_000, Date.parse("2026-11-28T06:00:00Z"), 2 ** 40 + 12_345, 2 ** 48 - 1];
    for (let bit = 0; bit < 48; bit += 5) times.push(2 ** bit, 2 ** bit - 1);
    for (const ms of times) {
      const row = await db().get<{ id: string }>(sql`SELECT ${idLowerBoundSql(sql`${ms}`)} AS id`);
      expect(row!.id, `at ${ms}`).toBe(idLowerBound(ms));
    }
    // A time before the epoch is the epoch's, as idLowerBound's.
    const before = await db().get<{ id: string }>(sql`SELECT ${idLowerBoundSql(sql`${-5}`)} AS id`);
    expect(before!.id).toBe(idLowerBound(-5));
  });
});
