import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { openDb } from "../../../src/db/client";
import { d1TaskStore } from "../../../src/engine/d1-store";
import { db, uniqueQueue } from "../../helpers";
import { meteredD1 } from "../../support/metered-d1";
import { besideUnrelatedEdges } from "../../support/unrelated-edges";

// D1 store only: the trigger `tasks_settle_dependents` (migrations 0016, 0024) settles a finishing task's
// dependents inside the statement that finishes it. Its walks start from the task finishing and reach its
// edges by their key's prefix; with plain joins SQLite was free to start from `task_edges` and did: a failure's
// step (dependents of policy fail or cancel) read every edge of the database.

const T = Date.UTC(2026, 10, 27, 23);

describe("the dependents trigger beside many unrelated edges", () => {
  it("a cancel that ends a dependent (policy cancel) and a completion that releases one read in proportion to them", async () => {
    const queue = uniqueQueue("settle-reads");
    const store = d1TaskStore(db());
    const UNRELATED = 5_000;
    await besideUnrelatedEdges(db(), { prefix: `~${queue}-`, n: UNRELATED }, async () => {
      const [failing, passing] = (await store.enqueueTasks(queue, [{ payload: 1 }, { payload: 2 }], T)).tasks;
      const { tasks } = await store.enqueueTasks(
        queue,
        [
          { payload: "cancelled with it", dependsOn: [failing!.id], onDependencyFailure: "cancel" },
          { payload: "released", dependsOn: [passing!.id] },
        ],
        T + 1,
      );
      const meter = meteredD1(env.DB);
      const metered = d1TaskStore(openDb(meter.db));
      await metered.cancelTask(failing!.id, T + 2);
      const cancelRead = meter.usage.rowsRead;
      expect((await store.getTask(tasks[0]!.id))!.state).toBe("cancelled");
      meter.reset();
      const [leased] = await store.leaseTasks({ queue, max: 1, visibilityTimeoutS: 30, holder: "w" }, T + 3);
      expect(leased!.id).toBe(passing!.id);
      await metered.completeTasks([{ id: passing!.id, leaseToken: leased!.leaseToken! }], T + 4);
      const completeRead = meter.usage.rowsRead;
      expect((await store.getTask(tasks[1]!.id))!.state).toBe("pending");
      console.log(`beside ${UNRELATED} unrelated edges: cancel ${cancelRead} rows read, complete ${completeRead}`);
      // With the trigger's joins unpinned (0016) the cancel read every edge: 10,049 rows (measured).
      expect(cancelRead).toBeLessThan(200);
      expect(completeRead).toBeLessThan(200);
    });
  });
});
