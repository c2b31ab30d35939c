import { env } from "cloudflare:workers";
import { decodeTime, ulid } from "ulid";
import { describe, expect, it } from "vitest";
import { openDb } from "../../../src/db/client";
import { hybridTaskStore } from "../../../src/engine/hybrid/hybrid-store";
import { packTaskIds } from "../../../src/engine/hybrid/layout-of-ids";
import { decodeSlot, slotIdFactory } from "../../../src/shards/task-slot";
import { T0, uniqueQueue } from "../../helpers";

// The store of both layouts (src/engine/hybrid/hybrid-store.ts): which calls go into packs, and how an
// operation over both answers as one store. The properties every store keeps are test/engine's conformance
// files; these are the hybrid's own: routing, the lease across layouts, the split of items by layout.

const store = () => hybridTaskStore(openDb(env.DB));
const onPacks = async (ids: string[]) => [...(await packTaskIds(openDb(env.DB), ids))].sort();
const plain = (n: number, priority = 0) => Array.from({ length: n }, (_, i) => ({ payload: { i }, priority }));

describe("hybrid store: where an enqueue call goes", () => {
  it("a call of plain tasks goes into packs; a single task, or any task with a row-only field, into rows", async () => {
    const queue = uniqueQueue("hy-route");
    const s = store();
    const packed = (await s.enqueueTasks(queue, plain(3), T0)).tasks.map((t) => t.id);
    const single = (await s.enqueueTasks(queue, plain(1), T0)).tasks.map((t) => t.id);
    const keyed = (await s.enqueueTasks(queue, [{ payload: 1 }, { payload: 2, dedupeKey: "k" }], T0)).tasks;
    const grouped = (await s.enqueueTasks(queue, [{ payload: 1 }, { payload: 2, group: "g" }], T0)).tasks;
    const withId = (await s.enqueueTasks(queue, [{ payload: 1 }, { id: ulid(T0) }], T0)).tasks;
    expect(await onPacks(packed)).toEqual([...packed].sort());
    const rowIds = [...single, ...keyed.map((t) => t.id), ...grouped.map((t) => t.id), ...withId.map((t) => t.id)];
    expect(await onPacks(rowIds)).toEqual([]);
    // Every one is a task of the one store, whatever its layout.
    for (const id of [...packed, ...rowIds]) expect((await s.getTask(id)).queue).toBe(queue);
    expect((await s.queueStats(queue, {}, T0)).counts.pending).toBe(3 + 1 + 2 + 2 + 2);
  });

  it("ids made by the caller's `newId` name its partition in either layout, each distinct", async () => {
    const queue = uniqueQueue("hy-slot");
    const s = store();
    const slotId = slotIdFactory();
    const newId = (now: number) => slotId(7, now);
    // Packs of 100 made in one millisecond: every pack id distinct although the factory counts up at the end.
    const packed = (await s.enqueueTasks(queue, plain(300), T0, { newId })).tasks.map((t) => t.id);
    const single = (await s.enqueueTasks(queue, plain(1), T0, { newId })).tasks.map((t) => t.id);
    expect(await onPacks(packed)).toHaveLength(300);
    expect(await onPacks(single)).toEqual([]);
    expect(new Set(packed).size).toBe(300);
    for (const id of [...packed, ...single]) expect(decodeSlot(id)).toBe(7);
    expect((await s.queueStats(queue, {}, T0)).counts.pending).toBe(301);
  });

  it("a queue with flow control keeps every call in rows", async () => {
    const queue = uniqueQueue("hy-flow");
    const s = store();
    await s.putQueueConfig(queue, { flow: { default: { concurrency: 2 } } }, T0, []);
    const ids = (await s.enqueueTasks(queue, plain(5), T0)).tasks.map((t) => t.id);
    expect(await onPacks(ids)).toEqual([]);
  });
});

describe("hybrid store: one lease over both layouts", () => {
  it("takes the layout whose front comes first in lease order first, then the other for the rest", async () => {
    const queue = uniqueQueue("hy-lease");
    const s = store();
    const low = (await s.enqueueTasks(queue, plain(4, 1), T0)).tasks.map((t) => t.id); // packs, priority 1
    const high = (await s.enqueueTasks(queue, [{ payload: "h", priority: 9 }], T0 + 1)).tasks[0]!.id; // a row
    const leased = await s.leaseTasks({ queue, max: 3, visibilityTimeoutS: 30, holder: "w" }, T0 + 10);
    expect(leased.map((t) => t.id)).toEqual([high, low[0], low[1]]);
    const rest = await s.leaseTasks({ queue, max: 10, visibilityTimeoutS: 30, holder: "w" }, T0 + 11);
    expect(rest.map((t) => t.id)).toEqual([low[2], low[3]]);
    expect(await s.leaseTasks({ queue, max: 10, visibilityTimeoutS: 30, holder: "w" }, T0 + 12)).toEqual([]);
  });

  it("a row's lapsed lease counts in the rows' front: taken in lease order beside the packs, in one call's two steps", async () => {
    const queue = uniqueQueue("hy-lapsed");
    const s = store();
    const row = (await s.enqueueTasks(queue, [{ payload: "r", priority: 9 }], T0)).tasks[0]!.id;
    await s.leaseTasks({ queue, max: 1, visibilityTimeoutS: 1, holder: "crashed" }, T0);
    const packed = (await s.enqueueTasks(queue, plain(2, 1), T0)).tasks.map((t) => t.id);
    // Past the lapsed lease and its first attempt's backoff: the row (priority 9) comes before the packs.
    const taken = await s.leaseTasks({ queue, max: 10, visibilityTimeoutS: 30, holder: "w" }, T0 + 11_000);
    expect(taken.map((t) => t.id)).toEqual([row, ...packed]);
    expect(taken[0]!.leaseTookOverExpired).toBe(1);
    // And where the packs come first, a lapsed row is still taken for what they left.
    const other = uniqueQueue("hy-lapsed-2");
    const low = (await s.enqueueTasks(other, [{ payload: "r", priority: 0 }], T0)).tasks[0]!.id;
    await s.leaseTasks({ queue: other, max: 1, visibilityTimeoutS: 1, holder: "crashed" }, T0);
    const high = (await s.enqueueTasks(other, plain(2, 5), T0)).tasks.map((t) => t.id);
    const rest = await s.leaseTasks({ queue: other, max: 10, visibilityTimeoutS: 30, holder: "w" }, T0 + 11_000);
    expect(rest.map((t) => t.id)).toEqual([...high, low]);
  });

  it("concurrent leasers over a queue in both layouts never take a task twice, and take every one", async () => {
    const queue = uniqueQueue("hy-race");
    const s = store();
    const ids: string[] = [];
    for (let call = 0; call < 4; call++) {
      ids.push(...(await s.enqueueTasks(queue, plain(10), T0)).tasks.map((t) => t.id));
      ids.push((await s.enqueueTasks(queue, plain(1), T0)).tasks[0]!.id);
    }
    const leases = await Promise.all(
      Array.from({ length: 12 }, (_, w) =>
        s.leaseTasks({ queue, max: 4, visibilityTimeoutS: 30, holder: `w${w}` }, T0 + 10),
      ),
    );
    const taken = leases.flat().map((t) => t.id);
    expect(new Set(taken).size).toBe(taken.length);
    expect(taken.length).toBe(ids.length);
    expect([...taken].sort()).toEqual([...ids].sort());
  });
});

describe("hybrid store: writes by id go to the layout holding each task", () => {
  it("a complete of tasks of both layouts answers each in input order; an unknown id is not_found", async () => {
    const queue = uniqueQueue("hy-ack");
    const s = store();
    await s.enqueueTasks(queue, plain(2), T0);
    await s.enqueueTasks(queue, plain(1), T0);
    const leased = await s.leaseTasks({ queue, max: 3, visibilityTimeoutS: 30, holder: "w" }, T0 + 1);
    expect(leased).toHaveLength(3);
    const items = [...leased].reverse().map((t) => ({ id: t.id, leaseToken: t.leaseToken!, result: t.id }));
    const unknown = { id: ulid(T0), leaseToken: "x", result: null };
    const outcomes = await s.completeTasks([items[0]!, unknown, items[1]!, items[2]!], T0 + 2);
    expect(outcomes.map((o) => [o.id, o.ok])).toEqual([
      [items[0]!.id, true],
      [unknown.id, false],
      [items[1]!.id, true],
      [items[2]!.id, true],
    ]);
    expect(outcomes[1]).toMatchObject({ error: { code: "not_found" } });
    for (const item of items)
      expect(await s.getTask(item.id)).toMatchObject({ state: "completed", result: JSON.stringify(item.id) });
  });

  it("a heartbeat, a cancel and a retry reach a pack task and a row task alike", async () => {
    const queue = uniqueQueue("hy-byid");
    const s = store();
    await s.enqueueTasks(queue, plain(2), T0);
    await s.enqueueTasks(queue, plain(1), T0);
    const leased = await s.leaseTasks({ queue, max: 3, visibilityTimeoutS: 30, holder: "w" }, T0 + 1);
    for (const t of leased) {
      const beat = await s.heartbeatTask({ id: t.id, leaseToken: t.leaseToken!, extendS: 60, progress: 50 }, T0 + 2);
      expect(beat.leaseExpiresAt).toBe(T0 + 2 + 60_000);
      await s.cancelTask(t.id, T0 + 3);
      await expect(s.heartbeatTask({ id: t.id, leaseToken: t.leaseToken! }, T0 + 4)).rejects.toMatchObject({
        code: "task_cancelled",
      });
      expect((await s.retryTask(t.id, T0 + 5)).state).toBe("pending");
    }
  });
});

describe("hybrid store: reads and writes over a queue cover both layouts", () => {
  it("lists a queue's tasks in id order across layouts, page by page, each once", async () => {
    const queue = uniqueQueue("hy-list");
    const s = store();
    const ids: string[] = [];
    for (let call = 0; call < 3; call++) {
      ids.push(...(await s.enqueueTasks(queue, plain(3), T0 + call)).tasks.map((t) => t.id));
      ids.push((await s.enqueueTasks(queue, plain(1), T0 + call)).tasks[0]!.id);
    }
    const seen: string[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 10; page++) {
      const got = await s.listTasks(queue, { limit: 5, cursor });
      seen.push(...got.tasks.map((t) => t.id));
      if (got.next_cursor === null) break;
      cursor = got.next_cursor;
    }
    expect(seen).toEqual([...ids].sort());
  });

  it("a queue cancel, a redrive and the stats take in both layouts", async () => {
    const queue = uniqueQueue("hy-queue");
    const s = store();
    await s.enqueueTasks(queue, plain(4), T0);
    await s.enqueueTasks(queue, plain(1), T0);
    const cancelled = await s.cancelQueueTasks(queue, {}, T0 + 1);
    expect(cancelled.cancelled).toBe(5);
    expect((await s.queueStats(queue, {}, T0 + 1)).counts).toMatchObject({ pending: 0, cancelled: 5 });
    const redriven = await s.redriveQueue(queue, { state: "cancelled" }, T0 + 2);
    expect(redriven.redriven).toBe(5);
    expect((await s.queueStats(queue, {}, T0 + 2)).counts).toMatchObject({ pending: 5, cancelled: 0 });
  });
});

describe("hybrid store: a paused queue", () => {
  it("leases nothing from its packs while paused, and takes them again once resumed", async () => {
    const queue = uniqueQueue("hy-pause");
    const s = store();
    const ids = (await s.enqueueTasks(queue, plain(3), T0)).tasks.map((t) => t.id);
    expect(await onPacks(ids)).toEqual([...ids].sort());
    await s.setFlowPaused(queue, null, true, T0 + 1);
    expect(await s.leaseTasks({ queue, max: 10, visibilityTimeoutS: 30, holder: "w" }, T0 + 2)).toEqual([]);
    await s.setFlowPaused(queue, null, false, T0 + 3);
    const leased = await s.leaseTasks({ queue, max: 10, visibilityTimeoutS: 30, holder: "w" }, T0 + 4);
    expect(leased.map((t) => t.id)).toEqual(ids);
  });
});

describe("pack ids follow the clock they are made at", () => {
  it("a pack made after one at a later time carries its own time, not the later one", async () => {
    const s = store();
    const queue = uniqueQueue("hy-clock");
    const later = (await s.enqueueTasks(queue, plain(2), T0 + 10 * 365 * 86_400_000)).tasks[0]!.id;
    const now = (await s.enqueueTasks(queue, plain(2), T0)).tasks[0]!.id;
    expect(decodeTime(later)).toBe(T0 + 10 * 365 * 86_400_000);
    expect(decodeTime(now)).toBe(T0);
  });
});

describe("hybrid store: a long poll's hand-outs in both layouts", () => {
  it("returns undelivered hand-outs of both layouts, each once, and ends claim windows up to the limit", async () => {
    const queue = uniqueQueue("hy-handout");
    const s = store();
    await s.enqueueTasks(queue, plain(2), T0);
    await s.enqueueTasks(queue, plain(1), T0);
    await s.enqueueTasks(queue, plain(1), T0);
    const handed = await s.leaseTasks(
      { queue, max: 4, visibilityTimeoutS: 30, holder: "poll", provisional: true },
      T0 + 1,
    );
    expect(handed).toHaveLength(4);
    const items = handed.map((t) => ({ id: t.id, leaseToken: t.leaseToken! }));
    expect((await onPacks(items.map((i) => i.id))).length).toBe(2);
    // Two hand-outs' windows ended (the limit), whichever layouts hold them; the other two returned.
    const ended = await s.endClaimWindows(items, T0 + 2, 2);
    expect(ended).toHaveLength(2);
    const rest = items.filter((i) => !ended.some((e) => e.id === i.id));
    const returned = await s.returnUndelivered(rest, T0 + 3);
    expect(returned.map((r) => r.id).sort()).toEqual(rest.map((i) => i.id).sort());
    for (const i of rest) expect((await s.getTask(i.id)).state).toBe("pending");
    // Every hand-out is leasable again: returned at once, the ended windows' taken over.
    const again = await s.leaseTasks({ queue, max: 10, visibilityTimeoutS: 30, holder: "w" }, T0 + 4);
    expect(again.map((t) => t.id).sort()).toEqual(items.map((i) => i.id).sort());
  });
});
