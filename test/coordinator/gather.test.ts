import { describe, expect, it } from "vitest";
import { GATHER_FROM_PER_S, GATHER_SAMPLE_CALLS } from "../../src/coordinator/gather";
import type { QueueCoordinator } from "../../src/coordinator/coordinator";
import { gatherHints } from "../../src/effects/gather-hints";
import { packTaskIds } from "../../src/engine/hybrid/layout-of-ids";
import { queueDb, uniqueQueue } from "../helpers";
import { coordinator, inObject } from "../support/coordinator";
import { until } from "../support/until";
import { call, expectError, getTask, type Enqueued } from "../http/api";

// Single-task enqueues gathered by their queue's coordinator while they come fast (src/coordinator/gather.ts):
// real Worker, real coordinator, real D1. The rate is driven as enqueues drive it — each enqueue's wake-up of a
// call of one (`notify` with `arrival`) — and the isolate learns it from the answer to its own enqueue's wake-up.

/** Makes the coordinator of `queue` see twice GATHER_FROM_PER_S calls of one at once, as their wake-ups — its
 * clock held still, so that a loaded machine's slowness does not age them out of its last second. */
async function busy(queue: string): Promise<void> {
  const stub = coordinator(queue);
  await inObject<QueueCoordinator, void>(stub, (o) => {
    const held = Date.now();
    o.now = () => held;
  });
  await Promise.all(
    Array.from({ length: 2 * GATHER_FROM_PER_S }, () =>
      stub.notify({ queue, runAt: Date.now(), part: 0, arrival: true }),
    ),
  );
}

/** One task enqueued alone over HTTP: its answer. */
async function enqueueOne(queue: string, body: Record<string, unknown>) {
  return call<Enqueued>("POST", `/v1/queues/${queue}/tasks`, { body });
}

/** Primes this isolate: a busy coordinator, then an enqueue whose wake-up's answer says it gathers. */
async function gathering(queue: string): Promise<void> {
  await busy(queue);
  expect((await enqueueOne(queue, { payload: "primer" })).status).toBe(201);
  await until("the isolate to hear that the coordinator gathers", () => gatherHints.partFor(queue) === 0, {
    timeoutMs: 15_000,
  });
}

/** Of `ids` (tasks of `queue`), those kept in packs on the queue's database. */
async function packed(queue: string, ids: string[]): Promise<Set<string>> {
  return packTaskIds(await queueDb(queue), ids);
}

describe("single enqueues gathered by the queue's coordinator", () => {
  it("below the rate, a call of one is written by its own Worker and nothing is gathered", async () => {
    const queue = uniqueQueue("gather-quiet");
    const answers = await Promise.all(Array.from({ length: 5 }, (_, i) => enqueueOne(queue, { payload: i })));
    const ids = answers.map((a) => a.body.tasks[0]!.id);
    // Their wake-ups reached the coordinator as 5 arrivals: far from the rate, so it answered "no" to each.
    await until("the 5 wake-ups counted", async () => {
      const seen = await inObject<QueueCoordinator, number>(coordinator(queue), (o) => {
        const gauge = (o as unknown as { gauge: { current: number; previous: number } }).gauge;
        return gauge.current + gauge.previous;
      });
      return seen === 5;
    });
    expect(gatherHints.partFor(queue)).toBeNull();
    expect((await packed(queue, ids)).size).toBe(0);
  });

  it("past it, concurrent single enqueues are written together in packs, each caller answered with its own task", async () => {
    const queue = uniqueQueue("gather-busy");
    await gathering(queue);
    const answers = await Promise.all(
      Array.from({ length: 30 }, (_, i) => enqueueOne(queue, { payload: { n: i }, priority: i % 3 })),
    );
    expect(answers.map((a) => a.status)).toEqual(Array(30).fill(201));
    const ids = answers.map((a) => a.body.tasks[0]!.id);
    expect(new Set(ids).size).toBe(30);
    expect(answers.every((a) => a.body.tasks.length === 1 && a.body.tasks[0]!.deduplicated === false)).toBe(true);
    // A call of one is never a pack: tasks in packs were written in calls of several, gathered.
    expect((await packed(queue, ids)).size).toBeGreaterThanOrEqual(2);
    // Each is its caller's own: its payload and priority, readable by id.
    for (const [i, id] of ids.entries()) {
      expect(await getTask(id)).toMatchObject({ id, queue, state: "pending", payload: { n: i }, priority: i % 3 });
    }
  });

  it("a refusal is its caller's alone, named as a call of one names it; its neighbours are written", async () => {
    const queue = uniqueQueue("gather-refusal");
    // A push queue checks each task's payload against its processor (echo: `{ text }`) at enqueue.
    expect(
      (await call("PUT", `/v1/queues/${queue}/config`, { body: { mode: "push", processor: "echo" } })).status,
    ).toBe(200);
    await busy(queue);
    expect((await enqueueOne(queue, { payload: { text: "primer" } })).status).toBe(201);
    await until("the isolate to hear that the coordinator gathers", () => gatherHints.partFor(queue) === 0, {
      timeoutMs: 15_000,
    });
    const bodies = Array.from({ length: 8 }, (_, i) => ({ payload: i === 3 ? { text: 7 } : { text: `t${i}` } }));
    const answers = await Promise.all(bodies.map((b) => enqueueOne(queue, b)));
    expectError(answers[3]!, 400, "invalid_request", /^payload\.text: /);
    for (const [i, a] of answers.entries()) {
      if (i === 3) continue;
      expect(a.status).toBe(201);
      expect(await getTask(a.body.tasks[0]!.id)).toMatchObject({ payload: { text: `t${i}` } });
    }
  });

  it("a task the store keeps in rows (a dedupe key, a client's id) is written by its own Worker while others gather", async () => {
    const queue = uniqueQueue("gather-keyed");
    await gathering(queue);
    const keyed = await enqueueOne(queue, { payload: 1, dedupe_key: "k" });
    const again = await enqueueOne(queue, { payload: 2, dedupe_key: "k" });
    expect(keyed.status).toBe(201);
    expect(again.body.tasks[0]).toMatchObject({ id: keyed.body.tasks[0]!.id, deduplicated: true });
    expect((await packed(queue, [keyed.body.tasks[0]!.id])).size).toBe(0);
  });

  it("a fast producer whose tasks come one at a time: once its gathered calls came alone, it writes them itself", async () => {
    const queue = uniqueQueue("gather-alone");
    await gathering(queue);
    // Each waits for its answer before the next: every gathered call carries one task.
    for (let i = 0; i < GATHER_SAMPLE_CALLS - 1; i++) {
      expect((await enqueueOne(queue, { payload: i })).status).toBe(201);
      expect(gatherHints.partFor(queue)).toBe(0);
    }
    expect((await enqueueOne(queue, { payload: "the last of the sample" })).status).toBe(201);
    expect(gatherHints.partFor(queue)).toBeNull();
    // Its wake-ups keep counting it, but the coordinator answers no while it waits to try again.
    await enqueueOne(queue, { payload: "written by its Worker" });
    await until("the wake-up's answer", async () => {
      const pays = await inObject<QueueCoordinator, boolean>(coordinator(queue), (o) =>
        (o as unknown as { gauge: { pays(now: number): boolean } }).gauge.pays(o.now()),
      );
      return !pays;
    });
    expect(gatherHints.partFor(queue)).toBeNull();
  });

  it("a coordinator no longer busy says so, and the isolate writes its next enqueues itself", async () => {
    const queue = uniqueQueue("gather-stops");
    await gathering(queue);
    // A second and more later on the coordinator's clock: the last full second saw nothing.
    await inObject<QueueCoordinator, void>(coordinator(queue), (o) => {
      const later = Date.now() + 5_000;
      o.now = () => later;
    });
    const answer = await enqueueOne(queue, { payload: "gathered, then told" });
    expect(answer.status).toBe(201);
    expect(gatherHints.partFor(queue)).toBeNull();
    const next = await enqueueOne(queue, { payload: "alone" });
    expect(await getTask(next.body.tasks[0]!.id)).toMatchObject({ state: "pending", payload: "alone" });
  });
});
