import { evictDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { StreamMessage, TaskEvent } from "../../src/contracts/events";
import { EVENT_SEQ_BLOCK } from "../../src/contracts/limits";
import { call, enqueue, enqueueOne, getTask, leaseOne } from "../http/api";
import { uniqueQueue } from "../helpers";
import { openStream } from "./socket";

const summary = (events: StreamMessage[]) => events.map((e) => [e.event, (e as TaskEvent).task_id]);

describe("queue event stream", () => {
  it("sends a task's life in order with consecutive seqs, each event describing the task after its write", async () => {
    const queue = uniqueQueue("ev");
    const stream = await openStream(`/v1/queues/${queue}/events`);
    const hello = await stream.next((m) => m.event === "hello");
    expect(hello).toEqual({ event: "hello", queue, seq: 0 });

    const id = await enqueueOne(queue, { type: "render", group: "g1" });
    await stream.taskEvents(1);
    const task = await leaseOne(queue);
    await stream.taskEvents(2);
    const beat = await call("POST", `/v1/tasks/${id}/heartbeat`, {
      body: { lease_token: task.lease_token, progress: 40, message: "half-way" },
    });
    expect(beat.status, beat.text).toBe(200);
    await stream.taskEvents(3);
    const done = await call("POST", `/v1/tasks/${id}/complete`, { body: { lease_token: task.lease_token } });
    expect(done.status, done.text).toBe(200);

    const events = (await stream.taskEvents(4)) as TaskEvent[];
    expect(summary(events)).toEqual([
      ["enqueued", id],
      ["leased", id],
      ["progress", id],
      ["completed", id],
    ]);
    expect(events.map((e) => e.seq)).toEqual([1, 2, 3, 4]);
    expect(events[0]).toMatchObject({ queue, type: "render", group: "g1", state: "pending", attempt: 0 });
    expect(events[1]).toMatchObject({ state: "processing", attempt: 1 });
    expect(events[2]).toMatchObject({ progress: 40, message: "half-way" });
    expect(events[3]).toMatchObject({ state: "completed", attempt: 1 });
    expect(Date.parse(events[3]!.at)).not.toBeNaN();
    // A counts snapshot follows the changes (at most one a second).
    const counts = await stream.next((m) => m.event === "counts");
    expect(counts).toMatchObject({ event: "counts", queue });
    stream.close();
  });

  it("reports a failed attempt with its error and retry time, then the task going dead", async () => {
    const queue = uniqueQueue("ev-fail");
    const stream = await openStream(`/v1/queues/${queue}/events`);
    const id = await enqueueOne(queue, { max_attempts: 2 });
    const first = await leaseOne(queue);
    await call("POST", `/v1/tasks/${id}/fail`, {
      body: { lease_token: first.lease_token, error: "boom 1", retry_after_s: 0 },
    });
    await stream.taskEvents(3);
    const second = await leaseOne(queue);
    await call("POST", `/v1/tasks/${id}/fail`, { body: { lease_token: second.lease_token, error: "boom 2" } });
    const events = (await stream.taskEvents(5)) as TaskEvent[];
    expect(summary(events).map(([kind]) => kind)).toEqual(["enqueued", "leased", "failed", "leased", "dead"]);
    expect(events[2]).toMatchObject({ state: "pending", error: "boom 1", attempt: 1 });
    expect(events[2]!.retry_at).not.toBeNull();
    expect(events[4]).toMatchObject({ state: "dead", error: "boom 2", attempt: 2, retry_at: null });
    stream.close();
  });

  it("publishes the leases the coordinator makes for a long poll, hand-backs and redrives", async () => {
    const queue = uniqueQueue("ev-poll");
    const stream = await openStream(`/v1/queues/${queue}/events`);
    const polling = call<{ tasks: Array<{ id: string; lease_token: string }> }>("POST", `/v1/queues/${queue}/lease`, {
      body: { max: 1, wait_s: 10 },
    });
    const id = await enqueueOne(queue, { max_attempts: 1 });
    const leased = await polling;
    expect(leased.body.tasks.map((t) => t.id)).toEqual([id]);
    const token = leased.body.tasks[0]!.lease_token;
    await stream.taskEvents(2);
    await call("POST", `/v1/tasks/${id}/release`, { body: { lease_token: token } });
    await stream.taskEvents(3);
    const again = await leaseOne(queue);
    await call("POST", `/v1/tasks/${id}/fail`, {
      body: { lease_token: again.lease_token, error: "no", retryable: false },
    });
    await stream.taskEvents(5);
    expect((await call("POST", `/v1/tasks/${id}/retry`)).status).toBe(200);
    const events = await stream.taskEvents(6);
    const kinds = summary(events).map(([kind]) => kind);
    // The long poll may lease the task the moment its insert commits, before the enqueue's own call
    // reaches the coordinator: concurrent requests' events are in arrival order (docs/dashboard.md).
    expect(kinds.slice(0, 2).sort()).toEqual(["enqueued", "leased"]);
    expect(kinds.slice(2)).toEqual(["released", "leased", "dead", "redriven"]);
    expect(events[5]).toMatchObject({ state: "pending", attempt: 0 });
    stream.close();
  });

  it("a task's stream carries only that task's events", async () => {
    const queue = uniqueQueue("ev-task");
    const [a, b] = await enqueue(queue, { tasks: [{}, {}] });
    const stream = await openStream(`/v1/tasks/${b!.id}/events`);
    const queueStream = await openStream(`/v1/queues/${queue}/events`);
    await call("POST", `/v1/tasks/${a!.id}/cancel`);
    await call("POST", `/v1/tasks/${b!.id}/cancel`);
    await queueStream.taskEvents(2);
    const events = await stream.taskEvents(1);
    expect(summary(events)).toEqual([["cancelled", b!.id]]);
    expect(stream.messages.some((m) => m.event === "counts")).toBe(false);
    stream.close();
    queueStream.close();
  });

  it("resumes with ?after=SEQ: a reconnecting client gets exactly what it missed", async () => {
    const queue = uniqueQueue("ev-resume");
    const watcher = await openStream(`/v1/queues/${queue}/events`);
    const [t1] = await enqueue(queue, {});
    await watcher.taskEvents(1);
    // Disconnected from here on (the watcher only tells the test when the events were published).
    const [t2, t3] = await enqueue(queue, { tasks: [{}, {}] });
    await watcher.taskEvents(3);

    const resumed = await openStream(`/v1/queues/${queue}/events?after=1`);
    const missed = await resumed.taskEvents(2);
    expect(missed.map((e) => (e as TaskEvent).seq)).toEqual([2, 3]);
    expect(summary(missed)).toEqual([
      ["enqueued", t2!.id],
      ["enqueued", t3!.id],
    ]);
    expect(resumed.messages[0]).toEqual({ event: "hello", queue, seq: 3 });
    expect(t1).toBeDefined();
    watcher.close();
    resumed.close();
  });

  it("keeps delivering to a socket after the event hub was evicted (hibernation), seqs going on past it", async () => {
    const queue = uniqueQueue("ev-hib");
    const stream = await openStream(`/v1/queues/${queue}/events`);
    await enqueueOne(queue);
    await stream.taskEvents(1);
    const stub = env.EVENT_HUB.get(env.EVENT_HUB.idFromName(queue));
    await evictDurableObject(stub); // in-memory state gone; the socket is hibernated, not closed

    const id = await enqueueOne(queue);
    const events = (await stream.taskEvents(2)) as TaskEvent[];
    // The restarted hub starts past the block of seqs its first run reserved (EVENT_SEQ_BLOCK): it never
    // hands out a seq a client may have seen, without a storage write per publish.
    expect(events[1]).toMatchObject({ event: "enqueued", task_id: id, seq: events[0]!.seq + EVENT_SEQ_BLOCK + 1 });

    // The resume buffer lived in memory: a client that missed events across the eviction is told to resync.
    const late = await openStream(`/v1/queues/${queue}/events?after=0`);
    expect(await late.next((m) => m.event === "resync")).toEqual({
      event: "resync",
      queue,
      after: 0,
      seq: events[1]!.seq,
    });
    expect(await getTask(id)).toMatchObject({ state: "pending" });
    stream.close();
    late.close();
  });
});
