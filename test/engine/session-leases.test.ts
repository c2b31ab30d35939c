import { expect, it } from "vitest";
import { sessionHolder } from "../../src/contracts/session";
import { T0, uniqueQueue } from "../helpers";
import { VT_MS, storeFixtures } from "./conformance/fixtures";
import { describeStore } from "./conformance/store-kinds";

const SESSION = "S3ss10nAAAAAAAAAAAAA";
const OTHER = "S3ss10nBBBBBBBBBBBBB";

describeStore(
  "sessionLeases (the leases a worker session holds, lapsed when it ends)",
  (kind) => {
    const { store, enqueueMany, row } = storeFixtures(kind);

    /** Leases `max` tasks of `queue` as `holder`. */
    const lease = (queue: string, max: number, holder: string | null, now = T0) =>
      store().leaseTasks({ queue, max, visibilityTimeoutS: VT_MS / 1000, holder }, now);

    it("finds exactly the session's live leases, each with its own token, in one call of many tasks", async () => {
      const queue = uniqueQueue();
      // One call of 30: one pack (the pack store) or 30 rows, leased in three holders' turns.
      await enqueueMany(
        queue,
        Array.from({ length: 30 }, (_, i) => ({ payload: { i } })),
      );
      const mine = await lease(queue, 12, sessionHolder("w1", SESSION));
      const theirs = await lease(queue, 8, sessionHolder("w1", OTHER));
      const plain = await lease(queue, 5, "w1");
      expect([mine.length, theirs.length, plain.length]).toEqual([12, 8, 5]);

      const held = await store().sessionLeases(queue, SESSION, T0 + 1);
      const byId = (a: { id: string }, b: { id: string }) => a.id.localeCompare(b.id);
      expect(held.sort(byId)).toEqual(mine.map((t) => ({ id: t.id, leaseToken: t.leaseToken! })).sort(byId));
      expect(await store().sessionLeases(queue, OTHER, T0 + 1)).toHaveLength(8);
      // Another queue's name finds nothing.
      expect(await store().sessionLeases(uniqueQueue(), SESSION, T0 + 1)).toEqual([]);
    });

    it("leaves out leases acked, expired, or of a holder that only resembles the session's mark", async () => {
      const queue = uniqueQueue();
      await enqueueMany(queue, [{ payload: 1 }, { payload: 2 }, { payload: 3 }]);
      const [done, kept] = await lease(queue, 2, sessionHolder(null, SESSION));
      // A holder that contains the id but does not end with the mark.
      await lease(queue, 1, `${sessionHolder("w1", SESSION)}x`);
      await store().completeTasks([{ id: done!.id, leaseToken: done!.leaseToken! }], T0 + 1);

      expect(await store().sessionLeases(queue, SESSION, T0 + 2)).toEqual([
        { id: kept!.id, leaseToken: kept!.leaseToken! },
      ]);
      // At its expiry the lease has lapsed by itself: nothing left to lapse.
      expect(await store().sessionLeases(queue, SESSION, T0 + VT_MS)).toEqual([]);
    });

    it("a lease extended to now (the lapse) is refused to its holder and leasable again", async () => {
      const queue = uniqueQueue();
      await enqueueMany(queue, [{ payload: 1 }, { payload: 2 }]);
      const leased = await lease(queue, 2, sessionHolder("w1", SESSION));
      const held = await store().sessionLeases(queue, SESSION, T0 + 10);
      const outcomes = await store().extendLeases(
        held.map((i) => ({ ...i, visibilityTimeoutS: 0 })),
        T0 + 10,
        { queue },
      );
      expect(outcomes.map((o) => o.ok)).toEqual([true, true]);
      for (const t of leased) expect(await row(t.id)).toMatchObject({ state: "processing", leaseExpiresAt: T0 + 10 });
      const [late] = await store().completeTasks([{ id: leased[0]!.id, leaseToken: leased[0]!.leaseToken! }], T0 + 10);
      expect(late).toMatchObject({ ok: false, error: { code: "lease_lost" } });
      expect(await store().sessionLeases(queue, SESSION, T0 + 10)).toEqual([]);
      // Redelivered as an expired lease is, once its expiry backoff has passed.
      const again = await lease(queue, 2, "w2", T0 + 10 + 3_600_000);
      expect(again.map((t) => t.id).sort()).toEqual(leased.map((t) => t.id).sort());
    });
  },
  { needs: ["core", "sessions"] },
);
