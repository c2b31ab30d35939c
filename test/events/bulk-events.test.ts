import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { runTick } from "../../src/cron/tick";
import { drainQueue } from "../../src/dispatch/drain";
import { enqueueTasks } from "../../src/engine/enqueue";
import { leaseTasks } from "../../src/engine/lease";
import type { StreamMessage, TaskEvent } from "../../src/contracts/events";
import { Clock, drainDeps, queueConfig, testProcessor } from "../dispatch/support";
import { clockRange } from "../support/clock-range";
import { call, enqueueOne } from "../http/api";
import { T0, db, uniqueQueue } from "../helpers";
import { openStream } from "./socket";

const summary = (events: StreamMessage[]) =>
  events.map((e) => [e.event, (e as TaskEvent).task_id]).sort((a, b) => String(a).localeCompare(String(b)));

describe("events of queue-wide actions, the cron reaper and push drains", () => {
  it("a queue-wide cancel publishes each cancelled task; a redrive each redriven one", async () => {
    const queue = uniqueQueue("bulk");
    const ids = [await enqueueOne(queue, { group: "g" }), await enqueueOne(queue, { group: "g" })];
    const other = await enqueueOne(queue, { group: "h" });
    const stream = await openStream(`/v1/queues/${queue}/events`);
    await stream.next((m) => m.event === "hello");

    const cancel = await call("POST", `/v1/queues/${queue}/cancel`, { body: { group: "g" } });
    expect(cancel.body).toEqual({ cancelled: 2, cancel_requested: 0 });
    const cancelled = (await stream.taskEvents(2)) as TaskEvent[];
    expect(summary(cancelled)).toEqual(summary(ids.map((id) => ({ event: "cancelled", task_id: id }) as TaskEvent)));
    expect(cancelled.every((e) => e.state === "cancelled" && e.group === "g")).toBe(true);

    const redrive = await call("POST", `/v1/queues/${queue}/redrive`, { body: { state: "cancelled" } });
    expect(redrive.body).toMatchObject({ redriven: 2 });
    const redriven = ((await stream.taskEvents(4)) as TaskEvent[]).slice(2);
    expect(summary(redriven)).toEqual(summary(ids.map((id) => ({ event: "redriven", task_id: id }) as TaskEvent)));
    expect(redriven.every((e) => e.state === "pending")).toBe(true);
    // The other group's task was never touched, so it has no events.
    expect(stream.messages.some((m) => (m as TaskEvent).task_id === other)).toBe(false);
    stream.close();
  });

  it("the cron reaper publishes a lapsed lease as failed with its retry time, an exhausted one as dead", async () => {
    // This file's clock range: a tick reaps every queue's lapsed leases up to `now`. The first tick there
    // reaps what this file's earlier tests left (as test/cron/tick.test.ts does).
    const clock = clockRange("events/bulk-events");
    const start = clock.day(0);
    await runTick(env, clock.day(1));
    const queue = uniqueQueue("reap-ev");
    const { tasks } = await enqueueTasks(db(), queue, [{ payload: 1 }, { payload: 2, maxAttempts: 1 }], start);
    const [retried, buried] = tasks.map((t) => t.id);
    await leaseTasks(db(), { queue, max: 2, visibilityTimeoutS: 10, holder: "gone" }, start);
    const stream = await openStream(`/v1/queues/${queue}/events`);
    await stream.next((m) => m.event === "hello");

    const result = await runTick(env, start + 10_000);
    expect(result).toMatchObject({ reaped: 2, dead: 1 });
    const events = (await stream.taskEvents(2)) as TaskEvent[];
    const failed = events.find((e) => e.task_id === retried)!;
    const dead = events.find((e) => e.task_id === buried)!;
    expect(failed).toMatchObject({ event: "failed", state: "pending", attempt: 1, error: "lease expired" });
    expect(Date.parse(failed.retry_at!)).toBeGreaterThan(start + 10_000);
    expect(dead).toMatchObject({ event: "dead", state: "dead", error: "lease expired", retry_at: null });
    stream.close();
  });

  it("a push drain tells its stream what it leased, then each outcome, batched per turn", async () => {
    const queue = uniqueQueue("drain-ev");
    const ok = testProcessor("ok", async () => ({ fine: true }));
    const boom = testProcessor("boom", async () => {
      throw new Error("upstream 503");
    });
    const { tasks } = await enqueueTasks(
      db(),
      queue,
      [{ type: "ok" }, { type: "boom", maxAttempts: 1 }, { type: "boom", maxAttempts: 3 }],
      T0,
    );
    const [done, dead, retrying] = tasks.map((t) => t.id) as [string, string, string];
    const deps = drainDeps(queue, [ok, boom], new Clock(T0 + 1), queueConfig({ concurrency: 3 }));
    await drainQueue(deps);
    const leased = deps.changes.flatMap((c) => (c.kind === "leased" ? c.ids : []));
    expect(leased.sort()).toEqual([done, dead, retrying].sort());
    // Each outcome reported as an HTTP ack's is (the effects owner publishes completed, dead, failed from it).
    const acks = deps.changes.filter((c) => c.kind === "acked");
    const settled = acks.flatMap((c) => c.outcomes.map((o, i) => [o.id, c.kinds[i], o.ok && o.state]));
    expect(settled.sort()).toEqual(
      [
        [done, "complete", "completed"],
        [dead, "fail", "dead"],
        [retrying, "fail", "pending"],
      ].sort(),
    );
    // Fewer reports than outcomes when tasks finish together (one per turn of the drain's loop).
    expect(acks.length).toBeLessThanOrEqual(3);
  });
});
