import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { db, uniqueQueue } from "../helpers";
import { call, complete, enqueue, expectError, leaseOne, type Task } from "./api";

interface Page {
  tasks: Task[];
  next_cursor: string | null;
}

const list = (queue: string, query: string) => call<Page>("GET", `/v1/queues/${queue}/tasks?${query}`);

describe("GET /v1/queues/{queue}/tasks?dedupe_key=", () => {
  it("finds the tasks with exactly that dedupe key, live and finished, and narrows by state", async () => {
    const queue = uniqueQueue("dedupe-list");
    const [first] = await enqueue(queue, { dedupe_key: "invoice-42" });
    await enqueue(queue, { tasks: [{ dedupe_key: "invoice-43" }, { dedupe_key: "invoice-4" }, {}] });
    const leased = await leaseOne(queue);
    expect(leased.id).toBe(first!.id);
    expect((await complete(first!.id, leased.lease_token)).status).toBe(200);
    // The key is free again once its task finished: a second task takes it.
    const [second] = await enqueue(queue, { dedupe_key: "invoice-42" });

    const all = await list(queue, "dedupe_key=invoice-42");
    expect(all.status, all.text).toBe(200);
    expect(all.body.tasks.map((t) => [t.id, t.state])).toEqual([
      [first!.id, "completed"],
      [second!.id, "pending"],
    ]);
    const live = await list(queue, "dedupe_key=invoice-42&state=pending");
    expect(live.body.tasks.map((t) => t.id)).toEqual([second!.id]);
    // Exact, not a prefix; and a key nobody has is an empty page, not an error.
    expect((await list(queue, "dedupe_key=invoice-4")).body.tasks.map((t) => t.dedupe_key)).toEqual(["invoice-4"]);
    expect(await list(queue, "dedupe_key=nobody").then((r) => r.body)).toEqual({ tasks: [], next_cursor: null });
  });

  it("pages through many tasks of one key with the cursor", async () => {
    const queue = uniqueQueue("dedupe-page");
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const [task] = await enqueue(queue, { dedupe_key: "same" });
      const held = await leaseOne(queue);
      expect((await complete(held.id, held.lease_token)).status).toBe(200);
      ids.push(task!.id);
    }
    const one = await list(queue, "dedupe_key=same&limit=2");
    expect(one.body.tasks.map((t) => t.id)).toEqual(ids.slice(0, 2));
    const two = await list(queue, `dedupe_key=same&limit=2&cursor=${one.body.next_cursor}`);
    expect(two.body).toEqual({ tasks: [expect.objectContaining({ id: ids[2] })], next_cursor: null });
  });

  it("refuses a key longer than a dedupe key can be, naming the field", async () => {
    expectError(
      await list(uniqueQueue("dedupe-bad"), `dedupe_key=${"k".repeat(257)}`),
      400,
      "invalid_request",
      /dedupe_key/,
    );
  });

  it("searches live tasks of a key through the live-dedupe index, not by reading the queue", async () => {
    const queue = uniqueQueue("dedupe-plan");
    // Every shard has the same schema: the plan is asked of one.
    const plan = await db().all<{ detail: string }>(
      sql`EXPLAIN QUERY PLAN SELECT id FROM tasks WHERE queue = ${queue} AND state = 'pending'
        AND dedupe_key = ${"k"} AND finished_at IS NULL ORDER BY id LIMIT 51`,
    );
    expect(plan.map((p) => p.detail).join("\n")).toMatch(/tasks_live_dedupe/);
  });
});
