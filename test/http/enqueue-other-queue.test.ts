import { env } from "cloudflare:workers";
import { sql } from "drizzle-orm";
import { ulid } from "ulid";
import { describe, expect, it } from "vitest";
import { rankShards } from "../../src/shards/directory";
import { allShards, shardNames } from "../../src/shards/shard-set";
import { snapshot, uniqueQueue } from "../helpers";
import { call, enqueue, enqueueOne, expectError, getTask } from "./api";

/** A fresh queue whose first partition the directory places on `shard` (rendezvous hashing of its name). */
function queueOn(shard: string, prefix: string): string {
  for (;;) {
    const queue = uniqueQueue(prefix);
    if (rankShards(queue, shardNames(env))[0] === shard) return queue;
  }
}

/** Every row, on every shard, with this id. */
async function rowsWithId(id: string): Promise<unknown[]> {
  const found = await Promise.all(
    allShards(env).map((s) => s.db.all(sql`SELECT id, queue FROM tasks WHERE id = ${id}`)),
  );
  return found.flat();
}

// The test environment binds two shards (wrangler.toml [env.local]): the two queues on one database, and on
// two — where the engine alone cannot see the other queue's task.
describe.each([
  ["on the same shard", "DB", "DB"],
  ["on different shards", "DB", "DB_1"],
])("an enqueue whose id is a task of another queue, %s", (_, shardA, shardB) => {
  it("is 409 id_in_other_queue naming that queue; nothing is enqueued, the other task is untouched", async () => {
    const a = queueOn(shardA, "ida");
    const b = queueOn(shardB, "idb");
    const id = ulid();
    await enqueue(a, { id, payload: { for: "a" } });

    const res = await call("POST", `/v1/queues/${b}/tasks`, { body: { id, payload: { for: "b" } } });
    expectError(res, 409, "id_in_other_queue", new RegExp(`tasks\\[0\\]\\.id: ${id} belongs to queue ${a}\\b`));

    expect(await snapshot(b)).toEqual([]);
    expect(await rowsWithId(id)).toEqual([{ id, queue: a }]);
    expect(await getTask(id)).toMatchObject({ id, queue: a, payload: { for: "a" } });
  });

  it("refuses a batch whole: none of its other tasks is enqueued", async () => {
    const a = queueOn(shardA, "ida");
    const b = queueOn(shardB, "idb");
    const taken = ulid();
    await enqueue(a, { id: taken });
    const fresh = [ulid(), ulid()];

    const res = await call("POST", `/v1/queues/${b}/tasks`, {
      body: { tasks: [{ id: fresh[0] }, { payload: "server id" }, { id: taken }, { id: fresh[1] }] },
    });
    expectError(res, 409, "id_in_other_queue", new RegExp(`^tasks\\[2\\]\\.id: ${taken} belongs to queue ${a}\\b`));
    expect(await snapshot(b)).toEqual([]);
    for (const id of fresh) expect(await rowsWithId(id)).toEqual([]);
    // The refused ids are free: the same batch without the other queue's id goes through.
    const retried = await enqueue(b, { tasks: [{ id: fresh[0] }, { id: fresh[1] }] });
    expect(retried.map((t) => t.deduplicated)).toEqual([false, false]);
  });

  it("refuses an id edgeq made for the other queue, given back as a client id", async () => {
    const a = queueOn(shardA, "ida");
    const b = queueOn(shardB, "idb");
    const id = await enqueueOne(a, { payload: 1 });

    const res = await call("POST", `/v1/queues/${b}/tasks`, { body: { id } });
    expectError(res, 409, "id_in_other_queue", new RegExp(`belongs to queue ${a}\\b`));
    expect(await snapshot(b)).toEqual([]);
    expect(await rowsWithId(id)).toEqual([{ id, queue: a }]);
  });
});

describe("an enqueue whose id is a task of the same queue", () => {
  it("still answers 201 deduplicated with that task (a retry)", async () => {
    const queue = uniqueQueue("idsame");
    const id = ulid();
    await enqueue(queue, { id, payload: 1 });
    const again = await call<{ tasks: unknown[] }>("POST", `/v1/queues/${queue}/tasks`, { body: { id, payload: 2 } });
    expect(again.status).toBe(201);
    expect(again.body.tasks).toEqual([{ id, state: "pending", deduplicated: true }]);
    // An id edgeq made, given back to its own queue, is the same task too.
    const made = await enqueueOne(queue, { payload: 3 });
    const back = await call<{ tasks: unknown[] }>("POST", `/v1/queues/${queue}/tasks`, { body: { id: made } });
    expect(back.body.tasks).toEqual([{ id: made, state: "pending", deduplicated: true }]);
    expect(await snapshot(queue)).toHaveLength(2);
  });
});
