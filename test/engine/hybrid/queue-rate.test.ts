import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { openDb } from "../../../src/db/client";
import { hybridTaskStore } from "../../../src/engine/hybrid/hybrid-store";
import { packTaskIds } from "../../../src/engine/hybrid/layout-of-ids";
import { T0, uniqueQueue } from "../../helpers";
import { meteredD1 } from "../../support/metered-d1";

// A queue rate set after pack tasks were enqueued (docs/design/packs.md, "A queue rate set over pack tasks"):
// the pack tasks stay in packs, and every lease of the queue — rows and packs alike — starts at most the
// rate's tasks per period (src/engine/hybrid/queue-rate.ts).

const store = () => hybridTaskStore(openDb(env.DB));
const plain = (n: number) => Array.from({ length: n }, (_, i) => ({ payload: { i } }));
// This file's own time range, away from other files' T0.
const T = T0 + 40 * 86_400_000;

/** A queue with `packed` tasks in packs and `rows` single-task rows, then a queue rate of 4 a minute. */
async function ratedQueue(prefix: string, packed: number, rows: number) {
  const queue = uniqueQueue(prefix);
  const s = store();
  const inPacks = (await s.enqueueTasks(queue, plain(packed), T)).tasks.map((t) => t.id);
  expect((await packTaskIds(openDb(env.DB), inPacks)).size).toBe(packed);
  for (let i = 0; i < rows; i++) await s.enqueueTasks(queue, plain(1), T);
  await s.putQueueConfig(queue, { flow: { rate: { count: 4, per: "minute" } } }, T, []);
  return { queue, s };
}

const lease = (s: ReturnType<typeof store>, queue: string, max: number, now: number, holder = "w") =>
  s.leaseTasks({ queue, max, visibilityTimeoutS: 600, holder }, now);

describe("hybrid store: a queue rate set over pack tasks", () => {
  it("a lease takes at most the rate's tasks per window across both layouts", async () => {
    const { queue, s } = await ratedQueue("hy-rate", 20, 3);
    expect(await lease(s, queue, 10, T + 1)).toHaveLength(4);
    expect(await lease(s, queue, 10, T + 2)).toHaveLength(0);
    // 4 a minute: one token every 15 s.
    expect(await lease(s, queue, 10, T + 1 + 15_000)).toHaveLength(1);
    expect(await lease(s, queue, 10, T + 2 + 15_000)).toHaveLength(0);
    // A quiet spell fills the bucket to its size (the count), no more.
    expect(await lease(s, queue, 10, T + 1 + 15_000 + 10 * 60_000)).toHaveLength(4);
  });

  it("the rows' flow lease and the packs' take from one bucket (rows first in lease order)", async () => {
    const queue = uniqueQueue("hy-rate-rows");
    const s = store();
    const r1 = (await s.enqueueTasks(queue, [{ payload: "r", priority: 5 }], T)).tasks[0]!.id;
    const r2 = (await s.enqueueTasks(queue, [{ payload: "r2", priority: 5 }], T + 1)).tasks[0]!.id;
    const packed = (await s.enqueueTasks(queue, plain(10), T)).tasks.map((t) => t.id);
    await s.putQueueConfig(queue, { flow: { rate: { count: 3, per: "minute" } } }, T, []);
    const taken = (await lease(s, queue, 10, T + 2)).map((t) => t.id);
    expect(taken).toEqual([r1, r2, packed[0]]);
    expect(await lease(s, queue, 10, T + 3)).toHaveLength(0);
  });

  it("concurrent leasers together take no more than the bucket holds, and unused tokens are given back", async () => {
    const { queue, s } = await ratedQueue("hy-rate-race", 6, 0);
    const leases = await Promise.all(Array.from({ length: 6 }, (_, w) => lease(s, queue, 3, T + 1, `w${w}`)));
    const taken = leases.flat().map((t) => t.id);
    expect(taken).toHaveLength(4);
    expect(new Set(taken).size).toBe(4);
    // Two pack tasks left, the bucket refilled: a lease of 10 reserves 4, leases 2, gives 2 back.
    expect(await lease(s, queue, 10, T + 1 + 60_000)).toHaveLength(2);
    await s.enqueueTasks(queue, plain(1), T + 1 + 60_000);
    expect(await lease(s, queue, 10, T + 2 + 60_000)).toHaveLength(1);
  });

  it("a queue without a rate of its own (a key's limits only) leases its packs as before", async () => {
    const queue = uniqueQueue("hy-rate-none");
    const s = store();
    await s.enqueueTasks(queue, plain(8), T);
    await s.putQueueConfig(queue, { flow: { default: { concurrency: 1 } } }, T, []);
    expect(await lease(s, queue, 10, T + 1)).toHaveLength(8);
  });

  it("the rate costs a lease of packs one row written (the bucket), two when it gives tokens back", async () => {
    const written = async (rate: boolean, max: number) => {
      const queue = uniqueQueue("hy-rate-cost");
      await store().enqueueTasks(queue, plain(6), T);
      const flow = rate ? { rate: { count: 100, per: "minute" as const } } : { default: { concurrency: 1 } };
      await store().putQueueConfig(queue, { flow }, T, []);
      const meter = meteredD1(env.DB);
      const leased = await hybridTaskStore(openDb(meter.db)).leaseTasks(
        { queue, max, visibilityTimeoutS: 60, holder: "w" },
        T + 1,
      );
      return { n: leased.length, rows: meter.usage.rowsWritten };
    };
    const plainLease = await written(false, 4);
    const rated = await written(true, 4);
    const givesBack = await written(true, 10);
    console.log(
      `lease of packs: ${plainLease.rows} rows written; rated: ${rated.rows}; rated, tokens given back: ${givesBack.rows}`,
    );
    expect([plainLease.n, rated.n, givesBack.n]).toEqual([4, 4, 6]);
    expect(rated.rows).toBe(plainLease.rows + 1);
    expect(givesBack.rows).toBe(plainLease.rows + 2);
  });
});
