import { describe, expect, it } from "vitest";
import type { z } from "zod";
import { toLeasedTaskView, toTaskView } from "../../src/contracts/task-view";
import type { TaskView } from "../../src/contracts/task";
import {
  AckResponse,
  EnqueueResponse,
  ErrorSchema,
  LeasedTaskSchema,
  LeaseResponse,
  OutcomeResponse,
  QueueConfigSchema,
  QueueListResponse,
  QueueStatsResponse,
  TaskListResponse,
  TaskSchema,
} from "../../src/contracts/api";
import { row, uniqueQueue } from "../helpers";
import { call, enqueueOne, fail, leaseOne, MISSING_ID } from "./api";

/**
 * The API's task shape is written once: the engine's TaskView is `z.infer` of the TaskSchema the OpenAPI
 * document is generated from (src/contracts/task.ts), so their field names and types cannot drift apart
 * (a missing or extra field in `toTaskView` does not compile). What the compiler cannot see is the values
 * `toTaskView` builds from a stored row — parsed JSON, ISO times, states read as text: these tests fail
 * when a rendered task does not parse as exactly TaskSchema.
 */

/** Compile-time half (`npm run typecheck`): true by construction, kept in case TaskView is ever hand-written again. */
type SameKeys<A, B> = [keyof A] extends [keyof B] ? ([keyof B] extends [keyof A] ? true : false) : false;
const sameKeys: SameKeys<TaskView, z.infer<typeof TaskSchema>> = true;

/** Parses and checks nothing was stripped: the value has exactly the schema's fields, of its types. */
function expectExactly(schema: z.ZodType, value: unknown): void {
  const parsed = schema.safeParse(value);
  expect(parsed.error?.issues ?? []).toEqual([]);
  expect(parsed.data).toEqual(value);
}

/**
 * A task with every optional field filled: chained (`then`), leased, heartbeated with progress and a
 * checkpoint, failed once, leased again.
 */
async function busyTask(): Promise<string> {
  const queue = uniqueQueue("drift");
  const id = await enqueueOne(queue, {
    type: "render",
    payload: { n: 1 },
    dedupe_key: "k",
    group: "g",
    priority: 3,
    then: [{ type: "publish", payload: { to: "web" } }],
  });
  const first = await leaseOne(queue, { holder: "w1" });
  await call("POST", `/v1/tasks/${id}/heartbeat`, {
    body: { lease_token: first.lease_token, progress: 30, message: "a third", checkpoint: { page: 3 } },
  });
  await fail(id, { lease_token: first.lease_token, error: "boom", retry_after_s: 0 });
  await leaseOne(queue, { holder: "w2" });
  return id;
}

describe("TaskSchema matches the engine's TaskView", () => {
  it("has exactly TaskView's keys, for a fresh task and a busy one", async () => {
    expect(sameKeys).toBe(true);
    const fresh = toTaskView(await row(await enqueueOne(uniqueQueue("drift"))));
    const busy = toTaskView(await row(await busyTask()));
    for (const view of [fresh, busy]) {
      expect(Object.keys(view).sort()).toEqual(Object.keys(TaskSchema.shape).sort());
      expectExactly(TaskSchema.strict(), view);
    }
    expect(busy.errors).toHaveLength(1);
    expect(busy).toMatchObject({
      progress: 30,
      progress_message: "a third",
      lease_holder: "w2",
      group: "g",
      checkpoint: { page: 3 },
      then: [{ type: "publish", payload: { to: "web" } }],
    });
  });

  it("LeasedTaskSchema matches toLeasedTaskView, lease_token included", async () => {
    const view = toLeasedTaskView(await row(await busyTask()));
    expect(Object.keys(view).sort()).toEqual(Object.keys(LeasedTaskSchema.shape).sort());
    expectExactly(LeasedTaskSchema.strict(), view);
  });

  it("rejects a view that gained or lost a field (the check can fail)", async () => {
    const view = toTaskView(await row(await enqueueOne(uniqueQueue("drift"))));
    expect(TaskSchema.strict().safeParse({ ...view, extra: 1 }).success).toBe(false);
    const missing: Record<string, unknown> = { ...view };
    delete missing.group;
    expect(TaskSchema.strict().safeParse(missing).success).toBe(false);
  });
});

describe("responses parse with the schemas the OpenAPI document is built from", () => {
  it("enqueue, get, list, lease, fail, ack, stats, queues and config", async () => {
    const queue = uniqueQueue("drift");
    const enqueued = await call("POST", `/v1/queues/${queue}/tasks`, {
      body: { tasks: [{ payload: 1 }, { payload: 2 }] },
    });
    expectExactly(EnqueueResponse, enqueued.body);
    const id = await busyTask();
    expectExactly(TaskSchema, (await call("GET", `/v1/tasks/${id}`)).body);
    expectExactly(TaskListResponse, (await call("GET", `/v1/queues/${queue}/tasks?limit=1`)).body);

    const leased = await call<z.infer<typeof LeaseResponse>>("POST", `/v1/queues/${queue}/lease`, { body: { max: 2 } });
    expectExactly(LeaseResponse, leased.body);
    const [a, b] = leased.body.tasks;
    const failed = await fail(a!.id, { lease_token: a!.lease_token, error: "x", retry_after_s: 0 });
    expectExactly(OutcomeResponse, failed.body);
    const ack = await call("POST", `/v1/queues/${queue}/ack`, {
      body: {
        complete: [
          { id: b!.id, lease_token: b!.lease_token },
          { id: MISSING_ID, lease_token: "t" },
        ],
      },
    });
    expectExactly(AckResponse, ack.body);

    expectExactly(QueueStatsResponse, (await call("GET", `/v1/queues/${queue}/stats`)).body);
    expectExactly(QueueListResponse, (await call("GET", "/v1/queues")).body);
    expectExactly(QueueConfigSchema, (await call("GET", `/v1/queues/${queue}/config`)).body);
    expectExactly(ErrorSchema, (await call("GET", `/v1/tasks/${MISSING_ID}`)).body);
  });
});
