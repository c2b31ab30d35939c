import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { readPlacements } from "../../src/shards/directory";
import { openDb } from "../../src/db/client";
import { uniqueQueue } from "../helpers";
import { call, enqueueOne, expectError } from "./api";

const placementsOf = (queue: string) => readPlacements(openDb(env.DB), queue);

describe("placement and move of a queue never used (no task, no stored config)", () => {
  it("GET /placement is 404 not_found naming the queue", async () => {
    const queue = uniqueQueue("never");
    const res = await call("GET", `/v1/queues/${queue}/placement`);
    expectError(res, 404, "not_found", `queue ${queue} not found: it has no task and no stored config`);
  });

  it("POST /move is 404 not_found, and places nothing for the name", async () => {
    const queue = uniqueQueue("never");
    const res = await call("POST", `/v1/queues/${queue}/move`, { body: { shard: "DB_1" } });
    expectError(res, 404, "not_found", `queue ${queue} not found`);
    expect(await placementsOf(queue)).toEqual([]);
    // The other shard too: the answer does not depend on where the name would have been placed.
    const other = await call("POST", `/v1/queues/${queue}/move`, { body: { shard: "DB" } });
    expectError(other, 404, "not_found");
    expect(await placementsOf(queue)).toEqual([]);
  });

  it("answers for a queue with only a stored config, or with a task (GET /v1/queues lists both)", async () => {
    const configured = uniqueQueue("cfg");
    expect((await call("PUT", `/v1/queues/${configured}/config`, { body: { max_attempts: 5 } })).status).toBe(200);
    const placement = await call<{ partitions: unknown[] }>("GET", `/v1/queues/${configured}/placement`);
    expect(placement.status).toBe(200);
    expect(placement.body.partitions).toHaveLength(1);

    const used = uniqueQueue("used");
    await enqueueOne(used, { payload: 1 });
    const placed = await call<{ partitions: Array<{ shard: string }> }>("GET", `/v1/queues/${used}/placement`);
    expect(placed.status).toBe(200);
    // A move of it is refused only for what it asks (a queue already there), not as unknown.
    const there = await call("POST", `/v1/queues/${used}/move`, { body: { shard: placed.body.partitions[0]!.shard } });
    expectError(there, 409, "move_conflict");
  });
});
