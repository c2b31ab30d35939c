import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { openDb } from "../../../src/db/client";
import { d1TaskStore } from "../../../src/engine/d1-store";
import { hybridTaskStore } from "../../../src/engine/hybrid/hybrid-store";
import { T0, uniqueQueue } from "../../helpers";
import { meteredD1 } from "../../support/metered-d1";

// The statements a lease sends on a queue without flow control (docs/design/packs.md, "What a lease
// compiles"). Flow control's grant is a ~17 KB statement whose compilation alone took 60-150 ms here (its
// EXPLAIN, in either workerd); the workerd that serves the Worker (wrangler's, 1.20261117) compiled it again
// on every lease, so every lease of the served store took ~65 ms of D1 more, whatever it leased (issue 32:
// a lease of 1 ~330 ms in the bench). A queue without flow control never runs it: it is not sent there.

const statements: Array<{ sql: string; rowsRead: number }> = [];
const meter = meteredD1(env.DB, { onStatement: (sql, rowsRead) => statements.push({ sql, rowsRead }) });
const hybrid = hybridTaskStore(openDb(meter.db));
const rowStore = d1TaskStore(openDb(meter.db));
const plain = (n: number) => Array.from({ length: n }, (_, i) => ({ payload: { i } }));
const request = (queue: string, max = 1) => ({ queue, max, visibilityTimeoutS: 30, holder: "w" });

/** What one lease sent: its statements' SQL, the longest, and the rows they read. */
async function sent(run: () => Promise<unknown[]>) {
  statements.length = 0;
  meter.reset();
  expect(await run()).toHaveLength(1);
  return {
    flowGrant: statements.filter((s) => /INSERT INTO flow_keys/i.test(s.sql)).length,
    longest: Math.max(...statements.map((s) => s.sql.length)),
    rowsRead: meter.usage.rowsRead,
  };
}

/** Most characters of one statement a lease on a queue without flow control sends: the row lease's own
 * (~7,300 with the served store's guard) is the longest; flow control's grant is ~17,400. */
const LONGEST_PLAIN_LEASE_STATEMENT = 10_000;

describe("the statements of a lease on a queue without flow control", () => {
  it("a lease of 1 from packs half leased one slot at a time (the bench's state) sends no flow-control statement", async () => {
    const queue = uniqueQueue("ls-packs");
    await hybrid.enqueueTasks(queue, plain(200), T0); // two packs of 100
    // The first lease finds the packs first; the next ones send the pack lease in their first batch (the hint).
    expect(await hybrid.leaseAnswers(request(queue), T0 + 1)).toHaveLength(1);
    const first = await sent(() => hybrid.leaseAnswers(request(queue), T0 + 2));
    for (let i = 0; i < 50; i++) expect(await hybrid.leaseAnswers(request(queue), T0 + 3 + i)).toHaveLength(1);
    const lease = await sent(() => hybrid.leaseAnswers(request(queue), T0 + 100));
    expect(lease.flowGrant).toBe(0);
    expect(lease.longest).toBeLessThan(LONGEST_PLAIN_LEASE_STATEMENT);
    // Rows read: the fronts' probes, the rows' front and the pack's lease, the same after 50 slots leased one at
    // a time as at the first (the lease walks no leased slot or held pack).
    expect(lease.rowsRead).toBe(first.rowsRead);
    expect(lease.rowsRead).toBeLessThan(64);
  });

  it("a lease of 1 from rows, by the served store and by the row store alone, sends no flow-control statement", async () => {
    for (const store of [hybrid, rowStore]) {
      const queue = uniqueQueue("ls-rows");
      for (let i = 0; i < 3; i++) await store.enqueueTasks(queue, plain(1), T0); // one call each: rows
      const lease = await sent(() => store.leaseTasks(request(queue), T0 + 1));
      expect(lease.flowGrant).toBe(0);
      expect(lease.longest).toBeLessThan(LONGEST_PLAIN_LEASE_STATEMENT);
    }
  });

  it("a queue with flow control is leased by flow control's statements, within its limits", async () => {
    for (const store of [hybrid, rowStore]) {
      const queue = uniqueQueue("ls-flow");
      await store.putQueueConfig(queue, { flow: { default: { concurrency: 1 } } }, T0, []);
      for (let i = 0; i < 3; i++) await store.enqueueTasks(queue, [{ payload: i, key: "k" }], T0);
      statements.length = 0;
      const leased = await store.leaseTasks(request(queue, 3), T0 + 1);
      expect(leased).toHaveLength(1); // the key's concurrency
      expect(statements.filter((s) => /INSERT INTO flow_keys/i.test(s.sql))).toHaveLength(1);
      expect(await store.leaseTasks(request(queue, 3), T0 + 2)).toHaveLength(0);
    }
  });
});
