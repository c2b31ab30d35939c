import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { T0, db, uniqueQueue } from "../../helpers";
import { storeFixtures } from "../conformance/fixtures";
import { D1_STORE } from "../conformance/store-kinds";

// D1 store only: a completion and its children's insert are one D1 batch. Shown by making the insert fail
// with a spec stored behind the engine's back (a NOT NULL column), which only this store's SQL can do.

const { store, enqueueOne, leaseOne, row } = storeFixtures(D1_STORE);

async function childrenOf(parentId: string) {
  return Promise.all((await D1_STORE.childrenOf(parentId)).map((id) => row(id)));
}

describe("then on D1: the children's insert and the completion are one batch", () => {
  it("a child that cannot be inserted rolls the whole completion back: the parent is not completed either", async () => {
    const queue = uniqueQueue("chain");
    const parentId = await enqueueOne(queue, { type: "parent", then: [{ type: "fine" }] });
    const parent = await leaseOne(queue, T0);
    expect(parent.id).toBe(parentId);
    // A spec the API would refuse, stored directly: the child insert violates tasks.type NOT NULL.
    await db().run(
      sql`UPDATE tasks SET then_tasks = ${JSON.stringify([{ type: "fine" }, { type: null }])} WHERE id = ${parent.id}`,
    );
    const before = await row(parent.id);

    await expect(
      store().completeTasks([{ id: parent.id, leaseToken: parent.leaseToken, result: { x: 1 } }], T0 + 10),
    ).rejects.toThrow(/NOT NULL/i);

    expect(await row(parent.id)).toEqual(before);
    expect(before).toMatchObject({ state: "processing", result: null, leaseToken: parent.leaseToken });
    expect(await childrenOf(parent.id)).toEqual([]);

    // The token was not consumed: with a valid spec the same completion now goes through.
    await db().run(sql`UPDATE tasks SET then_tasks = ${JSON.stringify([{ type: "fine" }])} WHERE id = ${parent.id}`);
    const [outcome] = await store().completeTasks(
      [{ id: parent.id, leaseToken: parent.leaseToken, result: { x: 1 } }],
      T0 + 11,
    );
    expect(outcome).toMatchObject({ ok: true, state: "completed" });
    expect((await childrenOf(parent.id)).map((c) => c.type)).toEqual(["fine"]);
  });
});
