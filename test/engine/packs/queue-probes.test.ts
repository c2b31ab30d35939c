import { env } from "cloudflare:workers";
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { openDb } from "../../../src/db/client";
import { packTaskStore } from "../../../src/engine/packs/pack-store";
import { T0, uniqueQueue } from "../../helpers";
import { meteredD1 } from "../../support/metered-d1";

// The pack store's reads of one queue's packs, live and finished (presence, a move's count, a retry's or
// redrive's candidates), beside many packs of another queue: each reads through `packs_live` and `packs_done`
// (src/engine/packs/queue-packs.ts), never the table. With `queue = ?` alone (both indexes are partial) SQLite
// scanned every pack of the database. Rows read measured with D1's meta.

/** Packs of another queue beside the measured ones: a scan of the table reads at least these. */
const OTHER_PACKS = 400;

const store = () => packTaskStore(openDb(env.DB));

async function rowsRead<T>(run: (s: ReturnType<typeof packTaskStore>) => Promise<T>): Promise<[T, number]> {
  const meter = meteredD1(env.DB);
  const answer = await run(packTaskStore(openDb(meter.db)));
  return [answer, meter.usage.rowsRead];
}

describe("pack store: one queue's packs read through its indexes, beside many other packs", () => {
  it("presence, a move's count and a revival's candidates read the queue's packs, not the table", async () => {
    // OTHER_PACKS live packs of their own queue (a type per pack), in one call.
    const others = uniqueQueue("probes-others");
    const backlog = Array.from({ length: 2 * OTHER_PACKS }, (_, i) => ({ type: `t${i >> 1}` }));
    await store().enqueueTasks(others, backlog, T0);
    const packs = await openDb(env.DB).get<{ n: number }>(sql`SELECT count(*) AS n FROM packs WHERE queue = ${others}`);
    expect(packs!.n).toBe(OTHER_PACKS);

    // The measured queue: a finished pack of two dead tasks (each failed for good).
    const queue = uniqueQueue("probes");
    await store().enqueueTasks(queue, [{}, {}], T0);
    const leased = await store().leaseTasks({ queue, max: 2, visibilityTimeoutS: 60, holder: "w" }, T0 + 1);
    expect(leased).toHaveLength(2);
    await store().failTasks(
      leased.map((t) => ({ id: t.id, leaseToken: t.leaseToken!, message: "boom", retryable: false })),
      T0 + 2,
    );

    const [found, foundRead] = await rowsRead((s) => s.hasQueueData(queue));
    expect(found).toBe(true);
    const [unknown, unknownRead] = await rowsRead((s) => s.hasQueueData(uniqueQueue("probes-never")));
    expect(unknown).toBe(false);
    const [held, heldRead] = await rowsRead((s) => s.countQueueTasksHeld(queue));
    expect(held).toBe(2);
    const [part, partRead] = await rowsRead((s) => s.countQueueTasksHeld(queue, { slot: 1, idGlob: "*" }));
    expect(part).toBe(2);
    const [dead, deadRead] = await rowsRead((s) => s.countForBulk(queue, "redrive", {}, 100));
    expect(dead).toBe(2);
    console.log(
      `beside ${OTHER_PACKS} other packs, rows read: presence ${foundRead} (unknown queue ${unknownRead}), count ` +
        `${heldRead} (a partition's ${partRead}), redrive candidates ${deadRead}`,
    );
    // A few rows each (the config's key, an index entry and its pack); a scan read OTHER_PACKS or more.
    for (const read of [foundRead, unknownRead, heldRead, partRead, deadRead]) expect(read).toBeLessThan(20);
  });
});
