import { expect, it } from "vitest";
import type { NewTask } from "../../src/engine/enqueue";
import { T0, uniqueQueue } from "../helpers";
import { expectEdgeqError, storeFixtures, VT_MS } from "./conformance/fixtures";
import { describeStore } from "./conformance/store-kinds";

/** Properties of dependencies (`depends_on`): a task waits until every dependency finished, then runs; a
 * failed dependency ends it, or not, as its policy says; no dependent is released twice or left waiting. */
describeStore("dependencies: a task waits for its dependencies", (kind) => {
  const { store, enqueueOne, lease, leaseOne, row, completedTask, deadTask } = storeFixtures(kind);

  /** Leases the one due task `id` of `queue` and completes it (or fails it permanently) at `now`. */
  async function finish(queue: string, id: string, now: number, how: "complete" | "dead" = "complete") {
    const leased = await leaseOne(queue, now);
    expect(leased.id).toBe(id);
    const [outcome] =
      how === "complete"
        ? await store().completeTasks([{ id, leaseToken: leased.leaseToken, result: { of: id } }], now)
        : await store().failTasks([{ id, leaseToken: leased.leaseToken, message: "no", retryable: false }], now);
    expect(outcome).toMatchObject({ ok: true });
  }

  async function dependent(queue: string, dependsOn: string[], task: NewTask = {}, now = T0) {
    const { tasks } = await store().enqueueTasks(queue, [{ type: "join", dependsOn, ...task }], now);
    return tasks[0]!;
  }

  it("waits (never leased) until every dependency completed, then is pending and leasable", async () => {
    const q = uniqueQueue("deps-wait");
    const a = await enqueueOne(q, { priority: 5 });
    const b = await enqueueOne(q, { priority: 4 });
    const join = await dependent(q, [a, b]);
    expect(join.state).toBe("waiting");
    expect(await row(join.id)).toMatchObject({ state: "waiting", waitingOn: 2, finishedAt: null });

    await finish(q, a, T0 + 10);
    expect(await row(join.id)).toMatchObject({ state: "waiting", waitingOn: 1 });
    await finish(q, b, T0 + 20);
    expect(await row(join.id)).toMatchObject({ state: "pending", waitingOn: 0, runAt: T0 + 20, finishedAt: null });
    const [leased, ...none] = await lease(q, T0 + 20);
    expect(leased!.id).toBe(join.id);
    expect(none).toEqual([]);
  });

  it("a dependency of another queue, on the same database, counts the same", async () => {
    const q = uniqueQueue("deps-q");
    const other = uniqueQueue("deps-other");
    const a = await enqueueOne(other);
    const join = await dependent(q, [a]);
    expect(await lease(q, T0 + 5)).toEqual([]);
    await finish(other, a, T0 + 10);
    const released = await row(join.id);
    expect(released).toMatchObject({ state: "pending", waitingOn: 0, runAt: T0 + 10 });
    expect((await leaseOne(q, T0 + 10)).id).toBe(join.id);
  });

  it("is released at the run time it asked for, when that is later than its last dependency", async () => {
    const q = uniqueQueue("deps-delay");
    const a = await enqueueOne(q);
    const join = await dependent(q, [a], { runAt: T0 + 60_000 });
    await finish(q, a, T0 + 10);
    expect(await row(join.id)).toMatchObject({ state: "pending", runAt: T0 + 60_000 });
  });

  it("a dependency already completed counts at once: pending at enqueue", async () => {
    const q = uniqueQueue("deps-done");
    const a = await completedTask(q);
    const join = await dependent(q, [a], {}, T0 + 100);
    expect(join.state).toBe("pending");
    expect(await row(join.id)).toMatchObject({ state: "pending", waitingOn: 0, runAt: T0 + 100 });
  });

  it("a dependency already dead ends a `fail` dependent at enqueue, naming it", async () => {
    const q = uniqueQueue("deps-dead-at-once");
    const a = await deadTask(q);
    const join = await dependent(q, [a], {}, T0 + 100);
    expect(join.state).toBe("dead");
    const stored = await row(join.id);
    expect(stored).toMatchObject({ state: "dead", finishedAt: T0 + 100 });
    expect(JSON.parse(stored.errors)).toEqual([
      { attempt: 0, at: T0 + 100, message: `dependency ${a} ended dead`, kind: "dependency" },
    ]);
  });

  it("policies: a dead dependency ends `fail` dead and `cancel` cancelled; `continue` runs after the rest", async () => {
    const q = uniqueQueue("deps-policy");
    const bad = await enqueueOne(q, { priority: 9 });
    const good = await enqueueOne(q, { priority: 1 });
    const failing = await dependent(q, [bad, good]);
    const cancelling = await dependent(q, [bad, good], { onDependencyFailure: "cancel" });
    const continuing = await dependent(q, [bad, good], { onDependencyFailure: "continue" });

    await finish(q, bad, T0 + 10, "dead");
    const f = await row(failing.id);
    expect(f).toMatchObject({ state: "dead", finishedAt: T0 + 10 });
    expect(JSON.parse(f.errors)[0]).toMatchObject({ message: `dependency ${bad} ended dead`, kind: "dependency" });
    expect(await row(cancelling.id)).toMatchObject({ state: "cancelled", finishedAt: T0 + 10 });
    expect(await row(continuing.id)).toMatchObject({ state: "waiting", waitingOn: 1 });

    await finish(q, good, T0 + 20);
    expect(await row(continuing.id)).toMatchObject({ state: "pending", waitingOn: 0 });
    // The ended ones stay ended: the good dependency's completion changes nothing for them.
    expect(await row(failing.id)).toMatchObject({ state: "dead" });
    expect(await row(cancelling.id)).toMatchObject({ state: "cancelled" });
  });

  it("a failure cascades through a chain of `fail` dependents, and releases a `continue` one at its end", async () => {
    const q = uniqueQueue("deps-chain");
    const a = await enqueueOne(q);
    const b = await dependent(q, [a]);
    const c = await dependent(q, [b.id]);
    const d = await dependent(q, [c.id], { onDependencyFailure: "continue" });
    const e = await dependent(q, [d.id]);

    await finish(q, a, T0 + 10, "dead");
    expect(await row(b.id)).toMatchObject({ state: "dead" });
    expect(await row(c.id)).toMatchObject({ state: "dead" });
    expect(await row(d.id)).toMatchObject({ state: "pending", waitingOn: 0 });
    expect(await row(e.id)).toMatchObject({ state: "waiting", waitingOn: 1 });
  });

  it("a dependency cancelled while pending, or dead by the reaper, settles its dependents in that statement", async () => {
    const q = uniqueQueue("deps-cancel");
    const a = await enqueueOne(q);
    const join = await dependent(q, [a], { onDependencyFailure: "continue" });
    await store().cancelTask(a, T0 + 5);
    expect(await row(join.id)).toMatchObject({ state: "pending", waitingOn: 0 });

    const r = uniqueQueue("deps-reap");
    const b = await enqueueOne(r, { maxAttempts: 1 });
    const joinB = await dependent(r, [b]);
    await leaseOne(r, T0);
    const { reaped } = await store().reapLapsedLeases([b], T0 + VT_MS + 1);
    expect(reaped).toMatchObject([{ id: b, state: "dead" }]);
    expect(await row(joinB.id)).toMatchObject({ state: "dead" });
  });

  it("reports the dependents a cancel or a reap settled, once each, for their wake-up and events", async () => {
    const [q, w] = [uniqueQueue("deps-settled"), uniqueQueue("deps-settled-w")];
    const [a, b] = [await enqueueOne(q), await enqueueOne(q)];
    const both = await dependent(w, [a, b], { onDependencyFailure: "continue" });
    const ended = await dependent(w, [a]);
    const untouched = await dependent(w, [await enqueueOne(q)]);
    await store().cancelQueueTasks(q, {}, T0 + 5); // a, b and the third dependency, in one statement
    const settled = await store().settledDependents([a, b], T0 + 5);
    expect(settled.sort((x, y) => (x.id < y.id ? -1 : 1))).toEqual(
      [
        { id: both.id, queue: w, state: "pending", run_at: T0 + 5 },
        { id: ended.id, queue: w, state: "dead", run_at: T0 },
      ].sort((x, y) => (x.id < y.id ? -1 : 1)),
    );
    expect(settled.map((d) => d.id)).not.toContain(untouched.id); // not among the ids asked about
    expect(await store().settledDependents([], T0 + 5)).toEqual([]);
  });

  it("reports the dependents down a cascade too: one released two levels down has a queue to wake", async () => {
    const [q, w] = [uniqueQueue("deps-cascade"), uniqueQueue("deps-cascade-w")];
    const x = await enqueueOne(q);
    const a = await dependent(w, [x]); // policy fail: dead when x is
    const b = await dependent(w, [a.id], { onDependencyFailure: "continue" }); // released when a ends
    const c = await dependent(w, [a.id]); // dead with a
    const d = await dependent(w, [c.id], { onDependencyFailure: "cancel" }); // three levels down: cancelled
    const leased = await leaseOne(q, T0 + 10);
    const [outcome] = await store().failTasks(
      [{ id: x, leaseToken: leased.leaseToken, message: "no", retryable: false }],
      T0 + 20,
    );
    const byId = <T extends { id: string }>(list: T[]) => [...list].sort((m, n) => (m.id < n.id ? -1 : 1));
    expect(outcome).toMatchObject({ ok: true });
    expect(byId((outcome as { dependents: Array<{ id: string }> }).dependents)).toEqual(
      byId([
        { id: a.id, queue: w, state: "dead", run_at: T0 },
        { id: b.id, queue: w, state: "pending", run_at: T0 + 20 },
        { id: c.id, queue: w, state: "dead", run_at: T0 },
        { id: d.id, queue: w, state: "cancelled", run_at: T0 },
      ]),
    );
    // The cancel's read reports the same cascade for the effects owner.
    const y = await enqueueOne(q);
    const e = await dependent(w, [y]);
    const f = await dependent(w, [e.id], { onDependencyFailure: "continue" });
    await store().cancelTask(y, T0 + 30);
    expect(byId(await store().settledDependents([y], T0 + 30))).toEqual(
      byId([
        { id: e.id, queue: w, state: "dead", run_at: T0 },
        { id: f.id, queue: w, state: "pending", run_at: T0 + 30 },
      ]),
    );
  });

  it("a waiting task can be cancelled; its dependency finishing later changes nothing", async () => {
    const q = uniqueQueue("deps-cancel-waiting");
    const a = await enqueueOne(q);
    const join = await dependent(q, [a], { runAt: T0 + 5 });
    const cancelled = await store().cancelTask(join.id, T0 + 1);
    expect(cancelled).toMatchObject({ state: "cancelled", runAt: T0 + 5 });
    await finish(q, a, T0 + 10);
    expect(await row(join.id)).toMatchObject({ state: "cancelled", finishedAt: T0 + 1 });
  });

  it("no dependency counted twice: a dead dependency retried and completed leaves a `continue` dependent waiting on the other", async () => {
    const q = uniqueQueue("deps-twice");
    const a = await enqueueOne(q, { priority: 9 });
    const b = await enqueueOne(q, { runAt: T0 + 1_000_000 });
    const join = await dependent(q, [a, b], { onDependencyFailure: "continue" });
    await finish(q, a, T0 + 10, "dead");
    expect(await row(join.id)).toMatchObject({ state: "waiting", waitingOn: 1 });
    await store().retryTask(a, T0 + 20);
    await finish(q, a, T0 + 30);
    expect(await row(join.id)).toMatchObject({ state: "waiting", waitingOn: 1 });
  });

  it("refuses an unknown dependency naming its field, and enqueues nothing of the call", async () => {
    const q = uniqueQueue("deps-unknown");
    const a = await enqueueOne(q);
    const unknown = "01JD3Z8Q9V6Y4T2N1R0M5K7H8G";
    const error = await expectEdgeqError(
      store().enqueueTasks(q, [{ type: "fine" }, { type: "join", dependsOn: [a, unknown] }], T0),
      "invalid_request",
    );
    expect(error.message).toMatch(/^tasks\[1\]\.depends_on\[1\]: no task 01JD3Z8Q9V6Y4T2N1R0M5K7H8G/);
    const { counts } = await store().queueStats(q, {}, T0);
    expect(Object.values(counts).reduce((n, c) => n + c, 0)).toBe(1);
  });

  it("refuses a dependency on a task of the same call (dependencies exist first: no cycle)", async () => {
    const q = uniqueQueue("deps-cycle");
    const id = "01JD3Z8Q9V6Y4T2N1R0M5K7H8H";
    await expectEdgeqError(
      store().enqueueTasks(
        q,
        [
          { id, type: "a" },
          { type: "b", dependsOn: [id] },
        ],
        T0,
      ),
      "invalid_request",
    );
    await expectEdgeqError(store().enqueueTasks(q, [{ id, dependsOn: [id] }], T0), "invalid_request");
  });

  it("a repeated id in depends_on counts once", async () => {
    const q = uniqueQueue("deps-repeat");
    const a = await enqueueOne(q);
    const join = await dependent(q, [a, a, a]);
    expect(await row(join.id)).toMatchObject({ state: "waiting", waitingOn: 1 });
    await finish(q, a, T0 + 10);
    expect(await row(join.id)).toMatchObject({ state: "pending" });
  });
});
