import { env } from "cloudflare:workers";
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { MAX_PAYLOAD_BYTES } from "../../src/contracts/limits";
import { allShards } from "../../src/shards/shard-set";
import { uniqueQueue } from "../helpers";
import { overHttp, overRpc, type Surface } from "../rpc/both-surfaces";
import { call, expectError, type Enqueued, type ErrorBody } from "./api";

// An enqueue to a push queue is checked against the processors that will run its tasks (the reference
// Worker's: echo takes { text: string ≤ 10,000 }, tag { text, max_tags? }): a task no processor can run is a
// 400 naming its field, and nothing of the call is stored — over HTTP and RPC alike.

const tasksOf = (queue: string) => `/v1/queues/${queue}/tasks`;

async function pushQueue(config: Record<string, unknown> = {}): Promise<string> {
  const queue = uniqueQueue("push-check");
  const put = await call("PUT", `/v1/queues/${queue}/config`, { body: { mode: "push", ...config } });
  expect(put.status, put.text).toBe(200);
  return queue;
}

/** The queue's tasks on every shard (nothing stored means none anywhere). */
async function stored(queue: string): Promise<number> {
  let n = 0;
  for (const shard of allShards(env)) {
    const row = await shard.db.get<{ n: number }>(sql`SELECT count(*) AS n FROM tasks WHERE queue = ${queue}`);
    n += row?.n ?? 0;
  }
  return n;
}

async function enqueue(queue: string, body: unknown) {
  return call<Enqueued | ErrorBody>("POST", tasksOf(queue), { body });
}

/** The enqueue as HTTP and RPC take it, for comparing their refusals. */
const ENQUEUE: Surface = {
  method: "POST",
  path: "/v1/queues/{queue}/tasks",
  input: "json",
  rpc: (e, p, i) => e.enqueue!(p.queue, i),
};

describe("enqueue to a push queue checks its tasks against the processors", () => {
  it("refuses a type no processor runs, naming tasks[i].type, and stores none of the batch", async () => {
    const queue = await pushQueue();
    const res = await enqueue(queue, { tasks: [{ type: "echo", payload: { text: "ok" } }, { type: "no-such" }] });
    expectError(res, 400, "invalid_request", /^tasks\[1\]\.type: .*"no-such".*registered: .*echo/);
    expect(await stored(queue)).toBe(0);
  });

  it("names a task without a type by the type it gets, default", async () => {
    const queue = await pushQueue();
    expectError(await enqueue(queue, { payload: { text: "hi" } }), 400, "invalid_request", /^type: .*"default"/);
    expect(await stored(queue)).toBe(0);
  });

  it("refuses a payload the processor's schema refuses, naming the field inside the payload", async () => {
    const queue = await pushQueue();
    const batch = await enqueue(queue, {
      tasks: [
        { type: "echo", payload: { text: "ok" } },
        { type: "echo", payload: { text: 42 } },
      ],
    });
    expectError(batch, 400, "invalid_request", /^tasks\[1\]\.payload\.text: .*processor "echo"/);
    // A body that is one task names its fields as the body does.
    const one = await enqueue(queue, { type: "tag", payload: {} });
    expectError(one, 400, "invalid_request", /^payload\.text: .*processor "tag"/);
    const none = await enqueue(queue, { type: "echo" });
    expectError(none, 400, "invalid_request", /^payload: .*processor "echo"/);
    expect(await stored(queue)).toBe(0);
  });

  it("checks every task against the queue's own processor when it names one, whatever the task's type", async () => {
    const queue = await pushQueue({ processor: "echo" });
    const ok = await enqueue(queue, { tasks: [{ type: "anything", payload: { text: "a" } }] });
    expect(ok.status, ok.text).toBe(201);
    const bad = await enqueue(queue, { tasks: [{ type: "anything", payload: { words: "a" } }] });
    expectError(bad, 400, "invalid_request", /^tasks\[0\]\.payload\.text: .*processor "echo"/);
    expect(await stored(queue)).toBe(1);
  });

  it("takes tasks a processor can run, and leaves pull queues' tasks unchecked", async () => {
    const queue = await pushQueue();
    const res = await enqueue(queue, {
      tasks: [
        { type: "echo", payload: { text: "ok" } },
        { type: "tag", payload: { text: "jazz" } },
      ],
    });
    expect(res.status, res.text).toBe(201);
    const pull = uniqueQueue("pull-check");
    expect((await enqueue(pull, { type: "no-such", payload: { any: 1 } })).status).toBe(201);
  });

  it("sees a queue turned push, and back to pull, at the next enqueue (the insert's guard, one isolate's memory)", async () => {
    const queue = uniqueQueue("push-flip");
    // Seen as pull first: this isolate expects pull at the next enqueue.
    expect((await enqueue(queue, { type: "no-such" })).status).toBe(201);
    await call("PUT", `/v1/queues/${queue}/config`, { body: { mode: "push" } });
    expectError(await enqueue(queue, { type: "no-such" }), 400, "invalid_request", /^type: /);
    // Now expected push: a task for echo is stored, checked.
    expect((await enqueue(queue, { type: "echo", payload: { text: "a" } })).status).toBe(201);
    await call("PUT", `/v1/queues/${queue}/config`, { body: { mode: "pull" } });
    expect((await enqueue(queue, { type: "no-such" })).status).toBe(201);
    expect(await stored(queue)).toBe(3);
  });

  it("checks a partitioned queue's tasks before any partition stores one", async () => {
    const queue = await pushQueue({ partitions: 4 });
    const tasks = Array.from({ length: 8 }, (_, i) => ({ type: "echo", payload: { text: `t${i}` }, group: `g${i}` }));
    tasks[5] = { type: "echo", payload: { text: 5 } as unknown as { text: string }, group: "g5" };
    expectError(await enqueue(queue, { tasks }), 400, "invalid_request", /^tasks\[5\]\.payload\.text: /);
    expect(await stored(queue)).toBe(0);
  });

  it("refuses alike over RPC", async () => {
    const queue = await pushQueue();
    for (const input of [{ type: "no-such" }, { tasks: [{}, { type: "echo", payload: { text: [] } }] }]) {
      const [http, rpc] = [await overHttp(ENQUEUE, { queue }, input), await overRpc(ENQUEUE, { queue }, input)];
      expect(http.ok).toBe(false);
      expect(rpc).toEqual(http);
    }
    expect(await stored(queue)).toBe(0);
  });
});

describe("a one-task body's refusals name its own fields", () => {
  it("names payload, not tasks[0].payload, for a payload over the limit", async () => {
    const queue = uniqueQueue("one-task");
    const big = { blob: "x".repeat(MAX_PAYLOAD_BYTES) };
    expectError(await enqueue(queue, { payload: big }), 413, "payload_too_large", /^payload is \d+ bytes of JSON/);
    expectError(
      await enqueue(queue, { tasks: [{}, { payload: big }] }),
      413,
      "payload_too_large",
      /^tasks\[1\]\.payload is \d+ bytes/,
    );
    expect(await stored(queue)).toBe(0);
  });
});

describe("a fan-out to a push queue checks its children and join like a plain enqueue", () => {
  const child = (text: unknown) => ({ type: "echo", payload: { text } });

  it("refuses a child whose payload the processor refuses, naming tasks[i].payload, and stores nothing", async () => {
    const queue = await pushQueue();
    const tasks = [child("a"), child("b"), child("c"), child(3)];
    const res = await enqueue(queue, { tasks, join: { type: "echo", payload: { text: "join" } } });
    expectError(res, 400, "invalid_request", /^tasks\[3\]\.payload\.text: .*processor "echo"/);
    expect(await stored(queue)).toBe(0);
  });

  it("refuses a child of a type no processor runs, naming tasks[i].type", async () => {
    const queue = await pushQueue();
    const res = await enqueue(queue, { tasks: [child("a"), { type: "no-such" }], join: { type: "echo" } });
    expectError(res, 400, "invalid_request", /^tasks\[1\]\.type: .*"no-such"/);
    expect(await stored(queue)).toBe(0);
  });

  it("refuses a join of a type no processor runs, naming join.type, and one its schema refuses, naming join.payload", async () => {
    const queue = await pushQueue();
    const unknown = await enqueue(queue, { tasks: [child("a")], join: { type: "stitch-all" } });
    expectError(unknown, 400, "invalid_request", /^join\.type: .*"stitch-all"/);
    const untyped = await enqueue(queue, { tasks: [child("a")], join: { payload: { text: "x" } } });
    expectError(untyped, 400, "invalid_request", /^join\.type: .*"default"/);
    const refused = await enqueue(queue, { tasks: [child("a")], join: { type: "tag", payload: { words: 1 } } });
    expectError(refused, 400, "invalid_request", /^join\.payload\.text: .*processor "tag"/);
    expect(await stored(queue)).toBe(0);
  });

  it("takes a fan-out its processors can run, and leaves a pull queue's unchecked", async () => {
    const queue = await pushQueue();
    const ok = await enqueue(queue, { tasks: [child("a"), child("b")], join: { type: "tag", payload: { text: "j" } } });
    expect(ok.status, ok.text).toBe(201);
    expect(await stored(queue)).toBe(3);
    const pull = uniqueQueue("pull-fan");
    expect((await enqueue(pull, { tasks: [{ type: "no-such" }], join: { type: "nor-this" } })).status).toBe(201);
  });

  it("refuses alike over RPC", async () => {
    const queue = await pushQueue();
    for (const input of [
      { tasks: [child("a"), child(1)], join: { type: "echo" } },
      { tasks: [child("a")], join: { type: "no-such" } },
    ]) {
      const [http, rpc] = [await overHttp(ENQUEUE, { queue }, input), await overRpc(ENQUEUE, { queue }, input)];
      expect(http.ok).toBe(false);
      expect(rpc).toEqual(http);
    }
    expect(await stored(queue)).toBe(0);
  });
});
