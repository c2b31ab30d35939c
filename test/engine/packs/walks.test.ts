import { env } from "cloudflare:workers";
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { openDb } from "../../../src/db/client";
import { besideUnrelatedEdges } from "../../support/unrelated-edges";
import { packTaskStore } from "../../../src/engine/packs/pack-store";
import { PURGE_LIVE_PACKS_WALKED } from "../../../src/engine/packs/purge";
import { T0, uniqueQueue } from "../../helpers";
import { meteredD1 } from "../../support/metered-d1";

// What a purge and a retention pass over packs read beside many live packs (docs/design/packs.md, "Purge and
// retention walk what they need"): each walks its queue's finished packs (`packs_done`, migration 0023) and —
// the purge only — a bounded front of its live ones (`packs_live`), never the whole table. Rows read measured
// with D1's meta.

const DAY_MS = 86_400_000;
/** This file's time range (pack ids are time-ordered; purges and the prune look below a time). */
const AT = T0 + 60 * DAY_MS;
/** Live packs beside the measured ones. */
const LIVE_PACKS = 300;

const store = () => packTaskStore(openDb(env.DB));

/** LIVE_PACKS packs of two pending tasks on their own queue, created at AT: one call, a type per pack. */
async function liveBacklog(): Promise<string> {
  const queue = uniqueQueue("walk-live");
  const tasks = Array.from({ length: 2 * LIVE_PACKS }, (_, i) => ({ type: `t${i >> 1}` }));
  await store().enqueueTasks(queue, tasks, AT);
  const packs = await openDb(env.DB).all<{ n: number }>(sql`SELECT count(*) AS n FROM packs WHERE queue = ${queue}`);
  expect(packs[0]!.n).toBe(LIVE_PACKS);
  return queue;
}

/** A pack of two tasks of `queue`, completed at `at` + 2. */
async function finishedPack(queue: string, at: number): Promise<string[]> {
  const ids = (await store().enqueueTasks(queue, [{}, {}], at)).tasks.map((t) => t.id);
  const leased = await store().leaseTasks({ queue, max: 2, visibilityTimeoutS: 60, holder: "w" }, at + 1);
  await store().completeTasks(
    leased.map((t) => ({ id: t.id, leaseToken: t.leaseToken! })),
    at + 2,
  );
  return ids;
}

/** Rows read by `run` on a metered store. */
async function rowsRead<T>(run: (s: ReturnType<typeof packTaskStore>) => Promise<T>): Promise<[T, number]> {
  const meter = meteredD1(env.DB);
  const answer = await run(packTaskStore(openDb(meter.db)));
  return [answer, meter.usage.rowsRead];
}

describe("pack store: purge and retention walk what they need", () => {
  it("a purge reads its queue's packs, not another queue's live ones; a purge of a live backlog reads a bounded front", async () => {
    const live = await liveBacklog();
    const queue = uniqueQueue("walk-purge");
    await finishedPack(queue, AT + 10);
    const [purged, read] = await rowsRead((s) => s.purgeTasks(queue, { before: AT + 20 }));
    expect(purged).toEqual({ purged: 2 });
    console.log(`purge of one finished pack beside ${LIVE_PACKS} live packs: ${read} rows read`);
    expect(read).toBeLessThan(50);
    // A purge of the backlog's queue (nothing finished) reads at most the bounded front of its live packs.
    const [none, backlogRead] = await rowsRead((s) => s.purgeTasks(live, { before: AT + 20 }));
    expect(none).toEqual({ purged: 0 });
    console.log(`purge of a queue of ${LIVE_PACKS} live packs, none finished: ${backlogRead} rows read`);
    // The front: its index entries and their rows (one each), whatever the backlog behind.
    expect(backlogRead).toBeLessThanOrEqual(2 * PURGE_LIVE_PACKS_WALKED + 20);
  });

  it("a finished slot in a live pack at the queue's front is purged", async () => {
    const queue = uniqueQueue("walk-purge-front");
    const ids = (await store().enqueueTasks(queue, [{}, {}, {}], AT)).tasks.map((t) => t.id);
    const [first] = await store().leaseTasks({ queue, max: 1, visibilityTimeoutS: 60, holder: "w" }, AT + 1);
    await store().completeTasks([{ id: first!.id, leaseToken: first!.leaseToken! }], AT + 2);
    expect(await store().purgeTasks(queue, { before: AT + 3 })).toEqual({ purged: 1 });
    expect(await store().findTaskState(ids[1]!)).toBe("pending");
  });

  it("a retention pass beside many live packs reads the finished ones, and prunes them", async () => {
    await liveBacklog();
    const queue = uniqueQueue("walk-prune");
    await store().putQueueConfig(queue, { retention_s: 60 }, AT, []);
    const now = AT + 30 + 120_000;
    // The suite's files share the database (isolate: false): what they left past retention is pruned first, so
    // the passes measured read this file's packs and what others keep.
    for (let i = 0; i < 30; i++) await store().pruneByRetention(now - 1);
    const doomed = await finishedPack(queue, AT + 30);
    const [pruned, read] = await rowsRead(async (s) => {
      let total = 0;
      for (let i = 0; i < 5; i++) total += (await s.pruneByRetention(now + i)).pruned;
      return total;
    });
    console.log(`5 retention passes beside ${2 * LIVE_PACKS} live packs: ${read} rows read, ${pruned} pruned`);
    expect(pruned).toBeGreaterThanOrEqual(1);
    expect(await openDb(env.DB).all(sql`SELECT id FROM packs WHERE id = ${doomed[0]!.slice(0, 24)}`)).toEqual([]);
    expect(read).toBeLessThan(LIVE_PACKS);
  });

  it("a retention pass beside many unrelated edges reads its window's edges, not the edge tables", async () => {
    const queue = uniqueQueue("walk-prune-edges");
    await store().putQueueConfig(queue, { retention_s: 60 }, AT, []);
    const now = AT + 40 + 120_000;
    // What other files left past retention pruned first (as above): the passes measured read this file's packs.
    for (let i = 0; i < 30; i++) await store().pruneByRetention(now - 1);
    // Edges of no task of this file (ids of a prefix no ULID has), in both edge tables: a delete that scanned
    // either table (the window's edges written inside its IN as a UNION ALL) read every one of them.
    const UNRELATED = 5_000;
    const edges = { prefix: `~${queue}-`, n: UNRELATED, remoteQueue: queue, at: AT };
    await besideUnrelatedEdges(openDb(env.DB), edges, async () => {
      const doomed = await finishedPack(queue, AT + 40);
      const [pruned, read] = await rowsRead(async (s) => {
        let total = 0;
        for (let i = 0; i < 5; i++) total += (await s.pruneByRetention(now + i)).pruned;
        return total;
      });
      expect(pruned).toBeGreaterThanOrEqual(1);
      expect(await openDb(env.DB).all(sql`SELECT id FROM packs WHERE id = ${doomed[0]!.slice(0, 24)}`)).toEqual([]);
      console.log(`5 retention passes beside ${UNRELATED} unrelated edges in each table: ${read} rows read`);
      // The scans read both tables: 10,041 rows (measured); by key, 52.
      expect(read).toBeLessThan(1_000);
    });
  });
});
