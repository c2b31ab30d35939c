import { expect, it } from "vitest";
import { MAX_FAN_OUT } from "../../src/contracts/limits";
import { T0, uniqueQueue } from "../helpers";
import { expectEdgeqError, storeFixtures } from "./conformance/fixtures";
import { describeStore } from "./conformance/store-kinds";

/** Fan-out / fan-in in one call: children and a join that waits for all of them, atomically; the join reads
 * its children's results; waiting tasks cost leases nothing; the rows an edge and a join cost. */
describeStore("fan-in: children and their join in one atomic call", (kind) => {
  const { store, lease, row } = storeFixtures(kind);

  it("makes every child and a waiting join; the last child's completion releases it, with every result readable", async () => {
    const q = uniqueQueue("fan");
    const { tasks, join } = await store().enqueueFanOut(
      q,
      [
        { type: "part", payload: 1 },
        { type: "part", payload: 2 },
        { type: "part", payload: 3 },
      ],
      { type: "stitch" },
      T0,
    );
    expect(tasks.map((t) => t.state)).toEqual(["pending", "pending", "pending"]);
    expect(join.state).toBe("waiting");
    expect(await row(join.id)).toMatchObject({ state: "waiting", waitingOn: 3 });

    const leased = await lease(q, T0 + 1);
    expect(leased.map((t) => t.type)).toEqual(["part", "part", "part"]); // never the join
    const outcomes = await store().completeTasks(
      leased.map((t) => ({ id: t.id, leaseToken: t.leaseToken!, result: { n: JSON.parse(t.payload) } })),
      T0 + 2,
    );
    // The completion reports the join it released (for its queue's wake-up and its `ready` event).
    const released = outcomes.flatMap((o) => (o.ok ? (o.dependents ?? []) : []));
    expect(released).toEqual([{ id: join.id, queue: q, state: "pending", run_at: T0 + 2 }]);

    const { entries, nextCursor } = await store().listDependencies(join.id, { limit: 100 });
    expect(nextCursor).toBeNull();
    expect(entries.map((e) => [e.state, e.result && JSON.parse(e.result)])).toEqual(
      [...tasks].sort((a, b) => (a.id < b.id ? -1 : 1)).map((t) => ["completed", { n: tasks.indexOf(t) + 1 }]),
    );
    const dependents = await store().listDependents(tasks[0]!.id, { limit: 10 });
    expect(dependents.entries).toEqual([
      { id: join.id, queue: q, type: "stitch", state: "pending", outcome: "completed" },
    ]);
  });

  it("refuses too many children, a keyed child, or an unknown dependency of the join, storing nothing", async () => {
    const q = uniqueQueue("fan-bad");
    const many = Array.from({ length: MAX_FAN_OUT + 1 }, () => ({}));
    expect((await expectEdgeqError(store().enqueueFanOut(q, many, {}, T0), "invalid_request")).message).toMatch(
      /^tasks: /,
    );
    expect(
      (await expectEdgeqError(store().enqueueFanOut(q, [{}, { dedupeKey: "k" }], {}, T0), "invalid_request")).message,
    ).toMatch(/^tasks\[1\]\.dedupe_key/);
    const unknown = "01JD3Z8Q9V6Y4T2N1R0M5K7H8J";
    expect(
      (await expectEdgeqError(store().enqueueFanOut(q, [{}], { dependsOn: [unknown] }, T0), "invalid_request")).message,
    ).toMatch(/^join\.depends_on\[0\]/);
    const { counts } = await store().queueStats(q, {}, T0);
    expect(Object.values(counts).reduce((n, c) => n + c, 0)).toBe(0);
  });

  it("10,000 waiting tasks cost a lease nothing: its reads do not grow with them", async () => {
    const q = uniqueQueue("fan-reads");
    const [dep] = (await store().enqueueTasks(q, [{ type: "dep", runAt: T0 + 3_600_000 }], T0)).tasks;
    const leaseReads = async () => {
      const meter = kind.measure();
      await meter.store.leaseTasks({ queue: q, max: 10, visibilityTimeoutS: 30, holder: "w" }, T0 + 10);
      return meter.rowsRead();
    };
    await store().enqueueTasks(
      q,
      Array.from({ length: 5 }, () => ({ type: "due" })),
      T0,
    );
    const before = await leaseReads();
    const waiting = Array.from({ length: 10_000 }, () => ({ type: "waits", dependsOn: [dep!.id] }));
    await store().enqueueTasks(q, waiting, T0);
    await store().enqueueTasks(
      q,
      Array.from({ length: 5 }, () => ({ type: "due" })),
      T0,
    );
    const after = await leaseReads();
    // The second lease also walks past the first one's 5 tasks, now in flight: a few rows, not 10,000.
    expect(after).toBeLessThan(before + 20);
    console.log(`lease of 10 reads: ${before} rows without waiting tasks, ${after} beside 10,000 waiting`);
    await kind.discard(q);
  }, 60_000);

  it("rows written: one per edge at enqueue; a child's completion three more than a plain one", async () => {
    const q = uniqueQueue("fan-cost");
    const plain = kind.measure();
    await plain.store.enqueueTasks(q, [{ type: "x" }], T0);
    const plainRows = plain.rowsWritten();
    const meter = kind.measure();
    const { tasks, join } = await meter.store.enqueueFanOut(q, [{}, {}, {}, {}], { type: "join" }, T0);
    const fanOutRows = meter.rowsWritten();
    // 4 children + the join as plain tasks would cost 5 × plainRows (counters aside); each edge one row more.
    console.log(`plain enqueue of 1: ${plainRows} rows; fan-out of 4 + join: ${fanOutRows} rows`);
    const leased = await lease(q, T0 + 1, 5);
    const withoutDependent = leased.find((t) => t.type === "x")!;
    const m1 = kind.measure();
    await m1.store.completeTasks([{ id: withoutDependent.id, leaseToken: withoutDependent.leaseToken! }], T0 + 2);
    const plainComplete = m1.rowsWritten();
    const child = leased.find((t) => t.id === tasks[0]!.id)!;
    const m2 = kind.measure();
    await m2.store.completeTasks([{ id: child.id, leaseToken: child.leaseToken! }], T0 + 2);
    const childComplete = m2.rowsWritten();
    console.log(`complete without dependents: ${plainComplete} rows; a join's child: ${childComplete} rows`);
    expect(childComplete - plainComplete).toBe(3);
    // The last child's completion also releases the join: its live index entry moves (one more row).
    const rest = leased.filter((t) => t.type !== "x" && t.id !== child.id);
    await store().completeTasks(
      rest.slice(0, 2).map((t) => ({ id: t.id, leaseToken: t.leaseToken! })),
      T0 + 3,
    );
    const last = rest[2]!;
    const m3 = kind.measure();
    await m3.store.completeTasks([{ id: last.id, leaseToken: last.leaseToken! }], T0 + 4);
    console.log(`the last child's completion (releases the join): ${m3.rowsWritten()} rows`);
    expect(await row(join.id)).toMatchObject({ state: "pending" });
  });
});
