import { env } from "cloudflare:workers";
import { sql } from "drizzle-orm";
import { ulid } from "ulid";
import { describe, expect, it } from "vitest";
import { MIN_RETENTION_S } from "../../../src/contracts/limits";
import { openDb } from "../../../src/db/client";
import type { NewTask } from "../../../src/engine/enqueue";
import { d1TaskStore } from "../../../src/engine/d1-store";
import { packTaskStore } from "../../../src/engine/packs/pack-store";
import { PROCESSORS, T0, uniqueQueue } from "../../helpers";
import { expectEdgeqError } from "../conformance/fixtures";
import { meteredD1 } from "../../support/metered-d1";

// A pack task as a dependency TARGET (docs/design/packs.md, "Dependencies across the two layouts"): the
// served hybrid keeps plain multi-task enqueues in packs and every task with `depends_on` in rows, both on one
// database, so a row task may wait on a pack task. Here the dependent is made by the row store (d1TaskStore)
// and the target by the pack store, over the same database, and every way a pack task finishes must settle
// its dependents as a row task's finishing does (test/engine/dependencies.test.ts): in the same batch, and
// reported to the effects owner.

const rows = () => d1TaskStore(openDb(env.DB));
const packs = () => packTaskStore(openDb(env.DB));
const VT_S = 30;

/** Pack tasks enqueued in one call (one pack), their ids in input order. */
async function packTasks(queue: string, input: NewTask[], now = T0): Promise<string[]> {
  const { tasks } = await packs().enqueueTasks(queue, input, now);
  return tasks.map((t) => t.id);
}

/** A row task depending on `dependsOn`, made by the row store. */
async function dependent(queue: string, dependsOn: string[], task: NewTask = {}, now = T0) {
  const { tasks } = await rows().enqueueTasks(queue, [{ type: "join", dependsOn, ...task }], now);
  return tasks[0]!;
}

/** Leases the pack queue's due tasks (at most `max`), by id. */
async function leasePacks(queue: string, now: number, max = 100) {
  const leased = await packs().leaseTasks({ queue, max, visibilityTimeoutS: VT_S, holder: "w" }, now);
  return new Map(leased.map((t) => [t.id, t.leaseToken!]));
}

const byId = <T extends { id: string }>(list: T[]) => [...list].sort((m, n) => (m.id < n.id ? -1 : 1));

describe("a row task depending on a pack task", () => {
  it("waits until its pack dependencies complete; the completion releases it in its batch and reports it", async () => {
    const [p, w] = [uniqueQueue("pdt-complete"), uniqueQueue("pdt-complete-w")];
    const [a, b, other] = await packTasks(p, [{}, {}, {}]);
    const join = await dependent(w, [a!, b!], { priority: 3 });
    expect(join.state).toBe("waiting");
    expect(await rows().getTask(join.id)).toMatchObject({ state: "waiting", waitingOn: 2 });
    const tokens = await leasePacks(p, T0 + 1);
    const [first] = await packs().completeTasks([{ id: a!, leaseToken: tokens.get(a!)!, result: { n: 1 } }], T0 + 2);
    expect(first).toMatchObject({ ok: true, dependents: [] });
    expect(await rows().getTask(join.id)).toMatchObject({ state: "waiting", waitingOn: 1 });
    const outcomes = await packs().completeTasks(
      [
        { id: b!, leaseToken: tokens.get(b!)!, result: { n: 2 } },
        { id: other!, leaseToken: tokens.get(other!)! },
      ],
      T0 + 3,
    );
    expect(outcomes[0]).toMatchObject({
      ok: true,
      dependents: [{ id: join.id, queue: w, state: "pending", run_at: T0 + 3 }],
    });
    expect(outcomes[1]).toMatchObject({ ok: true, dependents: [] });
    expect(await rows().getTask(join.id)).toMatchObject({ state: "pending", waitingOn: 0, priority: 3 });
    const [leased] = await rows().leaseTasks({ queue: w, max: 5, visibilityTimeoutS: VT_S, holder: "w" }, T0 + 3);
    expect(leased?.id).toBe(join.id);
    // What a join reads of its dependencies: each pack task's state and result.
    const { entries } = await rows().listDependencies(join.id, { limit: 10 });
    expect(byId(entries)).toEqual(
      byId([
        { id: a!, queue: p, type: "default", state: "completed", result: '{"n":1}', resultBytes: 7 },
        { id: b!, queue: p, type: "default", state: "completed", result: '{"n":2}', resultBytes: 7 },
      ]),
    );
    // And the pack task's dependents page lists the row task, with the outcome it was counted as.
    expect((await packs().listDependents(a!, { limit: 10 })).entries).toEqual([
      { id: join.id, queue: w, type: "join", state: "processing", outcome: "completed" },
    ]);
  });

  it("a pack dependency already finished counts at once: completed releases, dead ends a `fail` dependent", async () => {
    const [p, w] = [uniqueQueue("pdt-done"), uniqueQueue("pdt-done-w")];
    const [done, broken] = await packTasks(p, [{}, {}]);
    const tokens = await leasePacks(p, T0 + 1);
    await packs().completeTasks([{ id: done!, leaseToken: tokens.get(done!)! }], T0 + 2);
    await packs().failTasks(
      [{ id: broken!, leaseToken: tokens.get(broken!)!, message: "x", retryable: false }],
      T0 + 2,
    );
    const released = await dependent(w, [done!], {}, T0 + 10);
    expect(released.state).toBe("pending");
    expect(await rows().getTask(released.id)).toMatchObject({ state: "pending", waitingOn: 0, runAt: T0 + 10 });
    const ended = await dependent(w, [done!, broken!], {}, T0 + 10);
    expect(ended.state).toBe("dead");
    expect(JSON.parse((await rows().getTask(ended.id)).errors)).toEqual([
      { attempt: 0, at: T0 + 10, message: `dependency ${broken} ended dead`, kind: "dependency" },
    ]);
    const continuing = await dependent(w, [broken!], { onDependencyFailure: "continue" }, T0 + 10);
    expect(continuing.state).toBe("pending");
    expect((await packs().listDependents(broken!, { limit: 10 })).entries.map((e) => [e.id, e.outcome])).toEqual(
      byId([ended, continuing]).map((d) => [d.id, "dead"]),
    );
  });

  it("a failure to dead ends `fail` and `cancel` dependents, releases `continue`, cascades, and the ack reports every level", async () => {
    const [p, w] = [uniqueQueue("pdt-dead"), uniqueQueue("pdt-dead-w")];
    const [x, good] = await packTasks(p, [{}, {}]);
    const failing = await dependent(w, [x!]);
    const cancelling = await dependent(w, [x!], { onDependencyFailure: "cancel" });
    const continuing = await dependent(w, [x!, good!], { onDependencyFailure: "continue" });
    const down = await dependent(w, [failing.id], { onDependencyFailure: "continue" }); // released when `failing` ends
    const tokens = await leasePacks(p, T0 + 1);
    const [outcome] = await packs().failTasks(
      [{ id: x!, leaseToken: tokens.get(x!)!, message: "no", retryable: false }],
      T0 + 20,
    );
    expect(outcome).toMatchObject({ ok: true, state: "dead" });
    expect(byId((outcome as { dependents: Array<{ id: string }> }).dependents)).toEqual(
      byId([
        { id: failing.id, queue: w, state: "dead", run_at: T0 },
        { id: cancelling.id, queue: w, state: "cancelled", run_at: T0 },
        { id: down.id, queue: w, state: "pending", run_at: T0 + 20 },
      ]),
    );
    const f = await rows().getTask(failing.id);
    expect(f).toMatchObject({ state: "dead", finishedAt: T0 + 20, waitingOn: 0 });
    expect(JSON.parse(f.errors)).toEqual([
      { attempt: 0, at: T0 + 20, message: `dependency ${x} ended dead`, kind: "dependency" },
    ]);
    expect(await rows().getTask(cancelling.id)).toMatchObject({ state: "cancelled", waitingOn: 0 });
    expect(await rows().getTask(continuing.id)).toMatchObject({ state: "waiting", waitingOn: 1 });
    expect(await rows().getTask(down.id)).toMatchObject({ state: "pending", waitingOn: 0 });
    await packs().completeTasks([{ id: good!, leaseToken: tokens.get(good!)! }], T0 + 30);
    expect(await rows().getTask(continuing.id)).toMatchObject({ state: "pending", waitingOn: 0, runAt: T0 + 30 });
    // The ended ones stay ended.
    expect(await rows().getTask(failing.id)).toMatchObject({ state: "dead", finishedAt: T0 + 20 });
  });

  it("a cancel (one task, a queue) settles its dependents in its batch; settledDependents reports them once", async () => {
    const [p, w] = [uniqueQueue("pdt-cancel"), uniqueQueue("pdt-cancel-w")];
    const [a, b, c] = await packTasks(p, [{}, {}, {}]);
    const both = await dependent(w, [a!, b!], { onDependencyFailure: "continue" });
    const ended = await dependent(w, [a!]);
    await packs().cancelTask(a!, T0 + 5);
    expect(await rows().getTask(both.id)).toMatchObject({ state: "waiting", waitingOn: 1 });
    expect(await packs().settledDependents([a!], T0 + 5)).toEqual([
      { id: ended.id, queue: w, state: "dead", run_at: T0 },
    ]);
    const onC = await dependent(w, [c!], { onDependencyFailure: "cancel" });
    await packs().cancelQueueTasks(p, {}, T0 + 6);
    expect(byId(await packs().settledDependents([b!, c!], T0 + 6))).toEqual(
      byId([
        { id: both.id, queue: w, state: "pending", run_at: T0 + 6 },
        { id: onC.id, queue: w, state: "cancelled", run_at: T0 },
      ]),
    );
  });

  it("a cancel requested while processing settles them when the holder's write ends it cancelled", async () => {
    const [p, w] = [uniqueQueue("pdt-cr"), uniqueQueue("pdt-cr-w")];
    const [a] = await packTasks(p, [{}]);
    const join = await dependent(w, [a!], { onDependencyFailure: "continue" });
    const tokens = await leasePacks(p, T0 + 1);
    await packs().cancelTask(a!, T0 + 2);
    expect(await rows().getTask(join.id)).toMatchObject({ state: "waiting" });
    await expectEdgeqError(packs().heartbeatTask({ id: a!, leaseToken: tokens.get(a!)! }, T0 + 3), "task_cancelled");
    expect(await rows().getTask(join.id)).toMatchObject({ state: "pending", waitingOn: 0, runAt: T0 + 3 });
  });

  it("the reaper ending a lapsed last attempt dead settles them (lapsed ids and the live-index walk)", async () => {
    const [p, w] = [uniqueQueue("pdt-reap"), uniqueQueue("pdt-reap-w")];
    const [a, b] = await packTasks(p, [{ maxAttempts: 1 }, { maxAttempts: 1 }]);
    const onA = await dependent(w, [a!]);
    const onB = await dependent(w, [b!], { onDependencyFailure: "continue" });
    await leasePacks(p, T0 + 1);
    const lapse = T0 + 1 + VT_S * 1000 + 1;
    const { reaped } = await packs().reapLapsedLeases([a!], lapse);
    expect(reaped).toMatchObject([{ id: a, state: "dead" }]);
    expect(await rows().getTask(onA.id)).toMatchObject({ state: "dead", finishedAt: lapse });
    expect(await packs().settledDependents([a!], lapse)).toEqual([{ id: onA.id, queue: w, state: "dead", run_at: T0 }]);
    await packs().reapExpiredLeases(lapse + 1, 100);
    expect(await rows().getTask(onB.id)).toMatchObject({ state: "pending", waitingOn: 0, runAt: lapse + 1 });
  });

  it("a dead pack task retried and completed is not counted twice", async () => {
    const [p, w] = [uniqueQueue("pdt-twice"), uniqueQueue("pdt-twice-w")];
    const [a, later] = await packTasks(p, [{}, { runAt: T0 + 1_000_000 }]);
    const join = await dependent(w, [a!, later!], { onDependencyFailure: "continue" });
    let tokens = await leasePacks(p, T0 + 1);
    await packs().failTasks([{ id: a!, leaseToken: tokens.get(a!)!, message: "x", retryable: false }], T0 + 2);
    expect(await rows().getTask(join.id)).toMatchObject({ state: "waiting", waitingOn: 1 });
    await packs().retryTask(a!, T0 + 3);
    tokens = await leasePacks(p, T0 + 4);
    const [outcome] = await packs().completeTasks([{ id: a!, leaseToken: tokens.get(a!)! }], T0 + 5);
    expect(outcome).toMatchObject({ ok: true, dependents: [] });
    expect(await rows().getTask(join.id)).toMatchObject({ state: "waiting", waitingOn: 1 });
  });

  it("a pack task named by its client's own id is a dependency too; an id that is no task is refused", async () => {
    const [p, w] = [uniqueQueue("pdt-client"), uniqueQueue("pdt-client-w")];
    const own = ulid(T0);
    const [a, b] = await packTasks(p, [{}, { id: own }]);
    expect(b).toBe(own);
    const join = await dependent(w, [own]);
    expect(join.state).toBe("waiting");
    const tokens = await leasePacks(p, T0 + 1);
    await packs().completeTasks([{ id: a!, leaseToken: tokens.get(a!)! }], T0 + 2);
    expect(await rows().getTask(join.id)).toMatchObject({ state: "waiting", waitingOn: 1 });
    await packs().completeTasks([{ id: own, leaseToken: tokens.get(own)! }], T0 + 3);
    expect(await rows().getTask(join.id)).toMatchObject({ state: "pending" });
    // A pack task's address whose slot has a client id of its own is not that task; a slot past the pack's end
    // is none.
    const address = a!.slice(0, 24) + "01";
    const past = a!.slice(0, 24) + "0Z";
    for (const id of [address, past]) {
      const error = await expectEdgeqError(rows().enqueueTasks(w, [{ dependsOn: [id] }], T0), "invalid_request");
      expect(error.message).toMatch(/^tasks\[0\]\.depends_on\[0\]: no task /);
    }
    await expectEdgeqError(packs().listDependents(address, { limit: 5 }), "not_found");
    await expectEdgeqError(packs().listDependencies(past, { limit: 5 }), "not_found");
    expect(await packs().listDependencies(a!, { limit: 5 })).toEqual({ entries: [], nextCursor: null });
  });

  it("a pack task owes its dependents on other databases their settlement from the step that finishes it", async () => {
    const p = uniqueQueue("pdt-remote");
    const [live, done, cancelled] = await packTasks(p, [{}, {}, {}]);
    const tokens = await leasePacks(p, T0 + 1, 2);
    await packs().completeTasks([{ id: done!, leaseToken: tokens.get(done!)! }], T0 + 2);
    const edge = (dependency: string, dependent: string) => ({ dependency, dependent, dependentQueue: "far" });
    const states = await packs().recordRemoteEdges(
      [edge(live!, "D-live"), edge(done!, "D-done"), edge(cancelled!, "D-cancel"), edge(ulid(T0), "D-none")],
      T0 + 3,
    );
    expect(Object.fromEntries(states)).toEqual({
      [live!]: { state: "processing", finished: false },
      [done!]: { state: "completed", finished: true },
      [cancelled!]: { state: "pending", finished: false },
    });
    const owed = async () =>
      (await packs().owedSettlements(10_000)).filter((o) => [live, done, cancelled].includes(o.dependency));
    expect(await owed()).toEqual([]);
    const [outcome] = await packs().completeTasks([{ id: live!, leaseToken: tokens.get(live!)! }], T0 + 4);
    expect(outcome).toMatchObject({ ok: true, dependents: [{ id: "D-live", queue: "far", remote: true }] });
    await packs().cancelTask(cancelled!, T0 + 5);
    expect(await packs().settledDependents([cancelled!], T0 + 5)).toEqual([
      { id: "D-cancel", queue: "far", state: "waiting", run_at: 0, remote: true },
    ]);
    expect(byId((await owed()).map((o) => ({ id: o.dependency, ...o })))).toEqual(
      byId([
        {
          id: live!,
          dependency: live!,
          dependent: "D-live",
          dependentQueue: "far",
          outcome: "completed",
          finishedAt: T0 + 4,
          createdAt: T0 + 3,
        },
        {
          id: cancelled!,
          dependency: cancelled!,
          dependent: "D-cancel",
          dependentQueue: "far",
          outcome: "cancelled",
          finishedAt: T0 + 5,
          createdAt: T0 + 3,
        },
      ]),
    );
    expect(await packs().dropSettlements([{ dependency: live!, dependent: "D-live" }], T0 + 6)).toBe(1);
    expect(await packs().dropSettlements([{ dependency: live!, dependent: "D-live" }], T0 + 6)).toBe(0);
    // Delivered and kept for the pack task's dependents page (a delivery deletes only one whose task is gone).
    expect((await packs().listDependents(live!, { limit: 10 })).entries).toEqual([
      { id: "D-live", queue: "far", type: null, state: null, outcome: "completed", remote: true },
    ]);
    // The dependent's half has nothing to act on here: a pack task never waits.
    await expectEdgeqError(
      packs().settleRemoteWait({ dependency: "X", dependent: live!, outcome: "completed" }, T0 + 7),
      "not_found",
    );
    expect(await packs().listRemoteWaits(live!)).toEqual([]);
  });

  it("a pack enqueue refuses a fan-out naming its join (a fan-out is enqueued as rows)", async () => {
    const error = await expectEdgeqError(
      packs().enqueueFanOut(uniqueQueue("pdt-fan"), [{}], { type: "join" }, T0),
      "invalid_request",
    );
    expect(error.message).toMatch(/^join: /);
  });

  it("retention deletes a pruned pack's settled edges whose other end is gone, and keeps those a dependent still needs", async () => {
    // Today's clock (pack ids are time-ordered: the prune walks those below its cutoff), on queues that keep
    // finished tasks MIN_RETENTION_S.
    const base = Date.now();
    const [p, w, kept] = [uniqueQueue("pdt-prune"), uniqueQueue("pdt-prune-w"), uniqueQueue("pdt-prune-kept")];
    await packs().putQueueConfig(p, { retention_s: MIN_RETENTION_S }, base, PROCESSORS);
    await rows().putQueueConfig(w, { retention_s: MIN_RETENTION_S }, base, PROCESSORS);
    const own = ulid(base);
    const [a, b, c] = await packTasks(p, [{}, {}, { id: own }], base);
    const gone = await dependent(w, [a!, c!], { onDependencyFailure: "continue" }, base);
    const stays = await dependent(kept, [a!], {}, base); // its queue keeps it for the default retention
    await packs().recordRemoteEdges([{ dependency: b!, dependent: "D-far", dependentQueue: "far" }], base);
    const tokens = await leasePacks(p, base + 1);
    await packs().completeTasks(
      [a!, b!, c!].map((id) => ({ id, leaseToken: tokens.get(id)! })),
      base + 2,
    );
    expect(await rows().getTask(gone.id)).toMatchObject({ state: "pending" });
    await packs().dropSettlements([{ dependency: b!, dependent: "D-far" }], base + 3);
    await rows().cancelTask(gone.id, base + 4);
    const after = base + 2 * MIN_RETENTION_S * 1000;
    const edges = async () =>
      (
        await openDb(env.DB).all<{ e: string }>(sql`SELECT dependency || '>' || dependent AS e FROM task_edges
          WHERE dependency IN (${a}, ${b}, ${c}) UNION ALL
          SELECT dependency || '>' || dependent FROM remote_edges WHERE dependency IN (${a}, ${b}, ${c}) ORDER BY 1`)
      ).map((r) => r.e);
    expect(await edges()).toEqual([`${a}>${gone.id}`, `${a}>${stays.id}`, `${b}>D-far`, `${own}>${gone.id}`].sort());
    for (
      let i = 0;
      i < 100 &&
      (await rows()
        .getTask(gone.id)
        .then(
          () => true,
          () => false,
        ));
      i++
    ) {
      await rows().pruneByRetention(after);
    }
    for (
      let i = 0;
      i < 100 &&
      (await packs()
        .listDependents(a!, { limit: 1 })
        .then(
          () => true,
          () => false,
        ));
      i++
    ) {
      await packs().pruneByRetention(after);
    }
    // The row dependent's own prune took its edges; the pack's prune took the delivered settlement; the edge of
    // the dependent still kept stays (it lists its dependency as pruned).
    expect(await edges()).toEqual([`${a}>${stays.id}`]);
    expect((await rows().listDependencies(stays.id, { limit: 5 })).entries).toMatchObject([
      { id: a, queue: null, state: null },
    ]);
  });

  it("rows: a pack completion releasing one row dependent writes 3 more rows, as a row's does; one nobody waits on, none more", async () => {
    const [p, w] = [uniqueQueue("pdt-rows"), uniqueQueue("pdt-rows-w")];
    // A third task stays live: neither completion finishes the pack (that adds its packs_done entry).
    const [a, b] = await packTasks(p, [{}, {}, {}]);
    await dependent(w, [a!]);
    const tokens = await leasePacks(p, T0 + 1);
    const meter = meteredD1(env.DB);
    const metered = packTaskStore(openDb(meter.db));
    await metered.completeTasks([{ id: b!, leaseToken: tokens.get(b!)! }], T0 + 2);
    const plain = { written: meter.usage.rowsWritten, read: meter.usage.rowsRead };
    meter.reset();
    await metered.completeTasks([{ id: a!, leaseToken: tokens.get(a!)! }], T0 + 3);
    const settling = { written: meter.usage.rowsWritten, read: meter.usage.rowsRead };
    console.log(
      `pack completion: nobody waits ${JSON.stringify(plain)}; one row dependent ${JSON.stringify(settling)}`,
    );
    expect(plain.written).toBe(2); // the pack's row, one counter row
    // The dependent's row and its live-index entry (released: its run time and priority move), the edge's
    // outcome — the row store's +3 (docs/dependencies.md).
    expect(settling.written).toBe(plain.written + 3);
  });

  it("an ack over many packs reports the dependent of any of them (its gate within a statement's 100 parameters)", async () => {
    const [p, w] = [uniqueQueue("pdt-many"), uniqueQueue("pdt-many-w")];
    // 60 packs: tasks of 60 types are 60 packs.
    const ids = (
      await packs().enqueueTasks(
        p,
        Array.from({ length: 60 }, (_, i) => ({ type: `t${i}` })),
        T0,
      )
    ).tasks.map((t) => t.id);
    expect(new Set(ids.map((id) => id.slice(0, 24))).size).toBe(60);
    const join = await dependent(w, [ids[59]!]);
    const tokens = await leasePacks(p, T0 + 1);
    const outcomes = await packs().completeTasks(
      ids.map((id) => ({ id, leaseToken: tokens.get(id)! })),
      T0 + 2,
    );
    expect(outcomes.every((o) => o.ok)).toBe(true);
    expect(outcomes[59]).toMatchObject({ dependents: [{ id: join.id, state: "pending" }] });
  });
});
