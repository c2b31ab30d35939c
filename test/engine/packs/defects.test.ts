import { env } from "cloudflare:workers";
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { MAX_PAYLOAD_BYTES } from "../../../src/contracts/limits";
import { openDb } from "../../../src/db/client";
import { packTaskStore } from "../../../src/engine/packs/pack-store";
import { T0, uniqueQueue } from "../../helpers";
import { isWrite, recordingD1 } from "./recording-d1";

// The defects an outside review found in the packs prototype (issue 32), each held by a property of the pack
// store (src/engine/packs/) that the prototype's behaviour fails. The pack store's own mechanics: the port's
// properties run on it in test/engine's conformance files.

const store = () => packTaskStore(openDb(env.DB));
const db = () => openDb(env.DB);
const many = (n: number, from = 0) => Array.from({ length: n }, (_, i) => ({ payload: { i: from + i } }));

/** The pack row a task id names (its first 24 characters), with its live figures recounted from `st`. */
async function packRow(taskId: string) {
  return db().get<{
    live: number;
    ready: number;
    next_at: number | null;
    finished_at: number | null;
    recount: number;
    bytes: number;
  }>(
    sql`SELECT live, ready, next_at, finished_at, bytes,
        length(st) - length(replace(replace(replace(st, 'p', ''), 'w', ''), 'r', '')) AS recount
      FROM (SELECT *, length(slots) AS bytes FROM packs WHERE id = ${taskId.slice(0, 24)})`,
  );
}

describe("pack store: a pack held by kept leases never stalls the queue (issue 32: the stall)", () => {
  it("a lease of 100 takes another pack's 100 pending tasks while a whole pack is leased and heartbeated past its first expiry", async () => {
    const queue = uniqueQueue("stall");
    await store().enqueueTasks(queue, many(100), T0);
    await store().enqueueTasks(queue, many(100, 100), T0 + 1);
    const held = await store().leaseTasks({ queue, max: 100, visibilityTimeoutS: 30, holder: "a" }, T0 + 2);
    expect(new Set(held.map((t) => t.id.slice(0, 24))).size).toBe(1);
    // Every holder beats at 25 s: its lease now runs to 55 s, past the first expiry (30 s) and its backoff (40 s).
    for (const t of held)
      await store().heartbeatTask({ id: t.id, leaseToken: t.leaseToken!, extendS: 30 }, T0 + 25_000);
    // The heartbeat moved the pack's next leasable time with the leases (the prototype left it at 40 s):
    // a lease does not even read the pack until its leases can lapse.
    expect((await packRow(held[0]!.id))!.next_at).toBe(T0 + 55_000 + 10_000);
    const taken = await store().leaseTasks({ queue, max: 100, visibilityTimeoutS: 30, holder: "b" }, T0 + 45_000);
    expect(taken).toHaveLength(100);
    expect(taken.every((t) => !held.some((h) => h.id === t.id))).toBe(true);
  });
});

describe("pack store: a duplicate enqueue answers the live task (issue 32)", () => {
  it("a key repeated in one call, or held by a live task, is answered with that task's id — a task that exists — and takes no slot", async () => {
    const queue = uniqueQueue("dedupe");
    const first = await store().enqueueTasks(queue, [{ dedupeKey: "k" }, { dedupeKey: "k" }], T0);
    const [a, b] = first.tasks;
    expect(b).toEqual({ id: a!.id, state: "pending", deduplicated: true });
    expect(await store().getTask(b!.id)).toMatchObject({ state: "pending", dedupeKey: "k" });
    // The pack holds the one task created (the prototype kept a never-created `z` slot and answered its id).
    expect(await db().get(sql`SELECT n, st FROM packs WHERE id = ${a!.id.slice(0, 24)}`)).toEqual({ n: 1, st: "p" });
    // Completed, its key is free: the next enqueue creates a task, and a repeat answers THAT one.
    const [leased] = await store().leaseTasks({ queue, max: 1, visibilityTimeoutS: 30, holder: "w" }, T0 + 1);
    await store().completeTasks([{ id: leased!.id, leaseToken: leased!.leaseToken! }], T0 + 2);
    const [made] = (await store().enqueueTasks(queue, [{ dedupeKey: "k" }], T0 + 3)).tasks;
    expect(made).toMatchObject({ deduplicated: false });
    const [again] = (await store().enqueueTasks(queue, [{ dedupeKey: "k" }], T0 + 4)).tasks;
    expect(again).toEqual({ id: made!.id, state: "pending", deduplicated: true });
  });
});

describe("pack store: counters are written with what they count (issue 32)", () => {
  it("an enqueue, a lease and a complete each write their packs and their counters in one batch, and nothing else", async () => {
    const queue = uniqueQueue("atomic");
    const { db: d1, calls } = recordingD1(env.DB);
    const recorded = packTaskStore(openDb(d1));
    // A write statement, also after a WITH clause (the lease's statements: src/engine/packs/lease-sql.ts).
    const writes = () => calls.filter(isWrite);
    await recorded.enqueueTasks(queue, many(3), T0);
    const [enqueue] = writes();
    expect(writes()).toHaveLength(1);
    expect(enqueue!.some((s) => s.includes("INSERT INTO packs"))).toBe(true);
    expect(enqueue!.some((s) => s.includes("INSERT INTO task_counters"))).toBe(true);
    calls.length = 0;
    const leased = await recorded.leaseTasks({ queue, max: 3, visibilityTimeoutS: 30, holder: "w" }, T0 + 1);
    await recorded.completeTasks(
      leased.map((t) => ({ id: t.id, leaseToken: t.leaseToken! })),
      T0 + 2,
    );
    expect(writes()).toHaveLength(2);
    for (const batch of writes()) {
      expect(batch.some((s) => s.includes("UPDATE packs"))).toBe(true);
      expect(batch.some((s) => s.includes("INSERT INTO task_counters"))).toBe(true);
    }
  });
});

describe("pack store: what outgrows a pack's row spills to side rows (issue 32)", () => {
  it("100 results of MAX_PAYLOAD_BYTES complete in one call, each kept whole, the pack's row staying small", async () => {
    const queue = uniqueQueue("spill");
    await store().enqueueTasks(queue, many(100), T0);
    const leased = await store().leaseTasks({ queue, max: 100, visibilityTimeoutS: 60, holder: "w" }, T0 + 1);
    const big = (i: number) => `${i}:`.padEnd(MAX_PAYLOAD_BYTES - 16, "r");
    const outcomes = await store().completeTasks(
      leased.map((t, i) => ({ id: t.id, leaseToken: t.leaseToken!, result: big(i) })),
      T0 + 2,
    );
    expect(outcomes.filter((o) => o.ok)).toHaveLength(100);
    for (const [i, t] of [
      [0, leased[0]!],
      [99, leased[99]!],
    ] as const) {
      expect((await store().getTask(t.id)).result).toBe(JSON.stringify(big(i)));
    }
    expect((await packRow(leased[0]!.id))!.bytes).toBeLessThan(64 * 1024);
  });

  it("an error history and a checkpoint past the spill size are kept whole and read back", async () => {
    const queue = uniqueQueue("spill-errors");
    const [made] = (await store().enqueueTasks(queue, [{ maxAttempts: 6 }], T0)).tasks;
    let now = T0;
    for (let attempt = 1; attempt <= 5; attempt++) {
      const [t] = await store().leaseTasks({ queue, max: 1, visibilityTimeoutS: 30, holder: "w" }, now);
      await store().heartbeatTask(
        { id: t!.id, leaseToken: t!.leaseToken!, checkpoint: { at: attempt, pad: "c".repeat(10_000) } },
        now + 1,
      );
      await store().failTasks(
        [{ id: t!.id, leaseToken: t!.leaseToken!, message: `${attempt}`.padEnd(2000, "e"), retryAfterS: 0 }],
        now + 2,
      );
      now += 10;
    }
    const task = await store().getTask(made!.id);
    expect(JSON.parse(task.errors).map((e: { attempt: number }) => e.attempt)).toEqual([1, 2, 3, 4, 5]);
    expect(JSON.parse(task.checkpoint!)).toMatchObject({ at: 5 });
    expect(await db().get(sql`SELECT count(*) AS n FROM pack_spill WHERE task_id = ${made!.id}`)).toEqual({ n: 2 });
  });
});

describe("pack store: `live` has one definition (issue 32)", () => {
  it("a pack's live and ready counts and finished_at follow its slots through every kind of write", async () => {
    const queue = uniqueQueue("live");
    const { tasks } = await store().enqueueTasks(queue, many(4), T0);
    const check = async (live: number, finished: boolean) => {
      const pack = (await packRow(tasks[0]!.id))!;
      expect(pack.live).toBe(live);
      expect(pack.recount).toBe(live);
      expect(pack.finished_at !== null).toBe(finished);
    };
    await check(4, false);
    const leased = await store().leaseTasks({ queue, max: 4, visibilityTimeoutS: 30, holder: "w" }, T0 + 1);
    const [a, b, c, d] = leased.map((t) => ({ id: t.id, leaseToken: t.leaseToken! }));
    await store().completeTasks([a!], T0 + 2);
    await store().completeTasks([a!], T0 + 3); // a repeat changes nothing
    await store().failTasks([{ ...b!, message: "no", retryable: false }], T0 + 4);
    await store().releaseTasks([c!], T0 + 5);
    await check(2, false);
    const [again] = await store().leaseTasks({ queue, max: 1, visibilityTimeoutS: 30, holder: "w" }, T0 + 6);
    await store().completeTasks([{ id: again!.id, leaseToken: again!.leaseToken! }, d!], T0 + 7);
    await check(0, true);
  });

  it("the row refuses a live count that disagrees with finished_at (the live index can never drop a live pack)", async () => {
    const queue = uniqueQueue("live-check");
    const { tasks } = await store().enqueueTasks(queue, many(1), T0);
    await expect(
      env.DB.prepare("UPDATE packs SET live = 0 WHERE id = ?").bind(tasks[0]!.id.slice(0, 24)).run(),
    ).rejects.toThrow(/CHECK constraint failed/);
  });
});

describe("pack store: concurrent writes to one pack", () => {
  it("20 holders completing their own tasks of one pack at once all apply: none is lost to another's rewrite", async () => {
    const queue = uniqueQueue("race");
    await store().enqueueTasks(queue, many(20), T0);
    const leased = await store().leaseTasks({ queue, max: 20, visibilityTimeoutS: 30, holder: "w" }, T0 + 1);
    const outcomes = await Promise.all(
      leased.map((t) => store().completeTasks([{ id: t.id, leaseToken: t.leaseToken! }], T0 + 2)),
    );
    expect(outcomes.flat().every((o) => o.ok && o.state === "completed")).toBe(true);
    expect((await packRow(leased[0]!.id))!.finished_at).toBe(T0 + 2);
  });
});
