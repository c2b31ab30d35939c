import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { T0, db, uniqueQueue } from "../../helpers";
import { storeFixtures } from "../conformance/fixtures";
import { D1_STORE } from "../conformance/store-kinds";

// D1 store only: what a transit row's `row` is on this store — the task's whole `tasks` row as a JSON
// object of its columns (the port leaves it to each store; test/engine/transit.test.ts checks it round-trips).

const { store, enqueueMany } = storeFixtures(D1_STORE);

describe("a transit row on D1", () => {
  it("holds its task's row, every column as stored", async () => {
    const queue = uniqueQueue("transit-row");
    const [id] = await enqueueMany(queue, [{ payload: 1, dedupeKey: "k", group: "g" }]);
    const [before] = await db().all(sql`SELECT * FROM tasks WHERE id = ${id}`);

    expect(await store().takeOutForTransit({ queue }, { shard: "DB_1", slot: 7 }, 200, T0 + 50)).toBe(1);
    const [row] = (await store().listTransit(1_000)).filter((r) => r.queue === queue);
    expect(row).toMatchObject({ id, dest: "DB_1", slot: 7 });
    // All but the counter events its row may keep (src/engine/counters-in-row.ts): those stay counted here.
    const travelling = Object.fromEntries(Object.entries(before as object).filter(([k]) => k !== "uncounted"));
    expect(JSON.parse(row!.row)).toEqual(travelling);
    await store().clearTransit([id!]);
  });
});
