import { env } from "cloudflare:workers";
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { openDb, type Db } from "../../../src/db/client";
import { d1TaskStore } from "../../../src/engine/d1-store";
import { packTaskStore } from "../../../src/engine/packs/pack-store";
import type { TaskStore } from "../../../src/engine/store";
import type { DeliveredRow, TransitRow } from "../../../src/engine/transit";
import { T0, uniqueQueue } from "../../helpers";
import { meteredD1 } from "../../support/metered-d1";

// The pack store's moves (src/engine/packs/transit-out.ts, transit-in.ts): a task taken out of its pack keeps
// its id, state, attempts, lease and body, and goes back into a pack of the same id on the destination; a
// move interrupted anywhere loses nothing and leases nothing twice. test/engine/transit.test.ts holds the
// port's answers on both stores; this file holds the pack store's own mechanics and rows written.

const TO = { shard: "DB_1", slot: 7 };
const VT_S = 30;
const source = (d1: D1Database = env.DB) => packTaskStore(openDb(d1)) as unknown as TaskStore;
const dest = (d1: D1Database = env.DB_1) => packTaskStore(openDb(d1)) as unknown as TaskStore;
const many = (n: number) => Array.from({ length: n }, (_, i) => ({ payload: { i } }));

/** The queue's tasks in transit out of `store`, as a delivery hands them over. */
async function transitOf(store: TaskStore, queue: string): Promise<DeliveredRow[]> {
  return (await store.listTransit(10_000))
    .filter((r: TransitRow) => r.queue === queue)
    .map((r) => ({ ...r, rowSlot: null }));
}

/** Every task of a queue on `store`, in id order. */
async function tasksOf(store: TaskStore, queue: string) {
  return (await store.listTasks(queue, { limit: 10_000 })).tasks;
}

/** The queue's pack rows on `db`: id and slot states. */
async function packsOf(db: Db, queue: string) {
  return db.all<{ id: string; st: string; finished_at: number | null }>(
    sql`SELECT id, st, finished_at FROM packs WHERE queue = ${queue} ORDER BY id`,
  );
}

/** Rows written by `write` on the metered databases. */
async function rowsWritten(meters: Array<ReturnType<typeof meteredD1>>, write: () => Promise<unknown>) {
  for (const m of meters) m.reset();
  await write();
  return meters.reduce((n, m) => n + m.usage.rowsWritten, 0);
}

/** A pack of 100 tasks in every state a move carries: pending, processing (held), waiting for a retry with an
 * error, completed with a result too large for the row (spilled), with a checkpoint; one dedupe key. */
async function mixedPack(store: TaskStore, queue: string) {
  const { tasks } = await store.enqueueTasks(
    queue,
    many(100).map((t, i) => (i === 0 ? { ...t, dedupeKey: "only" } : t)),
    T0,
  );
  const leased = await store.leaseTasks({ queue, max: 40, visibilityTimeoutS: VT_S, holder: "w" }, T0 + 1);
  const token = (i: number) => ({ id: leased[i]!.id, leaseToken: leased[i]!.leaseToken! });
  const big = "x".repeat(10_000);
  await store.completeTasks([{ ...token(0), result: { big } }, ...[1, 2, 3].map(token)], T0 + 2);
  await store.failTasks(
    [4, 5, 6].map((i) => ({ ...token(i), message: "try again", retryable: true })),
    T0 + 3,
  );
  await store.heartbeatTask({ ...token(7), checkpoint: { page: 7, big } }, T0 + 4);
  return { ids: tasks.map((t) => t.id), held: leased.slice(7).map((t) => t.id), token };
}

describe("pack store: a move keeps every task whole, in packs of the same ids", () => {
  it("moves a pack of 100 in every state: ids, states, attempts, leases, bodies and spill kept; one pack on each side", async () => {
    const queue = uniqueQueue("pt-whole");
    const { ids, token } = await mixedPack(source(), queue);
    const before = await tasksOf(source(), queue);
    expect(before.map((t) => t.state).sort()).toEqual(
      [...Array(60).fill("pending"), ...Array(3).fill("pending"), ...Array(33).fill("processing")]
        .concat(Array(4).fill("completed"))
        .sort(),
    );
    const [packId] = (await packsOf(openDb(env.DB), queue)).map((p) => p.id);
    const spilled = sql`SELECT count(*) AS n FROM pack_spill WHERE task_id >= ${packId!} AND task_id < ${packId!} || '~'`;
    expect((await openDb(env.DB).get<{ n: number }>(spilled))!.n).toBe(2);

    // Live tasks first, then the finished ones: as the relay takes them (src/shards/relay.ts).
    expect(await source().takeOutForTransit({ queue, liveOnly: true }, TO, 200, T0 + 10)).toBe(96);
    expect((await packsOf(openDb(env.DB), queue)).map((p) => p.st.replaceAll("o", ""))).toEqual(["cccc"]);
    // A slot taken out holds no task: not found by its id, though its pack is still here (the id is in transit).
    const moved = before.find((t) => t.state === "pending")!.id;
    await expect(source().getTask(moved)).rejects.toMatchObject({ code: "not_found" });
    expect(await source().findTaskState(moved)).toBeNull();
    expect(await source().findTaskIdsHeld([moved])).toEqual([moved]);
    expect(await source().countQueueTasksHeld(queue)).toBe(100);
    expect(await source().takeOutForTransit({ queue }, TO, 200, T0 + 11)).toBe(4);
    // The emptied pack is gone, with its spill and key rows; every task is in transit.
    expect(await packsOf(openDb(env.DB), queue)).toEqual([]);
    expect((await openDb(env.DB).get<{ n: number }>(spilled))!.n).toBe(0);
    expect(await openDb(env.DB).all(sql`SELECT * FROM pack_keys WHERE queue = ${queue}`)).toEqual([]);
    expect((await source().findInTransit(ids)).sort()).toEqual([...ids].sort());

    const rows = await transitOf(source(), queue);
    await dest().putInFromTransit(rows);
    expect(await tasksOf(dest(), queue)).toEqual(before);
    // One pack on the destination, under the source's id: each id still names its pack and slot.
    expect((await packsOf(openDb(env.DB_1), queue)).map((p) => p.id)).toEqual([packId]);
    expect((await openDb(env.DB_1).get<{ n: number }>(spilled))!.n).toBe(2);
    expect(await openDb(env.DB_1).all(sql`SELECT task_id FROM pack_keys WHERE queue = ${queue}`)).toEqual([
      { task_id: ids[0] },
    ]);
    await source().clearTransit(rows.map((r) => r.id));

    // The holder acks on the destination with its token; on the source the task is gone.
    const [onSource] = await source().completeTasks([token(8)], T0 + 12);
    expect(onSource).toMatchObject({ ok: false });
    const [onDest] = await dest().completeTasks([token(8)], T0 + 12);
    expect(onDest).toMatchObject({ ok: true, state: "completed" });
  });

  it("a client's own ids, a partition's share, a key freed on the source, and a pack moved in parts joining one copy", async () => {
    const queue = uniqueQueue("pt-parts");
    const mine = ["01JAAAAAAAQRST00000000PT01", "01JAAAAAAAQRST00000000PT02"];
    const others = ["01JAAAAAAAWXYZ00000000PT03"];
    const { tasks } = await source().enqueueTasks(
      queue,
      [{ id: mine[0], dedupeKey: "k" }, { id: mine[1] }, { id: others[0] }, {}],
      T0,
    );
    const plain = tasks[3]!.id;
    const [packId] = (await packsOf(openDb(env.DB), queue)).map((p) => p.id);
    const partition = { slot: TO.slot, idGlob: "??????????QRST*" };
    expect(await source().takeOutForTransit({ queue, partition }, TO, 200, T0 + 5)).toBe(2);
    expect(await source().countQueueTasksHeld(queue, partition)).toBe(2);
    expect(await source().countQueueTasksHeld(queue)).toBe(4);
    // The key is free on the source once its task left (as a row store's take-out frees it).
    const [again] = (await source().enqueueTasks(queue, [{ dedupeKey: "k" }], T0 + 6)).tasks;
    expect(again).toMatchObject({ deduplicated: false });
    await expect(source().getTask(mine[0]!)).rejects.toMatchObject({ code: "not_found" });
    expect(await openDb(env.DB).all(sql`SELECT id FROM pack_ids WHERE id IN (${mine[0]}, ${mine[1]})`)).toEqual([]);

    const first = await transitOf(source(), queue);
    await dest().putInFromTransit(first);
    await source().clearTransit(first.map((r) => r.id));
    expect((await dest().getTask(mine[0]!)).dedupeKey).toBe("k");
    // The rest of the pack follows into the same copy: one pack on the destination.
    expect(await source().takeOutForTransit({ queue }, TO, 200, T0 + 7)).toBe(3);
    const second = await transitOf(source(), queue);
    await dest().putInFromTransit(second);
    await source().clearTransit(second.map((r) => r.id));
    const landed = await packsOf(openDb(env.DB_1), queue);
    expect(landed.map((p) => p.id)).toEqual([packId, again!.id.slice(0, 24)].sort());
    expect(landed.find((p) => p.id === packId)!.st).toBe("pppp");
    expect((await tasksOf(dest(), queue)).map((t) => t.id).sort()).toEqual(
      [...mine, ...others, plain, again!.id].sort(),
    );
    // The moved key's task and the one enqueued after it both landed; only one keeps the key.
    const keyed = (await tasksOf(dest(), queue)).filter((t) => t.dedupeKey === "k").map((t) => t.id);
    expect(keyed).toEqual([mine[0]]);
  });
});

/** A D1 binding that runs `between` once, right after the first statement whose SQL matches `when` — a write
 * landing between a read and the guarded batch computed from it. */
function interleaved(d1: D1Database, when: RegExp, between: () => Promise<void>): D1Database {
  let fired = false;
  const wrap = (text: string, statement: D1PreparedStatement): D1PreparedStatement =>
    new Proxy(statement, {
      get(target, p) {
        if (p === "bind") return (...values: unknown[]) => wrap(text, target.bind(...values));
        if (p === "run" || p === "all" || p === "first" || p === "raw") {
          return async (...args: unknown[]) => {
            const result = await (target[p] as (...a: unknown[]) => Promise<unknown>).apply(target, args);
            if (!fired && when.test(text)) {
              fired = true;
              await between();
            }
            return result;
          };
        }
        const value = target[p as keyof D1PreparedStatement];
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
  const real = new WeakMap<object, D1PreparedStatement>();
  return new Proxy(d1, {
    get(target, p) {
      if (p === "prepare")
        return (text: string) => {
          const statement = target.prepare(text);
          const proxy = wrap(text, statement);
          real.set(proxy, statement);
          return proxy;
        };
      if (p === "batch")
        return (statements: D1PreparedStatement[]) => target.batch(statements.map((s) => real.get(s) ?? s));
      const value = target[p as keyof D1Database];
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

describe("pack store: a move interrupted anywhere loses nothing and leases nothing twice", () => {
  it("a lease landing between the take-out's read and its write: the take-out computes again and carries the lease", async () => {
    const queue = uniqueQueue("pt-race");
    const { tasks } = await source().enqueueTasks(queue, many(10), T0);
    let held: Awaited<ReturnType<TaskStore["leaseTasks"]>> = [];
    const racing = source(
      interleaved(env.DB, /FROM packs\s+WHERE queue/, async () => {
        held = await source().leaseTasks({ queue, max: 3, visibilityTimeoutS: VT_S, holder: "w" }, T0 + 1);
      }),
    );
    expect(await racing.takeOutForTransit({ queue }, TO, 200, T0 + 2)).toBe(10);
    expect(held).toHaveLength(3);
    const rows = await transitOf(source(), queue);
    expect(rows.map((r) => r.id)).toEqual(tasks.map((t) => t.id));
    await dest().putInFromTransit(rows);
    // The three leased in the race arrive held, under their tokens; a lease on the destination takes the
    // other seven only, until the held leases expire.
    const landed = await tasksOf(dest(), queue);
    for (const h of held) expect(landed.find((t) => t.id === h.id)).toMatchObject({ leaseToken: h.leaseToken });
    const leasedThere = await dest().leaseTasks({ queue, max: 100, visibilityTimeoutS: VT_S, holder: "v" }, T0 + 3);
    expect(leasedThere.map((t) => t.id).sort()).toEqual(
      tasks
        .map((t) => t.id)
        .filter((id) => !held.some((h) => h.id === id))
        .sort(),
    );
    expect(await source().leaseTasks({ queue, max: 100, visibilityTimeoutS: VT_S, holder: "x" }, T0 + 3)).toEqual([]);
    await source().clearTransit(rows.map((r) => r.id));
  });

  it("at each point of a relay: the task is on one side or in transit, never leased from both; a repeated put-in writes nothing", async () => {
    const queue = uniqueQueue("pt-crash");
    const { tasks } = await source().enqueueTasks(queue, many(5), T0);
    const ids = tasks.map((t) => t.id);
    // Crash after the take-out: nothing leasable on either side, every id held (in transit) on the source.
    await source().takeOutForTransit({ queue }, TO, 200, T0 + 1);
    expect(await source().leaseTasks({ queue, max: 10, visibilityTimeoutS: VT_S, holder: "w" }, T0 + 2)).toEqual([]);
    expect((await source().findTaskIdsHeld(ids)).sort()).toEqual([...ids].sort());
    expect(await source().countQueueTasksHeld(queue)).toBe(5);
    expect(await dest().findTaskIdsHeld(ids)).toEqual([]);
    // Crash after the put-in, before the clear: the relay delivers again; nothing is written twice.
    const rows = await transitOf(source(), queue);
    await dest().putInFromTransit(rows);
    const leased = await dest().leaseTasks({ queue, max: 2, visibilityTimeoutS: VT_S, holder: "w" }, T0 + 3);
    const meter = meteredD1(env.DB_1);
    await dest(meter.db).putInFromTransit(rows);
    expect(meter.usage.rowsWritten).toBe(0);
    // The two leased there are still held; the three others lease once.
    const rest = await dest().leaseTasks({ queue, max: 10, visibilityTimeoutS: VT_S, holder: "v" }, T0 + 4);
    expect([...leased, ...rest].map((t) => t.id).sort()).toEqual([...ids].sort());
    await source().clearTransit(rows.map((r) => r.id));
    expect(await source().countQueueTasksHeld(queue)).toBe(0);
  });
});

describe("pack store: a finished pack moved", () => {
  it("keeps its finish time on the destination (retention counts from it, never from the move)", async () => {
    const queue = uniqueQueue("pt-finished");
    await source().enqueueTasks(queue, many(2), T0);
    const leased = await source().leaseTasks({ queue, max: 2, visibilityTimeoutS: VT_S, holder: "w" }, T0 + 1);
    await source().completeTasks(
      leased.map((t) => ({ id: t.id, leaseToken: t.leaseToken! })),
      T0 + 5,
    );
    expect(await source().takeOutForTransit({ queue }, TO, 200, T0 + 100_000)).toBe(2);
    const rows = await transitOf(source(), queue);
    await dest().putInFromTransit(rows);
    await source().clearTransit(rows.map((r) => r.id));
    expect((await packsOf(openDb(env.DB_1), queue)).map((p) => [p.st, p.finished_at])).toEqual([["cc", T0 + 5]]);
    expect(await dest().findQueuesWithLiveTasks([queue])).toEqual([]);
    expect(await dest().hasQueueData(queue)).toBe(true);
    expect(await source().hasQueueData(queue)).toBe(false);
  });
});

describe("pack store: two relays at once", () => {
  it("two take-outs at once take each task once; two put-ins of the same rows at once make one copy", async () => {
    const queue = uniqueQueue("pt-twice");
    const { tasks } = await source().enqueueTasks(queue, many(30), T0);
    const taken = await Promise.all([
      source().takeOutForTransit({ queue }, TO, 200, T0 + 1),
      source().takeOutForTransit({ queue }, TO, 200, T0 + 1),
    ]);
    expect(taken.sort()).toEqual([0, 30]);
    const rows = await transitOf(source(), queue);
    expect(rows.map((r) => r.id)).toEqual(tasks.map((t) => t.id));
    // The first to commit makes the pack's copy; the other's guard (the copy absent) fails, and computed
    // again it finds every task here.
    await Promise.all([dest().putInFromTransit(rows), dest().putInFromTransit(rows)]);
    expect((await packsOf(openDb(env.DB_1), queue)).map((p) => p.st)).toEqual(["p".repeat(30)]);
    expect((await tasksOf(dest(), queue)).map((t) => t.id)).toEqual(tasks.map((t) => t.id));
    const cleared = await Promise.all([
      source().clearTransit(rows.map((r) => r.id)),
      source().clearTransit(rows.map((r) => r.id)),
    ]);
    expect(cleared[0]!.length + cleared[1]!.length).toBe(30);
  });
});

describe("pack store: rows a move writes (D1's rows_written), against the row store", () => {
  it("per moved task at 1 and 100 tasks a pack: take-out, put-in, clear", async () => {
    const measure = async (kind: "pack" | "d1", n: number) => {
      const from = meteredD1(env.DB);
      const to = meteredD1(env.DB_1);
      const make = kind === "pack" ? packTaskStore : d1TaskStore;
      const src = make(openDb(from.db)) as unknown as TaskStore;
      const dst = make(openDb(to.db)) as unknown as TaskStore;
      const queue = uniqueQueue(`pt-rows-${kind}-${n}`);
      await src.enqueueTasks(queue, many(n), T0);
      const out = await rowsWritten([from], () => src.takeOutForTransit({ queue }, TO, 200, T0 + 1));
      const rows = await transitOf(src, queue);
      const outRead = from.usage.rowsRead;
      const put = await rowsWritten([to], () => dst.putInFromTransit(rows));
      const putRead = to.usage.rowsRead;
      const clear = await rowsWritten([from], () => src.clearTransit(rows.map((r) => r.id)));
      console.log(`rows read by a move (${kind}, ${n}): take-out ${outRead}, put-in ${putRead}`);
      return { out, put, clear };
    };
    const figures = {
      pack1: await measure("pack", 1),
      pack100: await measure("pack", 100),
      d1_1: await measure("d1", 1),
      d1_100: await measure("d1", 100),
    };
    console.log("rows written by a move", JSON.stringify(figures));
    // Take-out: each transit row (its row and its primary-key index entry: `task_transit` has a rowid) and
    // the pack's row deleted; put-in: the pack's row and its live-index entry; clear: each transit row. The
    // row store writes as much for one task, and a row and its live-index entry per task put in.
    expect(figures.pack1).toEqual({ out: 3, put: 2, clear: 1 });
    expect(figures.pack100).toEqual({ out: 201, put: 2, clear: 100 });
    const total = (f: { out: number; put: number; clear: number }) => f.out + f.put + f.clear;
    expect(total(figures.pack1)).toBeLessThanOrEqual(total(figures.d1_1));
    expect(total(figures.pack100)).toBeLessThan(total(figures.d1_100));
  });
});
