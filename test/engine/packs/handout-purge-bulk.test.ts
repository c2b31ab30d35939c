import { env } from "cloudflare:workers";
import { sql } from "drizzle-orm";
import { ulid } from "ulid";
import { describe, expect, it } from "vitest";
import { openDb } from "../../../src/db/client";
import { sumCounters } from "../../../src/engine/counters";
import { d1TaskStore } from "../../../src/engine/d1-store";
import { BULK_PACKS_PER_BATCH } from "../../../src/engine/packs/bulk";
import { packTaskStore } from "../../../src/engine/packs/pack-store";
import { SPILL_AT_BYTES } from "../../../src/engine/packs/spill";
import { PROCESSORS, T0, uniqueQueue } from "../../helpers";
import { meteredD1 } from "../../support/metered-d1";
import { recordingD1 } from "./recording-d1";

// The pack store's own mechanics of a long poll's hand-out writes (src/engine/packs/hand-out.ts), purge
// (purge.ts) and bulk actions (bulk.ts): rows written per pack, not per task; a purged slot found by no read
// and its side rows gone; a pack all purged deleted whole; retention with purged slots; bulk batches bounded.
// The port's properties are test/engine/provisional.test.ts's, purge.test.ts's and bulk.test.ts's, on both stores.

const DAY_MS = 86_400_000;
/** This file's time range (pack ids are time-ordered; purges look below `before`). */
const AT = T0 + 40 * DAY_MS;

const db = () => openDb(env.DB);
const store = () => packTaskStore(db());
const packOf = (taskId: string) => taskId.slice(0, 24);
const packExists = async (taskId: string) =>
  (await db().get(sql`SELECT 1 AS one FROM packs WHERE id = ${packOf(taskId)}`)) !== undefined;

/**
 * A D1 binding whose batches wait until `release()`: a write is held in flight after its reads, and
 * `reached` resolves when its first batch arrives — so a test can land another write in between, for sure.
 */
function heldBatches(d1: D1Database) {
  let release!: () => void;
  let arrived!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const reached = new Promise<void>((resolve) => (arrived = resolve));
  const db = new Proxy(d1, {
    get(target, p) {
      if (p === "batch") {
        return async (statements: D1PreparedStatement[]) => {
          arrived();
          await gate;
          return target.batch(statements);
        };
      }
      const value = target[p as keyof D1Database];
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return { db, reached, release };
}

/** A store over the suite's database whose rows written are counted per call of `rows`. */
function metered() {
  const meter = meteredD1(env.DB);
  const measured = packTaskStore(openDb(meter.db));
  const rows = async <T>(write: () => Promise<T>): Promise<[T, number]> => {
    meter.reset();
    const answer = await write();
    return [answer, meter.usage.rowsWritten];
  };
  return { store: measured, rows };
}

/** Enqueues `n` tasks in one call (one pack) at `now` and leases them all. */
async function leasedPack(queue: string, n: number, now = AT, provisional = false) {
  const { tasks } = await store().enqueueTasks(
    queue,
    Array.from({ length: n }, () => ({})),
    now,
  );
  const leased = await store().leaseTasks({ queue, max: n, visibilityTimeoutS: 60, holder: "w", provisional }, now);
  expect(leased).toHaveLength(n);
  return { ids: tasks.map((t) => t.id), leased: leased.map((t) => ({ id: t.id, leaseToken: t.leaseToken! })) };
}

describe("pack store: a long poll's hand-out writes", () => {
  it("return and end the claim window of 100 hand-outs of one pack writing 1 row each, counting nothing; the next lease takes all", async () => {
    const queue = uniqueQueue("handout-rows");
    const { leased } = await leasedPack(queue, 100, AT, true);
    const before = await sumCounters(db(), { queue });
    const { store: measured, rows } = metered();

    const [returned, returnRows] = await rows(() => measured.returnUndelivered(leased.slice(0, 50), AT + 1));
    expect(returned).toHaveLength(50);
    // The pack's row (the D1 store: 50, one per task).
    expect(returnRows).toBe(1);
    const [ended, endRows] = await rows(() => measured.endClaimWindows(leased.slice(50), AT + 2));
    expect(ended.map((e) => e.lease_token)).toEqual(leased.slice(50).map((l) => l.leaseToken));
    expect(endRows).toBe(1);
    expect(await sumCounters(db(), { queue })).toEqual(before);

    // Both halves are leasable now (the pack's next_at moved with the window ended): attempts refunded.
    const again = await store().leaseTasks({ queue, max: 100, visibilityTimeoutS: 30, holder: "w2" }, AT + 2);
    expect(again).toHaveLength(100);
    expect(new Set(again.map((t) => t.attempts))).toEqual(new Set([1]));
  });

  it("a claim that lands between a return's read and its write wins: the return is computed again and leaves it", async () => {
    const queue = uniqueQueue("handout-race");
    const { leased } = await leasedPack(queue, 2, AT, true);
    const held = heldBatches(env.DB);
    // The return reads both hand-outs, then waits at its batch while the holder claims the first.
    const returning = packTaskStore(openDb(held.db)).returnUndelivered(leased, AT + 1);
    await held.reached;
    const [claim] = await store().extendLeases([leased[0]!], AT + 1);
    expect(claim).toMatchObject({ ok: true });
    held.release();
    expect((await returning).map((t) => t.id)).toEqual([leased[1]!.id]);
    expect(await store().getTask(leased[0]!.id)).toMatchObject({ state: "processing", claimBy: null });
    expect(await store().findTaskState(leased[1]!.id)).toBe("pending");
  });

  it("answers a row task's id as not here, and leaves that task alone", async () => {
    const queue = uniqueQueue("handout-row-task");
    const rowStore = d1TaskStore(db());
    await rowStore.enqueueTasks(queue, [{}], AT);
    const [held] = await rowStore.leaseTasks(
      { queue, max: 1, visibilityTimeoutS: 60, holder: "poll", provisional: true },
      AT,
    );
    const item = { id: held!.id, leaseToken: held!.leaseToken! };
    expect(await store().returnUndelivered([item], AT + 1)).toEqual([]);
    expect(await store().endClaimWindows([item], AT + 1)).toEqual([]);
    expect(await rowStore.getTask(held!.id)).toMatchObject({ state: "processing", claimBy: held!.claimBy });
  });
});

describe("pack store: purge out of packs still holding live tasks", () => {
  it("purges 60 finished tasks of a pack of 100 writing 1 row; no read finds them; the live 40 go on; the last purge deletes the pack", async () => {
    const queue = uniqueQueue("purge-pack");
    const { leased } = await leasedPack(queue, 100);
    const [done, live] = [leased.slice(0, 60), leased.slice(60)];
    await store().completeTasks(done, AT + 1);
    const { store: measured, rows } = metered();

    const [first, firstRows] = await rows(() => measured.purgeTasks(queue, { before: AT + 2 }));
    expect(first).toEqual({ purged: 60 });
    // The pack's row (the D1 store: 60, one per task).
    expect(firstRows).toBe(1);
    await expect(store().getTask(done[0]!.id)).rejects.toMatchObject({ code: "not_found" });
    expect(await store().findTaskState(done[59]!.id)).toBeNull();
    const page = await store().listTasks(queue, { limit: 1000 });
    expect(page.tasks.map((t) => t.id).sort()).toEqual(live.map((l) => l.id).sort());
    const { counts } = await store().queueStats(queue, {}, AT + 2);
    expect(counts).toMatchObject({ completed: 0, processing: 40 });
    // A purged task takes no write: its holder's ack is not_found, an operator's retry too.
    const [late] = await store().completeTasks([done[0]!], AT + 2);
    expect(late).toMatchObject({ ok: false, error: { code: "not_found" } });
    await expect(store().retryTask(done[0]!.id, AT + 2)).rejects.toMatchObject({ code: "not_found" });

    const outcomes = await store().completeTasks(live, AT + 3);
    expect(outcomes.every((o) => o.ok)).toBe(true);
    const [second, secondRows] = await rows(() => measured.purgeTasks(queue, { before: AT + 4 }));
    expect(second).toEqual({ purged: 40 });
    expect(secondRows).toBe(1);
    expect(await packExists(live[0]!.id)).toBe(false);
    expect(await rows(() => measured.purgeTasks(queue, { before: AT + 5 }))).toEqual([{ purged: 0 }, 0]);
  });

  it("a retry that lands between a purge's read and its write wins: the purge is computed again and keeps it", async () => {
    const queue = uniqueQueue("purge-race");
    const { leased } = await leasedPack(queue, 2);
    await store().failTasks(
      leased.map((l) => ({ ...l, message: "broken", retryable: false })),
      AT + 1,
    );
    const held = heldBatches(env.DB);
    // The purge reads both dead tasks, then waits at its batch while an operator retries the first.
    const purging = packTaskStore(openDb(held.db)).purgeTasks(queue, { before: AT + 2 });
    await held.reached;
    expect(await store().retryTask(leased[0]!.id, AT + 2)).toMatchObject({ state: "pending" });
    held.release();
    expect(await purging).toEqual({ purged: 1 });
    expect(await store().findTaskState(leased[0]!.id)).toBe("pending");
    expect(await store().findTaskState(leased[1]!.id)).toBeNull();
  });

  it("deletes a purged task's dedupe-key, client-id and spill rows with it: its client id can be enqueued again", async () => {
    const queue = uniqueQueue("purge-side-rows");
    const own = ulid(AT);
    const { tasks } = await store().enqueueTasks(queue, [{ dedupeKey: "k" }, { id: own }, { payload: 1 }, {}], AT);
    const leased = await store().leaseTasks({ queue, max: 3, visibilityTimeoutS: 60, holder: "w" }, AT);
    const big = "x".repeat(SPILL_AT_BYTES + 1);
    await store().completeTasks(
      leased.map((t) => ({ id: t.id, leaseToken: t.leaseToken!, result: big })),
      AT + 1,
    );
    const pack = packOf(tasks[0]!.id);
    const side = async () => ({
      keys: (await db().all(sql`SELECT 1 FROM pack_keys WHERE queue = ${queue}`)).length,
      ids: (await db().all(sql`SELECT 1 FROM pack_ids WHERE queue = ${queue}`)).length,
      spill: (await db().all(sql`SELECT 1 FROM pack_spill WHERE task_id >= ${pack} AND task_id < ${pack + "~"}`))
        .length,
    });
    expect(await side()).toEqual({ keys: 1, ids: 1, spill: 3 });
    const { store: measured, rows } = metered();
    const [purged, written] = await rows(() => measured.purgeTasks(queue, { before: AT + 2 }));
    expect(purged).toEqual({ purged: 3 });
    expect(await side()).toEqual({ keys: 0, ids: 0, spill: 0 });
    // The pack, the key row, the client-id row and three spill rows.
    expect(written).toBe(6);
    // The pending fourth keeps the pack live.
    expect(await store().findTaskState(tasks[3]!.id)).toBe("pending");
    const [again] = (await store().enqueueTasks(queue, [{ id: own }], AT + 3)).tasks;
    expect(again).toMatchObject({ id: own, state: "pending", deduplicated: false });
  });

  it("retention prunes a pack of completed and purged slots on a retention_s 0 queue at once (a purged slot keeps nothing)", async () => {
    // Today's clock (the prune walks pack ids below its cutoff), on a queue keeping no completed task.
    const base = Date.now();
    const queue = uniqueQueue("purge-retention");
    await store().putQueueConfig(queue, { retention_s: 0 }, base, PROCESSORS);
    const { leased } = await leasedPack(queue, 3, base);
    await store().completeTasks(leased, base + 1);
    expect(await store().purgeTasks(queue, { before: base + 2, limit: 1 })).toEqual({ purged: 1 });
    expect(await packExists(leased[0]!.id)).toBe(true);
    for (let i = 0; i < 100 && (await packExists(leased[0]!.id)); i++) await store().pruneByRetention(base + 3);
    expect(await packExists(leased[0]!.id)).toBe(false);
  });
});

describe("pack store: bulk actions", () => {
  it("a cancel of 99 pending tasks of one pack writes 2 rows, their retry 1 (the D1 store: 100 and 198)", async () => {
    const queue = uniqueQueue("bulk-rows");
    await store().enqueueTasks(
      queue,
      Array.from({ length: 100 }, (_, i) => ({ group: i === 0 ? "kept" : "a" })),
      AT,
    );
    const { store: measured, rows } = metered();
    const [cancelled, cancelRows] = await rows(() => measured.applyBulk(queue, "cancel", { group: "a" }, 1000, AT + 1));
    expect(cancelled).toMatchObject({ count: 99, more: false });
    // The pack's row and one counter row.
    expect(cancelRows).toBe(2);
    const [retried, retryRows] = await rows(() => measured.applyBulk(queue, "retry", { group: "a" }, 1000, AT + 2));
    expect(retried).toMatchObject({ count: 99, more: false });
    expect(retryRows).toBe(1);
  });

  it("goes in guarded batches of at most BULK_PACKS_PER_BATCH packs, in id order, and says whether more remain", async () => {
    const queue = uniqueQueue("bulk-batches");
    // 150 packs of one task: distinct run times, one call.
    const { tasks } = await store().enqueueTasks(
      queue,
      Array.from({ length: 150 }, (_, i) => ({ runAt: AT - i })),
      AT,
    );
    expect(new Set(tasks.map((t) => packOf(t.id))).size).toBe(150);
    const ids = tasks.map((t) => t.id).sort();
    const { db: d1, calls } = recordingD1(env.DB);
    const recorded = packTaskStore(openDb(d1));

    const first = await recorded.applyBulk(queue, "cancel", {}, 120, AT + 1);
    expect(first).toEqual({ count: 120, ids: ids.slice(0, 120), more: true, freesFlowKey: false });
    const writes = calls.filter((c) => c.some((s) => s.includes("UPDATE packs")));
    expect(writes.map((batch) => batch.filter((s) => s.includes("UPDATE packs")).length)).toEqual([
      BULK_PACKS_PER_BATCH,
      20,
    ]);
    for (const batch of writes) expect(batch.some((s) => s.includes("INSERT INTO task_counters"))).toBe(true);
    const rest = await recorded.applyBulk(queue, "cancel", {}, 1000, AT + 2);
    expect(rest).toEqual({ count: 30, ids: ids.slice(120), more: false, freesFlowKey: false });
  });

  it("a flow-key filter matches no pack task (none holds a key)", async () => {
    const queue = uniqueQueue("bulk-key");
    await store().enqueueTasks(queue, [{}, {}], AT);
    expect(await store().countForBulk(queue, "cancel", { key: "k" }, 100)).toBe(0);
    expect(await store().applyBulk(queue, "cancel", { key: "k" }, 100, AT + 1)).toMatchObject({ count: 0 });
    expect(await store().countForBulk(queue, "cancel", {}, 100)).toBe(2);
  });
});
