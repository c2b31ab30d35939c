import { env } from "cloudflare:workers";
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { openDb } from "../../src/db/client";
import { enqueueTasks } from "../../src/engine/enqueue";
import { putQueueConfig } from "../../src/engine/queue-config";
import { ProcessingChanged, PULL } from "../../src/engine/queue-processing";
import { db, PROCESSORS, T0, uniqueQueue } from "../helpers";
import { meteredD1 } from "../support/metered-d1";

// An enqueue told which processing its tasks were checked for (src/operations/enqueue-checks.ts) stores
// nothing when the queue's stored processing differs, and says what it is; when it matches, it stores and
// counts as an unguarded enqueue does, writing the same rows.

async function stored(queue: string): Promise<{ tasks: number; counted: number }> {
  const tasks = await db().get<{ n: number }>(sql`SELECT count(*) AS n FROM tasks WHERE queue = ${queue}`);
  const counted = await db().get<{ n: number | null }>(
    sql`SELECT sum(enqueued) AS n FROM task_counters WHERE queue = ${queue}`,
  );
  return { tasks: tasks!.n, counted: counted!.n ?? 0 };
}

describe("enqueueTasks checkedFor", () => {
  it("stores nothing when the queue is push and the tasks were checked for pull, and names the processing", async () => {
    const queue = uniqueQueue("guard");
    await putQueueConfig(db(), queue, { mode: "push", processor: "echo" }, T0, PROCESSORS);
    const error = await enqueueTasks(db(), queue, [{ type: "x" }, { type: "y" }], T0, { checkedFor: PULL }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ProcessingChanged);
    expect((error as ProcessingChanged).processing).toEqual({ mode: "push", processor: "echo" });
    expect(await stored(queue)).toEqual({ tasks: 0, counted: 0 });
  });

  it("stores nothing when another processor now runs the queue, or when it turned pull", async () => {
    const queue = uniqueQueue("guard");
    await putQueueConfig(db(), queue, { mode: "push", processor: "tag" }, T0, PROCESSORS);
    const echo = { mode: "push", processor: "echo" } as const;
    await expect(enqueueTasks(db(), queue, [{}], T0, { checkedFor: echo })).rejects.toBeInstanceOf(ProcessingChanged);
    await putQueueConfig(db(), queue, { mode: "pull" }, T0, PROCESSORS);
    await expect(enqueueTasks(db(), queue, [{}], T0, { checkedFor: echo })).rejects.toMatchObject({
      processing: PULL,
    });
    expect(await stored(queue)).toEqual({ tasks: 0, counted: 0 });
  });

  it("stores and counts as checked when the processing matches, writing the rows an unguarded enqueue writes", async () => {
    const written = async (queue: string, checked: boolean) => {
      const meter = meteredD1(env.DB);
      const tasks = Array.from({ length: 20 }, (_, i) => ({ type: "echo", payload: { text: `${i}` } }));
      const push = { mode: "push", processor: null } as const;
      await enqueueTasks(openDb(meter.db), queue, tasks, T0, checked ? { checkedFor: push } : {});
      return meter.usage.rowsWritten;
    };
    const guarded = uniqueQueue("guard");
    const plain = uniqueQueue("guard");
    for (const queue of [guarded, plain]) await putQueueConfig(db(), queue, { mode: "push" }, T0, PROCESSORS);
    expect(await written(guarded, true)).toBe(await written(plain, false));
    expect(await stored(guarded)).toEqual({ tasks: 20, counted: 20 });
    // A queue with no stored config is a pull queue.
    const fresh = uniqueQueue("guard");
    expect((await enqueueTasks(db(), fresh, [{}], T0, { checkedFor: PULL })).tasks).toHaveLength(1);
  });

  it("guards an enqueue of client ids too (its insert is not batched with counters)", async () => {
    const queue = uniqueQueue("guard");
    await putQueueConfig(db(), queue, { mode: "push" }, T0, PROCESSORS);
    const id = "01KB0000000000000000000000";
    await expect(enqueueTasks(db(), queue, [{ id }], T0, { checkedFor: PULL })).rejects.toBeInstanceOf(
      ProcessingChanged,
    );
    expect(await stored(queue)).toEqual({ tasks: 0, counted: 0 });
  });
});
