import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { readPlacements } from "../../src/shards/directory";
import { uniqueQueue } from "../helpers";
import { shard } from "./support";
import { call, type Enqueued } from "../http/api";

// Uniqueness over time on a partitioned queue: a keyed task is placed by its key (src/shards/queue-route.ts),
// so each key's claim and its task are on one database and checked there atomically.
describe("keys of a partitioned queue", () => {
  it("concurrent enqueues of 10 idempotency keys over 2 partitions on 2 shards make 10 tasks, each beside its key", async () => {
    const queue = uniqueQueue("parts-keys");
    await call("PUT", `/v1/queues/${queue}/config`, { body: { partitions: 2 } });
    expect((await readPlacements(shard("DB"), queue)).map((p) => p.shard).sort()).toEqual(["DB", "DB_1"]);
    const answers = await Promise.all(
      Array.from({ length: 120 }, (_, n) =>
        call<Enqueued>("POST", `/v1/queues/${queue}/tasks`, {
          body: { payload: { n }, idempotency: { key: `k${n % 10}`, window_s: 600 } },
        }),
      ),
    );
    expect(answers.every((a) => a.status === 201)).toBe(true);
    const byKey = new Map<string, Set<string>>();
    answers.forEach((a, n) => byKey.set(`k${n % 10}`, (byKey.get(`k${n % 10}`) ?? new Set()).add(a.body.tasks[0]!.id)));
    expect([...byKey.values()].every((ids) => ids.size === 1)).toBe(true);
    let tasks = 0;
    for (const name of ["DB", "DB_1"]) {
      const db = shard(name);
      const here = await db.all<{ id: string }>(sql`SELECT id FROM tasks WHERE queue = ${queue}`);
      const keys = await db.all<{ key: string; task_id: string }>(
        sql`SELECT key, task_id FROM idempotency_keys WHERE queue = ${queue}`,
      );
      // Every key row names a task of the same database.
      expect(keys.map((k) => k.task_id).sort()).toEqual(here.map((t) => t.id).sort());
      tasks += here.length;
    }
    expect(tasks).toBe(10);
  });
});
