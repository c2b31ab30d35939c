import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { sql } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { EdgeqError } from "../../src/contracts/errors";
import { MAX_ENQUEUE_CHUNK_TASKS } from "../../src/contracts/limits";
import { readLiveFront } from "../../src/engine/live-front";
import { putQueueConfig } from "../../src/engine/queue-config";
import { REFERENCE_PROCESSORS } from "../../src/plugins/reference";
import { queueRoute } from "../../src/shards/queue-route";
import { createEdgeq } from "../../src/app/create-edgeq";
import { db, PROCESSORS, row, uniqueQueue } from "../helpers";
import { alarmOf, coordinator } from "../support/coordinator";
import { until } from "../support/until";

// edgeq.prepareEnqueue: an enqueue that goes into the user's own D1 batch, beside the user's own writes on
// the database the queue lives on — the user's row and the tasks commit together or not at all.

const edgeq = createEdgeq({ processors: REFERENCE_PROCESSORS });

/** A table of the user's own, beside edgeq's (docs/processors.md, "Your own tables"). */
beforeAll(async () => {
  await env.DB.exec("CREATE TABLE IF NOT EXISTS test_orders (id TEXT PRIMARY KEY, total INTEGER NOT NULL)");
});

const insertOrder = (id: string, total: number | null) =>
  env.DB.prepare("INSERT INTO test_orders (id, total) VALUES (?, ?)").bind(id, total);

async function orders(id: string): Promise<number> {
  return (await env.DB.prepare("SELECT count(*) AS n FROM test_orders WHERE id = ?").bind(id).first<number>("n"))!;
}

/** The queue's tasks and its `enqueued` counter, on the database under test. */
async function storedOf(queue: string): Promise<{ tasks: number; counted: number }> {
  const tasks = await db().get<{ n: number }>(sql`SELECT count(*) AS n FROM tasks WHERE queue = ${queue}`);
  const counted = await db().get<{ n: number | null }>(
    sql`SELECT sum(enqueued) AS n FROM task_counters WHERE queue = ${queue}`,
  );
  return { tasks: tasks!.n, counted: counted!.n ?? 0 };
}

/** A new queue placed on `shard` (the tests' Worker has two databases, DB and DB_1: placement is by name). */
async function queueOn(shard: "DB" | "DB_1", prefix = "batch"): Promise<string> {
  for (let tries = 0; tries < 50; tries++) {
    const queue = uniqueQueue(prefix);
    const route = await queueRoute(env, queue, Date.now());
    if (route.parts.every((part) => part.shard.name === shard)) return queue;
  }
  throw new Error(`test: no queue name placed on ${shard} in 50 tries`);
}

const refusal = (work: Promise<unknown>) =>
  work.then(
    () => expect.fail("expected a refusal"),
    (e: unknown) => e,
  );

describe("prepareEnqueue: the tasks commit with the user's batch", () => {
  it("commits the user's row and the tasks together, counted as an enqueue's", async () => {
    const queue = await queueOn("DB");
    const order = uniqueQueue("order");
    const enqueue = await edgeq.prepareEnqueue(env, env.DB, queue, {
      tasks: [
        { type: "receipt", payload: { order } },
        { type: "audit", payload: { order }, delay_s: 60 },
      ],
    });
    expect(enqueue.statements).toHaveLength(2);
    await env.DB.batch([insertOrder(order, 42), ...enqueue.statements]);
    expect(await orders(order)).toBe(1);
    expect(await storedOf(queue)).toEqual({ tasks: 2, counted: 2 });
    const [receipt, audit] = await Promise.all(enqueue.ids.map(row));
    expect(receipt).toMatchObject({ queue, type: "receipt", state: "pending", payload: JSON.stringify({ order }) });
    expect(audit!.runAt - receipt!.runAt).toBe(60_000);
  });

  it("leaves no task when a statement of the user's fails, before or after the enqueue's", async () => {
    const queue = await queueOn("DB");
    const order = uniqueQueue("order");
    await env.DB.batch([insertOrder(order, 1)]);
    for (const failing of ["before", "after"] as const) {
      const enqueue = await edgeq.prepareEnqueue(env, env.DB, queue, { type: "receipt", payload: { order } });
      const duplicate = insertOrder(order, 2); // the primary key is taken: the batch fails
      const batch = failing === "before" ? [duplicate, ...enqueue.statements] : [...enqueue.statements, duplicate];
      await expect(env.DB.batch(batch)).rejects.toThrow(/UNIQUE constraint failed: test_orders\.id/);
      // committed() after a failed batch wakes nobody's task: there is none.
      await enqueue.committed();
    }
    expect(await storedOf(queue)).toEqual({ tasks: 0, counted: 0 });
    // A NOT NULL violation of the user's, too.
    const enqueue = await edgeq.prepareEnqueue(env, env.DB, queue, { payload: { n: 1 } });
    await expect(env.DB.batch([insertOrder(uniqueQueue("order"), null), ...enqueue.statements])).rejects.toThrow(
      /NOT NULL/,
    );
    expect(await storedOf(queue)).toEqual({ tasks: 0, counted: 0 });
  });

  it("commits the user's row without a second task when a live task holds the dedupe key", async () => {
    const queue = await queueOn("DB");
    const key = "order-9";
    const first = await edgeq.prepareEnqueue(env, env.DB, queue, { payload: { n: 1 }, dedupe_key: key });
    await env.DB.batch([insertOrder(uniqueQueue("order"), 1), ...first.statements]);
    const second = await edgeq.prepareEnqueue(env, env.DB, queue, { payload: { n: 2 }, dedupe_key: key });
    const order = uniqueQueue("order");
    const results = await env.DB.batch([insertOrder(order, 2), ...second.statements]);
    expect(await orders(order)).toBe(1);
    // The insert's own result lists the ids it created: none.
    expect(results[1]!.results).toEqual([]);
    expect(await storedOf(queue)).toEqual({ tasks: 1, counted: 1 });
  });
});

describe("prepareEnqueue: after the batch", () => {
  it("committed() wakes the queue's coordinator: a push queue runs the task", async () => {
    const queue = await queueOn("DB", "batch-push");
    await putQueueConfig(db(), queue, { mode: "push", processor: "echo" }, Date.now(), PROCESSORS);
    const enqueue = await edgeq.prepareEnqueue(env, env.DB, queue, { payload: { text: "with the order" } });
    await env.DB.batch([insertOrder(uniqueQueue("order"), 3), ...enqueue.statements]);
    // Before committed(): the coordinator has heard of nothing.
    expect(await alarmOf(queue)).toBeNull();
    // committed() notifies it (its alarm, due now, may fire by itself: it is run here if still set). Without
    // the notify nothing would run the task: no alarm was set.
    await enqueue.committed();
    const done = await until("the pushed task to complete", async () => {
      await runDurableObjectAlarm(coordinator(queue));
      const task = await row(enqueue.ids[0]!);
      return task.state === "completed" && task;
    });
    expect(JSON.parse(done.result!)).toEqual({ text: "with the order" });
  });

  it("without committed(), the minute tick's walk finds the queue's due work (the tick then wakes it)", async () => {
    const queue = await queueOn("DB");
    const enqueue = await edgeq.prepareEnqueue(env, env.DB, queue, { payload: { n: 1 } });
    await env.DB.batch([insertOrder(uniqueQueue("order"), 4), ...enqueue.statements]);
    expect(await alarmOf(queue)).toBeNull();
    const front = (await readLiveFront(db(), Date.now())).find((f) => f.queue === queue);
    expect(front).toMatchObject({ queue, leasable: true });
  });
});

describe("prepareEnqueue refuses, preparing nothing", () => {
  it("a queue that lives on another database than the batch's, naming where it is", async () => {
    const queue = await queueOn("DB_1");
    const error = await refusal(edgeq.prepareEnqueue(env, env.DB, queue, { payload: {} }));
    expect(error).toBeInstanceOf(EdgeqError);
    expect(error).toMatchObject({ code: "invalid_request", message: expect.stringMatching(/DB_1.*placement/) });
    // On its own database it goes in.
    const enqueue = await edgeq.prepareEnqueue(env, env.DB_1, queue, { payload: {} });
    await env.DB_1.batch(enqueue.statements);
  });

  it("an id of the caller's own, a body the API refuses, more than one statement's worth, an unrunnable push task", async () => {
    const queue = await queueOn("DB");
    const cases: Array<[unknown, RegExp]> = [
      [{ tasks: [{}, { id: "01KB0000000000000000000000" }] }, /^tasks\[1\]\.id: .*dedupe_key/],
      [{ id: "01KB0000000000000000000000" }, /^id: /],
      [{ tasks: [{ priority: "high" }] }, /^tasks\[0\]\.priority: /],
      [{ tasks: Array.from({ length: MAX_ENQUEUE_CHUNK_TASKS + 1 }, () => ({})) }, /at most 1000 tasks/],
    ];
    for (const [body, message] of cases) {
      const error = await refusal(edgeq.prepareEnqueue(env, env.DB, queue, body as never));
      expect(error, JSON.stringify(body).slice(0, 80)).toMatchObject({ message: expect.stringMatching(message) });
    }
    await putQueueConfig(db(), queue, { mode: "push" }, Date.now(), PROCESSORS);
    const error = await refusal(edgeq.prepareEnqueue(env, env.DB, queue, { type: "echo", payload: { text: 1 } }));
    expect(error).toMatchObject({ code: "invalid_request", message: expect.stringMatching(/^payload\.text: /) });
    expect(await storedOf(queue)).toEqual({ tasks: 0, counted: 0 });
  });
});
