import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { drainQueue } from "../../src/dispatch/drain";
import type { Change } from "../../src/effects/changes";
import { cancelTask } from "../../src/engine/cancel";
import { RetryAfterError } from "../../src/processors/errors";
import { enqueueMany, enqueueOne } from "../engine/fixtures";
import { T0, db, row, uniqueQueue } from "../helpers";
import { Clock, Gate, drainDeps, queueConfig, testProcessor } from "./support";

/** How many of a queue's tasks are in each state, read from D1. */
async function states(queue: string): Promise<Record<string, number>> {
  const rows = await db().all<{ state: string; n: number }>(
    sql`SELECT state, count(*) AS n FROM tasks WHERE queue = ${queue} GROUP BY state`,
  );
  return Object.fromEntries(rows.map((r) => [r.state, r.n]));
}

const instant = testProcessor("instant", async (_payload, ctx) => ({ ran: ctx.taskId }));

describe("drainQueue", () => {
  it("never has more than `concurrency` tasks in flight, and completes them all", async () => {
    const queue = uniqueQueue("drain");
    const gate = new Gate();
    const held = testProcessor("held", async (_payload, ctx) => {
      await gate.pass(ctx.taskId);
      return { done: ctx.taskId };
    });
    const ids = await enqueueMany(
      queue,
      Array.from({ length: 10 }, () => ({ type: "held" })),
    );
    const clock = new Clock(T0 + 1);
    const deps = drainDeps(queue, [held], clock, queueConfig({ concurrency: 3 }));

    const draining = drainQueue(deps);
    await gate.untilStarted(3, draining);
    // Three are leased and running; the other seven were never leased.
    expect(gate.inFlight).toBe(3);
    expect(await states(queue)).toEqual({ processing: 3, pending: 7 });

    // Each finished task frees one slot, which the drain fills with the next task.
    for (let released = 0; released < 10; released++) {
      gate.release(gate.started[released]!);
      await gate.untilStarted(Math.min(10, released + 4), draining);
      expect(gate.inFlight).toBeLessThanOrEqual(3);
    }
    const { results, nextAt } = await draining;

    expect(gate.maxInFlight).toBe(3);
    expect(gate.started.slice().sort()).toEqual(ids.slice().sort());
    expect(results).toHaveLength(10);
    expect(results.every((r) => r.outcome === "completed")).toBe(true);
    expect(await states(queue)).toEqual({ completed: 10 });
    expect(nextAt).toBeNull();
  });

  it("holds the rate limit: 2 per second starts exactly 2, then 2 more once the injected clock moves a second", async () => {
    const queue = uniqueQueue("drain");
    await enqueueMany(
      queue,
      Array.from({ length: 5 }, () => ({ type: "instant" })),
    );
    const clock = new Clock(T0 + 500);
    const deps = drainDeps(
      queue,
      [instant],
      clock,
      queueConfig({ concurrency: 10, rate_limit: { count: 2, per: "second" } }),
    );

    const first = await drainQueue(deps);
    expect(first.results.map((r) => r.outcome)).toEqual(["completed", "completed"]);
    expect(first.nextAt).toBe(T0 + 500 + 1000);
    expect(await states(queue)).toEqual({ completed: 2, pending: 3 });

    // A millisecond early, the window still holds both starts: nothing runs.
    clock.t = T0 + 500 + 999;
    const early = await drainQueue(deps);
    expect(early).toEqual({ results: [], nextAt: T0 + 500 + 1000 });
    expect(await states(queue)).toEqual({ completed: 2, pending: 3 });

    clock.t = T0 + 500 + 1000;
    const second = await drainQueue(deps);
    expect(second.results).toHaveLength(2);
    expect(second.nextAt).toBe(T0 + 500 + 2000);
    expect(await states(queue)).toEqual({ completed: 4, pending: 1 });
  });

  it("stops at the budget (maxTasks) and asks to come back at once", async () => {
    const queue = uniqueQueue("drain");
    await enqueueMany(
      queue,
      Array.from({ length: 5 }, () => ({ type: "instant" })),
    );
    const clock = new Clock(T0 + 100);

    const { results, nextAt } = await drainQueue(drainDeps(queue, [instant], clock), 2);

    expect(results).toHaveLength(2);
    expect(nextAt).toBe(T0 + 100);
    expect(await states(queue)).toEqual({ completed: 2, pending: 3 });
  });

  it("returns nextAt = a retry's run_at when a task asks to be retried later", async () => {
    const queue = uniqueQueue("drain");
    const quota = testProcessor("quota", async () => {
      throw new RetryAfterError(30, "quota exhausted");
    });
    const id = await enqueueOne(queue, { type: "quota" });
    const clock = new Clock(T0 + 100);

    const { results, nextAt } = await drainQueue(drainDeps(queue, [quota], clock));

    expect(results).toEqual([
      {
        id,
        outcome: "retrying",
        children: [],
        runAt: T0 + 100 + 30_000,
        error: "quota exhausted",
        ack: { kind: "fail", outcome: expect.objectContaining({ id, ok: true, state: "pending" }) },
      },
    ]);
    expect(nextAt).toBe(T0 + 100 + 30_000);
    expect(await row(id)).toMatchObject({ state: "pending", runAt: T0 + 100 + 30_000 });
  });

  it("idle: nothing due returns no results and nextAt null, reporting no change", async () => {
    const queue = uniqueQueue("drain");
    await enqueueOne(queue, { type: "instant", runAt: T0 + 60_000 });
    const deps = drainDeps(queue, [instant], new Clock(T0));

    expect(await drainQueue(deps)).toEqual({ results: [], nextAt: null });
    expect(deps.changes).toEqual([]);
  });

  it("reports a completion with its children as an ack, and runs due children of its own queue", async () => {
    const queue = uniqueQueue("drain");
    const other = uniqueQueue("drain-other");
    const parentId = await enqueueOne(queue, {
      type: "instant",
      then: [
        { type: "instant", queue: other, payload: { to: "other" } },
        { type: "instant", payload: { to: "same" } },
        { type: "instant", payload: { to: "same-later" }, delay_s: 60 },
      ],
    });
    const clock = new Clock(T0 + 100);
    const deps = drainDeps(queue, [instant], clock);

    const { results, nextAt } = await drainQueue(deps);

    const parent = results.find((r) => r.id === parentId)!;
    expect(parent.outcome).toBe("completed");
    expect(parent.children).toHaveLength(3);
    const byQueue = (q: string, runAt: number) => parent.children.filter((c) => c.queue === q && c.run_at === runAt);
    const [otherChild] = byQueue(other, T0 + 100);
    const [sameChild] = byQueue(queue, T0 + 100);
    const [laterChild] = byQueue(queue, T0 + 100 + 60_000);
    // The completion goes to the effects owner as an HTTP ack's would, its children with it (the owner
    // relays and wakes the other queue's); this queue's children are the drain's own to run.
    const parentAck = deps.changes.find(
      (c) => c.kind === "acked" && c.outcomes.some((o) => o.id === parentId),
    ) as Extract<Change, { kind: "acked" }>;
    expect(parentAck).toMatchObject({ kinds: ["complete"], drainedQueue: queue });
    expect(parentAck.outcomes[0]).toMatchObject({ id: parentId, ok: true, state: "completed" });
    expect(parentAck.outcomes[0]!.ok && parentAck.outcomes[0]!.children).toEqual(parent.children);
    // The due child of this queue ran in the same drain; the delayed one sets nextAt.
    expect(results.map((r) => r.id)).toEqual([parentId, sameChild!.id]);
    expect(results[1]!.outcome).toBe("completed");
    expect(nextAt).toBe(T0 + 100 + 60_000);
    expect(await row(sameChild!.id)).toMatchObject({ state: "completed", queue });
    expect(await row(laterChild!.id)).toMatchObject({ state: "pending", queue, runAt: T0 + 100 + 60_000 });
    expect(await row(otherChild!.id)).toMatchObject({ state: "pending", queue: other, attempts: 0 });
  });

  it("reports a run a cancel stopped as cancelled, saying whether it held a flow key's slot", async () => {
    const queue = uniqueQueue("drain-cancel");
    const cancelledWhileRunning = testProcessor("victim", async (_payload, ctx) => {
      await cancelTask(db(), ctx.taskId, T0 + 1);
      await ctx.progress(50); // the heartbeat finds the cancel: the run stops, the task ends cancelled
      return null;
    });
    const keyed = await enqueueOne(queue, { type: "victim", key: "acme" });
    const deps = drainDeps(queue, [cancelledWhileRunning], new Clock(T0 + 1));
    const { results } = await drainQueue(deps);
    expect(results).toMatchObject([{ id: keyed, outcome: "cancelled" }]);
    const cancels = deps.changes.filter((c: Change) => c.kind === "cancelled");
    expect(cancels).toEqual([{ kind: "cancelled", queue, ids: [keyed], freesFlowKey: true }]);

    const plainQueue = uniqueQueue("drain-cancel-plain");
    const plain = await enqueueOne(plainQueue, { type: "victim" });
    const plainDeps = drainDeps(plainQueue, [cancelledWhileRunning], new Clock(T0 + 1));
    await drainQueue(plainDeps);
    expect(plainDeps.changes.filter((c: Change) => c.kind === "cancelled")).toEqual([
      { kind: "cancelled", queue: plainQueue, ids: [plain], freesFlowKey: false },
    ]);
  });
});
