import { expect, it } from "vitest";
import { MIN_RETENTION_S } from "../../src/contracts/limits";
import { DEFAULT_QUEUE_CONFIG } from "../../src/engine/queue-config";
import { backoffBoundsMs } from "../../src/engine/retry-policy";
import { PROCESSORS, T0, uniqueQueue } from "../helpers";
import { VT_MS, storeFixtures } from "./conformance/fixtures";
import { describeStore, itNeeds } from "./conformance/store-kinds";

/** The expiry backoff after attempt `n` on a queue of the default backoff (no jitter: retry-policy.ts). */
const expiryBackoff = (n: number) =>
  backoffBoundsMs(n, DEFAULT_QUEUE_CONFIG.backoff_base_s, DEFAULT_QUEUE_CONFIG.backoff_cap_s).max;

// The cron tick's reaper and retention prune, through the port (src/engine/store-upkeep.ts). The reaper's
// times are T0's (the fencing and provisional files reap there too: a reap at T0 + seconds ends only leases
// of T0's tests); the prune's are today's clock plus minutes (ids are time-ordered and the prune walks ids
// below its cutoff, and a queue of MIN_RETENTION_S keeps its own tasks only that long — every other file's
// queue keeps its finished tasks for days).
describeStore(
  "upkeep: the reaper",
  (kind) => {
    const { store, enqueueOne, leaseOne, row, lease } = storeFixtures(kind);

    it("reaps a lapsed lease with attempts left: pending after the expiry backoff, then leased again with its attempt counted", async () => {
      const queue = uniqueQueue("reap-again");
      const id = await enqueueOne(queue, { maxAttempts: 3 });
      const first = await leaseOne(queue, T0);
      const expiry = T0 + VT_MS;
      // Not lapsed yet: left alone.
      expect(await store().reapLapsedLeases([id], expiry - 1)).toEqual({ reaped: [], unclaimed: [] });

      const runAt = expiry + expiryBackoff(1);
      expect(await store().reapLapsedLeases([id], expiry + 1)).toEqual({
        reaped: [{ id, queue, state: "pending", run_at: runAt }],
        unclaimed: [],
      });
      expect(await row(id)).toMatchObject({
        state: "pending",
        attempts: 1,
        runAt,
        leaseToken: null,
        leaseExpiresAt: null,
        finishedAt: null,
      });
      expect(JSON.parse((await row(id)).errors)).toEqual([
        { attempt: 1, at: expiry, message: "lease expired", kind: "lease_expired" },
      ]);
      // Reaped once: a second run finds nothing to do.
      expect(await store().reapLapsedLeases([id], expiry + 2)).toEqual({ reaped: [], unclaimed: [] });
      // The old holder is refused; before its run time nothing is leased, then it is, as attempt 2.
      const [late] = await store().completeTasks([{ id, leaseToken: first.leaseToken }], expiry + 3);
      expect(late).toMatchObject({ ok: false, error: { code: "lease_lost" } });
      expect(await lease(queue, runAt - 1)).toEqual([]);
      const second = await leaseOne(queue, runAt);
      expect(second).toMatchObject({ id, attempts: 2, leaseTookOverExpired: 0 });
      const [done] = await store().completeTasks([{ id, leaseToken: second.leaseToken }], runAt + 1);
      expect(done).toMatchObject({ ok: true, state: "completed" });
    });

    it("ends the last attempt's lapsed lease dead, its run time kept, and finds it by the walk", async () => {
      const queue = uniqueQueue("reap-dead");
      const id = await enqueueOne(queue, { maxAttempts: 1 });
      await leaseOne(queue, T0);
      const now = T0 + VT_MS + 1;
      const { reaped, unclaimed } = await store().reapExpiredLeases(now);
      expect(reaped.filter((r) => r.queue === queue)).toEqual([{ id, queue, state: "dead", run_at: T0 }]);
      expect(unclaimed).not.toContain(id);
      expect(await row(id)).toMatchObject({ state: "dead", attempts: 1, finishedAt: now, leaseToken: null });
      expect(await lease(queue, now + 3_600_000)).toEqual([]);
      expect((await store().reapExpiredLeases(now + 1)).reaped.filter((r) => r.queue === queue)).toEqual([]);
    });

    it("leaves a held lease, a finished task and an unknown id alone", async () => {
      const queue = uniqueQueue("reap-none");
      const [held, done] = [await enqueueOne(queue), await enqueueOne(queue)];
      const a = await leaseOne(queue, T0);
      const b = await leaseOne(queue, T0);
      const finished = a.id === done ? a : b;
      await store().completeTasks([{ id: finished.id, leaseToken: finished.leaseToken }], T0 + 1);
      const ids = [held, done, "01KDZ00000000000000N0TH3RE"];
      expect(await store().reapLapsedLeases(ids, T0 + 2)).toEqual({ reaped: [], unclaimed: [] });
      expect((await store().reapLapsedLeases(ids, T0 + VT_MS)).reaped.map((r) => r.id)).toEqual([
        finished.id === a.id ? b.id : a.id,
      ]);
    });

    itNeeds(kind, ["core", "operator", "upkeep"])(
      "ends a lapsed lease whose cancel was requested cancelled, attempts left or not",
      async () => {
        const queue = uniqueQueue("reap-cancel");
        const id = await enqueueOne(queue, { maxAttempts: 3 });
        await leaseOne(queue, T0);
        expect(await store().cancelTask(id, T0 + 1)).toMatchObject({ state: "processing", cancelRequested: 1 });
        const now = T0 + VT_MS + 1;
        expect(await store().reapLapsedLeases([id], now)).toEqual({
          reaped: [{ id, queue, state: "cancelled", run_at: T0 }],
          unclaimed: [],
        });
        expect(await row(id)).toMatchObject({ state: "cancelled", finishedAt: now, leaseToken: null });
      },
    );
  },
  { needs: ["core", "upkeep"] },
);

describeStore(
  "upkeep: the retention prune",
  (kind) => {
    const { store, enqueueOne, leaseOne, completedTask } = storeFixtures(kind);
    const exists = async (id: string) => (await store().findTaskState(id)) !== null;

    it("deletes a finished task past its queue's retention, never a live one nor one before its time", async () => {
      const base = Date.now();
      const queue = uniqueQueue("prune");
      await store().putQueueConfig(queue, { retention_s: MIN_RETENTION_S }, base, PROCESSORS);
      const done = await completedTask(queue, {}, base);
      const processing = await enqueueOne(queue, {}, base);
      const pending = await enqueueOne(queue, {}, base + 1);
      // Lease order is (priority, run_at, id): the earlier run time first.
      expect((await leaseOne(queue, base + 1)).id).toBe(processing);
      // Before its time: kept, however many calls.
      for (let i = 0; i < 5; i++) await store().pruneByRetention(base + MIN_RETENTION_S * 1000 - 1000);
      expect(await exists(done)).toBe(true);
      // Past it: pruned within one walk of the ids below the cutoff (calls go on from where the last stopped).
      const after = base + 2 * MIN_RETENTION_S * 1000;
      for (let i = 0; i < 100 && (await exists(done)); i++) await store().pruneByRetention(after);
      expect(await exists(done)).toBe(false);
      expect(await exists(processing)).toBe(true);
      expect(await exists(pending)).toBe(true);
    });
  },
  { needs: ["core", "queueConfig", "upkeep"] },
);
