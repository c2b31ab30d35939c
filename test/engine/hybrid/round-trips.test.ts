import { env } from "cloudflare:workers";
import { ulid } from "ulid";
import { describe, expect, it } from "vitest";
import { openDb } from "../../../src/db/client";
import { d1TaskStore } from "../../../src/engine/d1-store";
import { packTaskStore } from "../../../src/engine/packs/pack-store";
import { hybridTaskStore } from "../../../src/engine/hybrid/hybrid-store";
import { T0, uniqueQueue } from "../../helpers";
import { meteredD1 } from "../../support/metered-d1";

// Round trips of the served store (docs/design/packs.md, "Round trips of the served store"): on Cloudflare
// each D1 call is a Worker→D1 request of its own (milliseconds), so the hybrid's hot paths — a lease, an ack,
// an enqueue into packs — are held to the calls the layout they touch needs, with nothing added for the
// other layout. Counted with the metered binding: one per statement run alone, one per batch.

const meter = meteredD1(env.DB);
const store = hybridTaskStore(openDb(meter.db));
const rowStore = d1TaskStore(openDb(meter.db));
const packStore = packTaskStore(openDb(meter.db));
/** The served store as another isolate has it (its own memory of the packs it leased), on the same database. */
const elsewhere = hybridTaskStore(openDb(meteredD1(env.DB).db));
const plain = (n: number, priority = 0) => Array.from({ length: n }, (_, i) => ({ payload: { i }, priority }));
const lease = (queue: string, max: number, now: number) =>
  store.leaseTasks({ queue, max, visibilityTimeoutS: 30, holder: "w" }, now);

/** The D1 calls `run` makes, and its answer. */
async function calls<T>(run: () => Promise<T>): Promise<{ calls: number; answer: T }> {
  meter.reset();
  const answer = await run();
  return { calls: meter.usage.calls!, answer };
}

/** A row task's id ending in two characters no pack slot is named by (a slot is below 100: "00".."33"). */
const rowShapedId = (now: number) => ulid(now).slice(0, 24) + "ZZ";

describe("round trips of a lease", () => {
  it("a lease of a queue of rows only makes the row store's own calls: its lease's batch (and its counter upsert)", async () => {
    /** A queue of rows: 30 leased (the walk to the front passes them), then one due, leased by `leaseOn`. */
    async function leaseBehind30(queue: string, leaseOn: typeof store) {
      const grouped = Array.from({ length: 30 }, (_, i) => ({ payload: i, priority: 5, group: "g" })); // rows
      await leaseOn.enqueueTasks(queue, grouped, T0);
      expect(await leaseOn.leaseTasks({ queue, max: 30, visibilityTimeoutS: 30, holder: "w" }, T0)).toHaveLength(30);
      await leaseOn.enqueueTasks(queue, [{ payload: "last" }], T0);
      const measured = await calls(() =>
        leaseOn.leaseTasks({ queue, max: 1, visibilityTimeoutS: 30, holder: "w" }, T0 + 1),
      );
      expect(measured.answer).toHaveLength(1);
      return { calls: measured.calls, read: meter.usage.rowsRead };
    }
    const hybrid = await leaseBehind30(uniqueQueue("rt-rows"), store);
    // The row store alone, on a queue of its own: one batch, and the counter upsert of a task whose row does
    // not keep its counter events (no counter fold ran on this database: src/engine/counters-in-row.ts).
    const own = await leaseBehind30(uniqueQueue("rt-rows-alone"), rowStore);
    expect(own.calls).toBe(2);
    expect(hybrid.calls).toBe(own.calls);
    // What the batch adds to read: the pause's and the packs' index probes, never a walk to the rows' front (it
    // is read only where a due pack is), so the lease reads what the row store's does, give or take.
    expect(own.read).toBeGreaterThan(30);
    expect(hybrid.read - own.read).toBeLessThanOrEqual(4);
    // An empty queue: the one batch.
    expect((await calls(() => lease(uniqueQueue("rt-empty"), 1, T0 + 1))).calls).toBe(1);
  });

  it("a lease of a queue of packs only is two calls, then one while its packs come first (the isolate's hint)", async () => {
    const queue = uniqueQueue("rt-packs");
    await store.enqueueTasks(queue, plain(3), T0);
    const full = await calls(() => lease(queue, 1, T0 + 1));
    expect(full.answer).toHaveLength(1);
    expect(full.calls).toBe(2); // the first batch (the packs come first), then the pack lease
    const short = await calls(() => lease(queue, 10, T0 + 2));
    expect(short.answer).toHaveLength(2);
    expect(short.calls).toBe(1); // the pack lease in the first batch
    // Drained: one call, nothing, and the hint is kept for the queue's next packs.
    const none = await calls(() => lease(queue, 10, T0 + 3));
    expect(none.answer).toEqual([]);
    expect(none.calls).toBe(1);
    await store.enqueueTasks(queue, plain(2), T0 + 4);
    const again = await calls(() => lease(queue, 10, T0 + 5));
    expect(again.answer).toHaveLength(2);
    expect(again.calls).toBe(1);
  });

  it("a stale hint takes nothing: a config changed since, or rows that come first, lease as without it", async () => {
    const queue = uniqueQueue("rt-stale");
    await store.enqueueTasks(queue, plain(4), T0);
    expect(await lease(queue, 1, T0 + 1)).toHaveLength(1); // hinted from here on
    // The queue's visibility timeout changes: the hinted batch was built with the old config, so its guard
    // fails and the lease is taken again under the new one (no explicit visibility timeout in this request).
    await store.putQueueConfig(queue, { visibility_timeout_s: 77 }, T0 + 2, []);
    const changed = await calls(() =>
      store.leaseTasks({ queue, max: 1, visibilityTimeoutS: null, holder: "w" }, T0 + 3),
    );
    expect(changed.answer).toHaveLength(1);
    expect(changed.answer[0]!.leaseExpiresAt).toBe(T0 + 3 + 77_000);
    expect(changed.calls).toBe(3); // the hinted batch (nothing taken), the first batch, the pack lease
    // A row of a higher priority now comes first: the hinted batch takes nothing and the row is leased first.
    await store.enqueueTasks(queue, [{ payload: "row", priority: 9 }], T0 + 4);
    const rowFirst = await calls(() => lease(queue, 2, T0 + 5));
    expect(rowFirst.answer.map((t) => t.priority)).toEqual([9, 0]);
    // Every task leased once, none twice: 1 + 1 + 2 of the 4 pack tasks and the row; what is left is one.
    const rest = await lease(queue, 10, T0 + 6);
    expect(rest).toHaveLength(1);
    const ids = [...changed.answer, ...rowFirst.answer, ...rest].map((t) => t.id);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("a lease over both layouts: the first batch, the rows' counter upsert and the other layout's lease", async () => {
    const rowsFirst = uniqueQueue("rt-mixed-r");
    await store.enqueueTasks(rowsFirst, plain(2, 1), T0);
    await store.enqueueTasks(rowsFirst, plain(1, 5), T0);
    const a = await calls(() => lease(rowsFirst, 10, T0 + 1));
    expect(a.answer.map((t) => t.priority)).toEqual([5, 1, 1]);
    expect(a.calls).toBe(3); // the batch (rows leased), the rows' counters, the packs' lease

    const packsFirst = uniqueQueue("rt-mixed-p");
    await store.enqueueTasks(packsFirst, plain(2, 5), T0);
    await store.enqueueTasks(packsFirst, plain(1, 1), T0);
    const b = await calls(() => lease(packsFirst, 10, T0 + 1));
    expect(b.answer.map((t) => t.priority)).toEqual([5, 5, 1]);
    expect(b.calls).toBe(4); // the batch (nothing leased), the packs' lease, the rows' lease and counters
  });
});

describe("round trips of a write by id", () => {
  it("a complete of a row task whose id no pack slot names is one call; of one whose id could be, two", async () => {
    const queue = uniqueQueue("rt-ack-row");
    const shaped = rowShapedId(T0);
    const slotLike = ulid(T0).slice(0, 24) + "01";
    await store.enqueueTasks(queue, [{ id: shaped, payload: 1 }], T0);
    await store.enqueueTasks(queue, [{ id: slotLike, payload: 2 }], T0);
    const leased = await lease(queue, 2, T0 + 1);
    const token = (id: string) => leased.find((t) => t.id === id)!.leaseToken!;
    const a = await calls(() => store.completeTasks([{ id: shaped, leaseToken: token(shaped) }], T0 + 2));
    expect(a.answer[0]).toMatchObject({ ok: true });
    expect(a.calls).toBe(1);
    const b = await calls(() => store.completeTasks([{ id: slotLike, leaseToken: token(slotLike) }], T0 + 2));
    expect(b.answer[0]).toMatchObject({ ok: true });
    expect(b.calls).toBe(2);
  });

  it("a complete of a pack task leased in another isolate is the pack store's own two calls: the read that tells the layout (its pack, its queue's config), then the write", async () => {
    const queue = uniqueQueue("rt-ack-pack");
    await store.enqueueTasks(queue, plain(2), T0);
    const [task] = await elsewhere.leaseTasks({ queue, max: 1, visibilityTimeoutS: 30, holder: "w" }, T0 + 1);
    const done = await calls(() => store.completeTasks([{ id: task!.id, leaseToken: task!.leaseToken! }], T0 + 2));
    expect(done.answer[0]).toMatchObject({ ok: true });
    const alone = uniqueQueue("rt-ack-pack-alone");
    await packStore.enqueueTasks(alone, plain(2), T0);
    const [own] = await packStore.leaseTasks({ queue: alone, max: 1, visibilityTimeoutS: 30, holder: "w" }, T0 + 1);
    const ownDone = await calls(() => packStore.completeTasks([{ id: own!.id, leaseToken: own!.leaseToken! }], T0 + 2));
    expect(ownDone.answer[0]).toMatchObject({ ok: true });
    expect(ownDone.calls).toBe(2);
    expect(done.calls).toBe(ownDone.calls);
  });

  it("a complete of pack tasks leased here is one call: their packs as the lease wrote them are remembered", async () => {
    const queue = uniqueQueue("rt-ack-here");
    await store.enqueueTasks(queue, plain(10), T0);
    const tasks = await lease(queue, 4, T0 + 1);
    const items = tasks.map((t) => ({ id: t.id, leaseToken: t.leaseToken! }));
    const done = await calls(() => store.completeTasks(items, T0 + 2));
    expect(done.answer.map((a) => a.ok && a.state)).toEqual(["completed", "completed", "completed", "completed"]);
    expect(done.calls).toBe(1);
    // Written here since: not remembered as held. A repeat reads afresh (and writes nothing), answered as a repeat.
    const again = await calls(() => store.completeTasks(items.slice(0, 1), T0 + 3));
    expect(again.answer[0]).toMatchObject({ ok: true, repeated: true });
    expect(again.calls).toBe(1);
  });

  it("a heartbeat of a pack task is one call where it was leased, two elsewhere (its pack and its queue's config, then the write)", async () => {
    const queue = uniqueQueue("rt-beat-pack");
    await store.enqueueTasks(queue, plain(2), T0);
    const [task] = await lease(queue, 1, T0 + 1);
    const here = await calls(() =>
      store.heartbeatTask({ id: task!.id, leaseToken: task!.leaseToken!, extendS: 60 }, T0 + 2),
    );
    expect(here.answer.leaseExpiresAt).toBe(T0 + 2 + 60_000);
    expect(here.calls).toBe(1);
    // Beaten here since: its next beat reads afresh.
    const next = await calls(() =>
      store.heartbeatTask({ id: task!.id, leaseToken: task!.leaseToken!, extendS: 90 }, T0 + 3),
    );
    expect(next.answer.leaseExpiresAt).toBe(T0 + 3 + 90_000);
    expect(next.calls).toBe(2);
  });

  it("a heartbeat and a read by id of a row task are one call each", async () => {
    const queue = uniqueQueue("rt-beat");
    const id = rowShapedId(T0);
    await store.enqueueTasks(queue, [{ id, payload: 1 }], T0);
    const [task] = await lease(queue, 1, T0 + 1);
    const beat = await calls(() => store.heartbeatTask({ id, leaseToken: task!.leaseToken!, extendS: 60 }, T0 + 2));
    expect(beat.answer.leaseExpiresAt).toBe(T0 + 2 + 60_000);
    expect(beat.calls).toBe(1);
    const read = await calls(() => store.getTask(id));
    expect(read.answer.state).toBe("processing");
    expect(read.calls).toBe(1);
  });
});

describe("round trips of an enqueue into packs", () => {
  it("reads the queue's config once: the config, then the pack store's one batch", async () => {
    const queue = uniqueQueue("rt-enq");
    const { calls: n, answer } = await calls(() => store.enqueueTasks(queue, plain(5), T0));
    expect(answer.tasks).toHaveLength(5);
    expect(n).toBe(2);
  });
});
