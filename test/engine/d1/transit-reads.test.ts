import { env } from "cloudflare:workers";
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { openDb } from "../../../src/db/client";
import { d1TaskStore } from "../../../src/engine/d1-store";
import { T0, db, uniqueQueue } from "../../helpers";
import { meteredD1 } from "../../support/metered-d1";
import { besideUnrelatedEdges } from "../../support/unrelated-edges";
import { seedPending } from "../../support/seed-tasks";

// D1 store only: what a take-out reads beside the tasks it moves. Its finished-task part walks the source
// table once (docs/scale.md); the statements that carry the moving tasks' dependency edges (src/engine/
// edge-transit.ts) probe by primary key from the transit rows — they once let SQLite scan `tasks` in four of
// their statements, five walks of the database per take-out.
/** The rows a take-out of `queue` (all of it: `moving` tasks) to another shard reads. */
async function takeOutReads(queue: string, moving: number): Promise<number> {
  const meter = meteredD1(env.DB);
  const moved = await d1TaskStore(openDb(meter.db)).takeOutForTransit(
    { queue },
    { shard: "DB_1", slot: 7 },
    10,
    T0 + 1,
  );
  expect(moved).toBe(moving);
  return meter.usage.rowsRead;
}

describe("a take-out's reads", () => {
  it("grow by one walk of the source table with the tasks of other queues, not more", async () => {
    const reads = async () => {
      const queue = uniqueQueue("transit-reads");
      await d1TaskStore(db()).enqueueTasks(queue, [{}, {}, {}], T0);
      return takeOutReads(queue, 3);
    };
    const before = await reads();
    const n = 20_000;
    const others = uniqueQueue("transit-reads-others");
    await seedPending(db(), others, n, { runAt: T0, createdAt: T0 });
    const after = await reads();
    expect(after - before).toBeLessThan(1.5 * n);
    expect(after - before).toBeGreaterThan(0); // the finished-task walk (docs/scale.md): this measures reads
    // Files share the database: the 20,000 go, as other files' ticks would otherwise read them.
    await db().run(sql`DELETE FROM tasks WHERE queue = ${others}`);
  });

  it("do not grow with the dependency edges of other tasks", async () => {
    const reads = async () => {
      const queue = uniqueQueue("transit-edge-reads");
      // A dependent and its dependency moving together, and one waiting on a task staying behind.
      const { tasks } = await d1TaskStore(db()).enqueueTasks(queue, [{}, {}], T0);
      const [a, b] = tasks.map((t) => t.id);
      const stay = uniqueQueue("transit-edge-stays");
      const { tasks: kept } = await d1TaskStore(db()).enqueueTasks(stay, [{}], T0);
      await d1TaskStore(db()).enqueueTasks(queue, [{ dependsOn: [a!, b!] }, { dependsOn: [kept[0]!.id] }], T0);
      return takeOutReads(queue, 4);
    };
    const before = await reads();
    // Edges of no task of this file: a statement that scanned task_edges read them all.
    const n = 5_000;
    await besideUnrelatedEdges(db(), { prefix: `~${uniqueQueue("transit-edge-others")}-`, n }, async () => {
      const after = await reads();
      expect(after - before).toBeLessThan(n / 10);
    });
  });
});
