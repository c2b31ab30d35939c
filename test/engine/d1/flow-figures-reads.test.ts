import { env } from "cloudflare:workers";
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { openDb } from "../../../src/db/client";
import { d1TaskStore } from "../../../src/engine/d1-store";
import { T0, db, uniqueQueue, PROCESSORS } from "../../helpers";
import { meteredD1 } from "../../support/metered-d1";

// D1 store only: what /metrics's flow figures read of flow_keys. The queues paused whole are found from the
// queues with a flow config, each queue row probed by key, never by a read of every key of every queue.
describe("flow figures' reads", () => {
  it("do not grow with the flow keys of other queues", async () => {
    const paused = uniqueQueue("flowfig-reads");
    await d1TaskStore(db()).putQueueConfig(paused, { flow: {} }, T0, PROCESSORS);
    await d1TaskStore(db()).setFlowPaused(paused, null, true, T0);
    const reads = async () => {
      const meter = meteredD1(env.DB);
      const figures = await d1TaskStore(openDb(meter.db)).flowFigures(T0, 3);
      expect(figures.pausedQueues).toContain(paused);
      return meter.usage.rowsRead;
    };
    const before = await reads();
    // Keys of another queue (its idle keys, as a lease's token buckets leave them): a read of flow_keys by
    // key alone read every one of them.
    const others = uniqueQueue("flowfig-reads-others");
    const n = 5_000;
    await db().run(sql`WITH RECURSIVE i(k) AS (SELECT 1 UNION ALL SELECT k + 1 FROM i WHERE k < ${n})
      INSERT INTO flow_keys (queue, key, updated_at) SELECT ${others}, 'k' || k, ${T0} FROM i`);
    try {
      const after = await reads();
      console.log(`flow figures beside ${n} other flow keys: ${after - before} rows read more`);
      expect(after - before).toBeLessThan(n / 10);
    } finally {
      await db().run(sql`DELETE FROM flow_keys WHERE queue = ${others}`);
    }
  });
});
