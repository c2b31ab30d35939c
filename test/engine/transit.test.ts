import { env } from "cloudflare:workers";
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { openDb, type Db } from "../../src/db/client";
import { enqueueTasks } from "../../src/engine/enqueue";
import {
  clearTransit,
  isInTransit,
  listTransit,
  putInFromTransit,
  takeOutForTransit,
  type DeliveredRow,
  type TransitRow,
} from "../../src/engine/transit";
import { T0, db, uniqueQueue } from "../helpers";
import { completedTask, enqueueMany, enqueueOne, leaseOne } from "./fixtures";

/** The source is the engine tests' database (DB); the destination the second one bound locally. */
const source = (): Db => db();
const dest = (): Db => openDb(env.DB_1);
const TO = { shard: "DB_1", slot: 7 };

async function rowsOf(on: Db, queue: string): Promise<Array<Record<string, unknown>>> {
  return on.all(sql`SELECT * FROM tasks WHERE queue = ${queue} ORDER BY id`);
}

/** This queue's tasks in transit out of the source (other tests' may be there too). */
async function transitOf(queue: string): Promise<TransitRow[]> {
  return (await listTransit(source(), 1_000)).filter((r) => r.queue === queue);
}

/** Rows as a delivery puts them in: keeping the slot column they had. */
function delivered(rows: TransitRow[]): DeliveredRow[] {
  return rows.map((r) => ({ ...r, rowSlot: (JSON.parse(r.row) as { slot: number | null }).slot }));
}

/** Takes the queue's tasks out, puts them in on the destination and clears them: one whole relay step. */
async function relay(queue: string, now = T0 + 100): Promise<void> {
  await takeOutForTransit(source(), { queue }, TO, 200, now);
  const rows = await transitOf(queue);
  await putInFromTransit(dest(), delivered(rows));
  await clearTransit(
    source(),
    rows.map((r) => r.id),
  );
}

describe("takeOutForTransit", () => {
  it("turns up to `limit` selected tasks from live into in-transit, each recorded whole with its destination", async () => {
    const queue = uniqueQueue("transit-out");
    const other = uniqueQueue("transit-stay");
    const ids = await enqueueMany(queue, [{ payload: 1 }, { payload: 2 }, { payload: 3 }]);
    const stays = await enqueueOne(other);
    const before = await rowsOf(source(), queue);

    expect(await takeOutForTransit(source(), { queue }, TO, 2, T0 + 50)).toBe(2);
    expect((await rowsOf(source(), queue)).map((r) => r.id)).toEqual([ids[2]]);
    const first = await transitOf(queue);
    expect(first.map((r) => r.id)).toEqual(ids.slice(0, 2));
    expect(first[0]).toMatchObject({ dest: "DB_1", slot: 7 });
    expect(JSON.parse(first[0]!.row)).toEqual(before[0]);

    expect(await takeOutForTransit(source(), { queue }, TO, 2, T0 + 60)).toBe(1);
    expect(await takeOutForTransit(source(), { queue }, TO, 2, T0 + 70)).toBe(0);
    expect(await rowsOf(source(), queue)).toEqual([]);
    expect((await transitOf(queue)).map((r) => r.id)).toEqual(ids);
    expect((await rowsOf(source(), other)).map((r) => r.id)).toEqual([stays]);
    await clearTransit(source(), ids);
  });

  it("takes only live tasks when asked, and only ids matching the GLOB pattern when given one", async () => {
    const queue = uniqueQueue("transit-select");
    const done = await completedTask(queue);
    const live = await enqueueOne(queue);
    expect(await takeOutForTransit(source(), { queue, liveOnly: true }, TO, 200, T0 + 10)).toBe(1);
    expect((await transitOf(queue)).map((r) => r.id)).toEqual([live]);
    expect((await rowsOf(source(), queue)).map((r) => r.id)).toEqual([done]);
    await clearTransit(source(), [live]);

    // A partition's tasks: ids carrying its slot (unless their slot column names another partition), and
    // ids of any form whose slot column names it.
    const slotted = "01JAAAAAAAQRST000000000001";
    const unslotted = "01JAAAAAAAWXYZ000000000002";
    const named = "01JAAAAAAAWXYZ000000000003";
    const elsewhere = "01JAAAAAAAQRST000000000004";
    const glob = uniqueQueue("transit-glob");
    await enqueueMany(glob, [{ id: slotted }, { id: unslotted }, { id: named, slot: 7 }, { id: elsewhere, slot: 8 }]);
    const partition = { slot: 7, idGlob: "??????????QRST*" };
    expect(await takeOutForTransit(source(), { queue: glob, partition }, TO, 200, T0 + 10)).toBe(2);
    expect((await transitOf(glob)).map((r) => r.id)).toEqual([slotted, named]);
    expect((await rowsOf(source(), glob)).map((r) => r.id).sort()).toEqual([elsewhere, unslotted]);
    await clearTransit(source(), [slotted, named]);
  });
});

describe("putInFromTransit", () => {
  it("inserts every task as it was (a held lease keeps its token), and a repeat inserts nothing twice", async () => {
    const queue = uniqueQueue("transit-in");
    await enqueueMany(queue, [{ payload: "a", dedupeKey: "k" }, { payload: "b", priority: 5 }, { payload: "c" }]);
    const held = await leaseOne(queue, T0 + 1);
    const before = await rowsOf(source(), queue);
    await takeOutForTransit(source(), { queue }, TO, 200, T0 + 2);
    const rows = await transitOf(queue);
    expect(rows).toHaveLength(3);
    for (const row of rows) expect(await isInTransit(source(), row.id)).toBe(true);

    await putInFromTransit(dest(), delivered(rows));
    expect(await rowsOf(dest(), queue)).toEqual(before);
    // A crash before the clear: the next relay delivers the same rows again.
    await putInFromTransit(dest(), delivered(rows));
    expect(await rowsOf(dest(), queue)).toEqual(before);
    expect((await rowsOf(dest(), queue)).find((r) => r.id === held.id)).toMatchObject({
      lease_token: held.leaseToken,
      state: "processing",
    });

    await clearTransit(
      source(),
      rows.map((r) => r.id),
    );
    for (const row of rows) expect(await isInTransit(source(), row.id)).toBe(false);
    expect(await transitOf(queue)).toEqual([]);
  });

  it("drops a dedupe key a live task on the destination holds, keeping the task; a finished holder takes nothing", async () => {
    const queue = uniqueQueue("transit-key");
    const [kept] = (await enqueueTasks(dest(), queue, [{ dedupeKey: "live" }], T0)).tasks;
    const finished = await enqueueTasks(dest(), queue, [{ dedupeKey: "done" }], T0);
    await dest().run(
      sql`UPDATE tasks SET state = 'completed', finished_at = ${T0 + 1} WHERE id = ${finished.tasks[0]!.id}`,
    );
    const [clash, free] = await enqueueMany(queue, [{ dedupeKey: "live" }, { dedupeKey: "done" }], T0 + 5);

    await relay(queue);
    const landed = new Map((await rowsOf(dest(), queue)).map((r) => [r.id, r.dedupe_key]));
    expect(landed.get(kept!.id)).toBe("live");
    expect(landed.get(clash!)).toBeNull();
    expect(landed.get(free!)).toBe("done");
    expect(landed.size).toBe(4);
  });

  it("puts in, without its key, a task whose key another task of the same rows took first", async () => {
    const queue = uniqueQueue("transit-twins");
    // The first child leaves for its queue's shard; a second with the same key is enqueued where the first
    // was (its key is free there now) and follows: both are in transit together.
    const first = await enqueueOne(queue, { dedupeKey: "twin" }, T0);
    await takeOutForTransit(source(), { queue }, TO, 200, T0 + 1);
    const second = await enqueueOne(queue, { dedupeKey: "twin" }, T0 + 2);
    await takeOutForTransit(source(), { queue }, TO, 200, T0 + 3);
    const rows = await transitOf(queue);
    expect(rows.map((r) => r.id)).toEqual([first, second]);

    await putInFromTransit(dest(), delivered(rows));
    const landed = await rowsOf(dest(), queue);
    expect(landed.map((r) => [r.id, r.dedupe_key, r.state])).toEqual([
      [first, "twin", "pending"],
      [second, null, "pending"],
    ]);
    await clearTransit(source(), [first, second]);
  });

  it("does nothing for no rows", async () => {
    await expect(putInFromTransit(dest(), [])).resolves.toBeUndefined();
  });
});
