import { expect, it } from "vitest";
import type { NewTask } from "../../src/engine/enqueue";
import type { TaskStore } from "../../src/engine/store";
import { T0, uniqueQueue } from "../helpers";
import { expectEdgeqError, storeFixtures, VT_S } from "./conformance/fixtures";
import { describeStore, itNeeds } from "./conformance/store-kinds";

/**
 * Properties of dependencies across stores (src/engine/store-remote-dependencies.ts), one store's half at a
 * time: the dependency's store owes a settlement from the very step that finishes the dependency; the
 * dependent's store counts a settlement once, under the same policies as a local dependency. Delivering
 * between stores is the shard layer's (test/shards/remote-dependencies.test.ts).
 */
describeStore(
  "dependencies across stores",
  (kind) => {
    const { store, enqueueOne, leaseOne, row, completedTask } = storeFixtures(kind);
    const other = (): TaskStore => kind.otherStore();
    // The dependent's half (a task that waits, enqueued in the store under test) is the row layout's only: a pack
    // task never waits (docs/design/packs.md, "Dependencies across the two layouts"). The dependency's half runs
    // on every kind.
    const dependentHalf = itNeeds(kind, "all");

    /** The settlements owed on `on` for these dependencies. */
    async function owedFor(on: TaskStore, ...dependencies: string[]) {
      return (await on.owedSettlements(10_000)).filter((o) => dependencies.includes(o.dependency));
    }

    /** A dependent on the other store waiting on `dependency` (unfinished there), with `task`'s fields. */
    async function remoteDependent(
      queue: string,
      dependency: string,
      task: NewTask = {},
      outcome: string | null = null,
    ) {
      const { tasks } = await other().enqueueTasks(
        queue,
        [{ type: "join", dependsOn: [dependency], remoteDependencies: [{ id: dependency, outcome }], ...task }],
        T0,
      );
      return tasks[0]!;
    }

    it("writes an edge for an unfinished dependency, none for a finished one, and answers each one's state", async () => {
      const live = await enqueueOne(uniqueQueue("xdeps-record"));
      const done = await completedTask(uniqueQueue("xdeps-record-done"));
      const states = await store().recordRemoteEdges(
        [live, done, "01JZZZZZZZZZZZZZZZZZZZZZZZ"].map((dependency) => ({
          dependency,
          dependent: `dep-of-${dependency}`,
          dependentQueue: "elsewhere",
        })),
        T0,
      );
      expect(Object.fromEntries(states)).toEqual({
        [live]: { state: "pending", finished: false },
        [done]: { state: "completed", finished: true },
      });
      expect(await owedFor(store(), live, done)).toEqual([]);
    });

    it("owes the settlement from the step that finishes the dependency, and the ack reports it", async () => {
      const q = uniqueQueue("xdeps-owe");
      const x = await enqueueOne(q);
      await store().recordRemoteEdges([{ dependency: x, dependent: "D1", dependentQueue: "joins" }], T0);
      const leased = await leaseOne(q, T0 + 1);
      const [outcome] = await store().completeTasks([{ id: x, leaseToken: leased.leaseToken }], T0 + 2);
      expect(outcome).toMatchObject({ ok: true, dependents: [{ id: "D1", queue: "joins", remote: true }] });
      expect(await owedFor(store(), x)).toEqual([
        {
          dependency: x,
          dependent: "D1",
          dependentQueue: "joins",
          outcome: "completed",
          finishedAt: T0 + 2,
          createdAt: T0,
        },
      ]);
      expect(await store().dropSettlements([{ dependency: x, dependent: "D1" }], T0 + 3)).toBe(1);
      expect(await store().dropSettlements([{ dependency: x, dependent: "D1" }], T0 + 3)).toBe(0);
      expect(await owedFor(store(), x)).toEqual([]);
      // Delivered and kept: the dependency's dependents page still lists it, with its outcome.
      expect((await store().listDependents(x, { limit: 10 })).entries).toEqual([
        { id: "D1", queue: "joins", type: null, state: null, outcome: "completed", remote: true },
      ]);
    });

    dependentHalf(
      "owes it for a dependent ended by a cascade (a failure ending a local dependent with a remote one)",
      async () => {
        const q = uniqueQueue("xdeps-cascade");
        const a = await enqueueOne(q);
        const { tasks } = await store().enqueueTasks(q, [{ type: "mid", dependsOn: [a] }], T0);
        const mid = tasks[0]!.id;
        await store().recordRemoteEdges([{ dependency: mid, dependent: "D2", dependentQueue: "joins" }], T0);
        await store().cancelTask(a, T0 + 5);
        expect(await row(mid)).toMatchObject({ state: "dead" });
        expect(await owedFor(store(), mid)).toMatchObject([{ dependent: "D2", outcome: "dead", finishedAt: T0 + 5 }]);
      },
    );

    dependentHalf("counts a settlement once: released at zero, a repeat changes nothing", async () => {
      const q = uniqueQueue("xdeps-settle");
      const d = (
        await other().enqueueTasks(
          q,
          [
            {
              dependsOn: ["X-remote-0", "X-remote-1"],
              remoteDependencies: [
                { id: "X-remote-0", outcome: null },
                { id: "X-remote-1", outcome: null },
              ],
              runAt: T0 + 50,
            },
          ],
          T0,
        )
      ).tasks[0]!;
      expect(d.state).toBe("waiting");
      expect(await other().getTask(d.id)).toMatchObject({ state: "waiting", waitingOn: 2 });
      const first = { dependency: "X-remote-0", dependent: d.id, outcome: "completed" };
      expect(await other().settleRemoteWait(first, T0 + 5)).toBeNull();
      expect(await other().settleRemoteWait(first, T0 + 6)).toBeNull(); // a repeat: not counted again
      expect(await other().getTask(d.id)).toMatchObject({ state: "waiting", waitingOn: 1 });
      const settlement = { dependency: "X-remote-1", dependent: d.id, outcome: "completed" };
      expect(await other().settleRemoteWait(settlement, T0 + 10)).toMatchObject({
        id: d.id,
        state: "pending",
        run_at: T0 + 50,
      });
      expect(await other().settleRemoteWait(settlement, T0 + 20)).toBeNull();
      expect(await other().getTask(d.id)).toMatchObject({ state: "pending", waitingOn: 0, runAt: T0 + 50 });
      expect(await other().listRemoteWaits(d.id)).toEqual([
        { id: "X-remote-0", outcome: "completed" },
        { id: "X-remote-1", outcome: "completed" },
      ]);
      const [leased] = await other().leaseTasks({ queue: q, max: 5, visibilityTimeoutS: VT_S, holder: "w" }, T0 + 50);
      expect(leased?.id).toBe(d.id);
    });

    dependentHalf("waits for local and remote dependencies together", async () => {
      const q = uniqueQueue("xdeps-mixed");
      const local = (await other().enqueueTasks(q, [{ type: "child" }], T0)).tasks[0]!.id;
      const { tasks } = await other().enqueueTasks(
        q,
        [{ dependsOn: [local, "X-remote-2"], remoteDependencies: [{ id: "X-remote-2", outcome: null }] }],
        T0,
      );
      const d = tasks[0]!;
      expect(await other().getTask(d.id)).toMatchObject({ state: "waiting", waitingOn: 2 });
      expect(
        await other().settleRemoteWait({ dependency: "X-remote-2", dependent: d.id, outcome: "completed" }, T0 + 1),
      ).toBeNull();
      expect(await other().getTask(d.id)).toMatchObject({ state: "waiting", waitingOn: 1 });
      // Its local edge only: no edge row for the remote one.
      expect((await other().listDependencies(d.id, { limit: 10 })).entries.map((e) => e.id).sort()).toEqual(
        [local, "X-remote-2"].sort(),
      );
    });

    dependentHalf("counts a dependency finished before the enqueue at once, as its outcome says", async () => {
      const q = uniqueQueue("xdeps-done");
      expect((await remoteDependent(q, "X-done", {}, "completed")).state).toBe("pending");
      expect((await remoteDependent(q, "X-dead", { onDependencyFailure: "fail" }, "dead")).state).toBe("dead");
      expect((await remoteDependent(q, "X-gone", { onDependencyFailure: "cancel" }, "cancelled")).state).toBe(
        "cancelled",
      );
      expect((await remoteDependent(q, "X-dead2", { onDependencyFailure: "continue" }, "dead")).state).toBe("pending");
    });

    dependentHalf(
      "a failed dependency ends the dependent as its policy says, and cascades to its own dependents there",
      async () => {
        const q = uniqueQueue("xdeps-policy");
        const fail = await remoteDependent(q, "X-f", { onDependencyFailure: "fail" });
        const cancel = await remoteDependent(q, "X-c", { onDependencyFailure: "cancel" });
        const cont = await remoteDependent(q, "X-k", { onDependencyFailure: "continue" });
        const downstream = (await other().enqueueTasks(q, [{ type: "down", dependsOn: [fail.id] }], T0)).tasks[0]!;
        expect(
          await other().settleRemoteWait({ dependency: "X-f", dependent: fail.id, outcome: "dead" }, T0 + 7),
        ).toMatchObject({
          state: "dead",
        });
        expect(await other().getTask(fail.id)).toMatchObject({ state: "dead", waitingOn: 0, finishedAt: T0 + 7 });
        expect(JSON.parse((await other().getTask(fail.id)).errors)).toEqual([
          { attempt: 0, at: T0 + 7, message: "dependency X-f ended dead", kind: "dependency" },
        ]);
        expect(await other().getTask(downstream.id)).toMatchObject({ state: "dead" });
        expect(
          await other().settleRemoteWait({ dependency: "X-c", dependent: cancel.id, outcome: "expired" }, T0 + 7),
        ).toMatchObject({
          state: "cancelled",
        });
        expect(
          await other().settleRemoteWait({ dependency: "X-k", dependent: cont.id, outcome: "cancelled" }, T0 + 7),
        ).toMatchObject({
          state: "pending",
        });
        // A repeat of the failure changes nothing either.
        expect(
          await other().settleRemoteWait({ dependency: "X-f", dependent: fail.id, outcome: "dead" }, T0 + 9),
        ).toBeNull();
        expect(await other().getTask(fail.id)).toMatchObject({ finishedAt: T0 + 7 });
      },
    );

    dependentHalf(
      "answers not_found for a dependent it does not hold, and leaves a cancelled dependent as it is",
      async () => {
        await expectEdgeqError(
          other().settleRemoteWait(
            { dependency: "X", dependent: "01JZZZZZZZZZZZZZZZZZZZZZZZ", outcome: "completed" },
            T0,
          ),
          "not_found",
        );
        const q = uniqueQueue("xdeps-cancelled");
        const d = await remoteDependent(q, "X-z");
        await other().cancelTask(d.id, T0 + 1);
        expect(
          await other().settleRemoteWait({ dependency: "X-z", dependent: d.id, outcome: "completed" }, T0 + 2),
        ).toBeNull();
        expect(await other().getTask(d.id)).toMatchObject({ state: "cancelled" });
      },
    );

    dependentHalf(
      "a move carries a waiting dependent's waits and a dependency's edges, converting those cut in two",
      async () => {
        const q = uniqueQueue("xdeps-move");
        const stay = uniqueQueue("xdeps-stay");
        const x = await enqueueOne(stay); // stays: owes its settlement to the dependent leaving
        const d = (await store().enqueueTasks(q, [{ dependsOn: [x] }], T0)).tasks[0]!.id;
        const y = await enqueueOne(q); // leaves: its dependent staying waits remotely
        const e = (await store().enqueueTasks(stay, [{ dependsOn: [y] }], T0)).tasks[0]!.id;
        await store().recordRemoteEdges([{ dependency: y, dependent: "D-far", dependentQueue: "far" }], T0);
        const taken = await store().takeOutForTransit({ queue: q }, { shard: "DB_1", slot: 1 }, 100, T0 + 1);
        expect(taken).toBe(2);
        const rows = (await store().listTransit(1000)).filter((r) => r.queue === q);
        await other().putInFromTransit(rows.map((r) => ({ ...r, rowSlot: null })));
        await other().putInFromTransit(rows.map((r) => ({ ...r, rowSlot: null }))); // a repeat: nothing twice
        await store().clearTransit(rows.map((r) => r.id));

        // x finishing here is owed to d, now on the other store, where d waits for it.
        expect(await other().listRemoteWaits(d)).toEqual([{ id: x, outcome: null }]);
        const leased = await leaseOne(stay, T0 + 2);
        expect(leased.id).toBe(x);
        await store().completeTasks([{ id: x, leaseToken: leased.leaseToken }], T0 + 3);
        expect(await owedFor(store(), x)).toMatchObject([{ dependent: d, dependentQueue: q, outcome: "completed" }]);
        expect(
          await other().settleRemoteWait({ dependency: x, dependent: d, outcome: "completed" }, T0 + 4),
        ).toMatchObject({
          state: "pending",
        });
        // y finishing there owes both its dependents: e (stayed here) and D-far (carried).
        expect(await store().listRemoteWaits(e)).toEqual([{ id: y, outcome: null }]);
        const [ly] = await other().leaseTasks({ queue: q, max: 1, visibilityTimeoutS: VT_S, holder: "w" }, T0 + 5);
        expect(ly?.id).toBe(y);
        await other().failTasks([{ id: y, leaseToken: ly!.leaseToken!, message: "no", retryable: false }], T0 + 6);
        expect((await owedFor(other(), y)).map((o) => [o.dependent, o.outcome]).sort()).toEqual(
          [
            ["D-far", "dead"],
            [e, "dead"],
          ].sort(),
        );
        expect(await store().settleRemoteWait({ dependency: y, dependent: e, outcome: "dead" }, T0 + 7)).toMatchObject({
          state: "dead",
        });
        await other().dropSettlements(
          (await owedFor(other(), y)).map((o) => o),
          T0 + 8,
        );
      },
    );
  },
  { needs: ["core", "dependencies", "remoteDependencies"] },
);
