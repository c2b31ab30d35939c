import { expect, it } from "vitest";
import { T0, uniqueQueue } from "../helpers";
import { VT_MS, storeFixtures } from "./conformance/fixtures";
import { CORE, describeStore, itNeeds, OPERATOR } from "./conformance/store-kinds";

describeStore(
  "releaseTasks (a worker hands back what it cannot finish)",
  (kind) => {
    const { store, enqueueOne, leaseOne, row, snapshot } = storeFixtures(kind);

    it("returns the task to pending at once without counting the attempt, and it is leased again", async () => {
      const queue = uniqueQueue();
      const id = await enqueueOne(queue, { maxAttempts: 1 });
      const leased = await leaseOne(queue, T0);
      expect(leased.attempts).toBe(1);

      const [outcome] = await store().releaseTasks([{ id, leaseToken: leased.leaseToken }], T0 + 5);
      expect(outcome).toMatchObject({ id, ok: true, state: "pending", run_at: T0 + 5 });
      expect(await row(id)).toMatchObject({
        state: "pending",
        attempts: 0,
        runAt: T0 + 5,
        leaseToken: null,
        leaseExpiresAt: null,
        finishedAt: null,
        errors: "[]",
      });
      // With max_attempts 1 a counted attempt would have left nothing; the released task runs again.
      const again = await leaseOne(queue, T0 + 5);
      expect(again).toMatchObject({ id, attempts: 1 });
    });

    it("is fenced: a stale token or an expired lease is lease_lost and changes nothing", async () => {
      const queue = uniqueQueue();
      const id = await enqueueOne(queue);
      const leased = await leaseOne(queue, T0);
      const before = await snapshot(queue);

      const [wrong] = await store().releaseTasks([{ id, leaseToken: "0".repeat(32) }], T0 + 1);
      const [late] = await store().releaseTasks([{ id, leaseToken: leased.leaseToken }], T0 + VT_MS);
      expect(wrong).toMatchObject({ ok: false, error: { code: "lease_lost" } });
      expect(late).toMatchObject({ ok: false, error: { code: "lease_lost" } });
      expect(await snapshot(queue)).toEqual(before);
    });

    itNeeds(kind, OPERATOR)("ends a task whose cancel was requested as cancelled (task_cancelled)", async () => {
      const queue = uniqueQueue();
      const id = await enqueueOne(queue);
      const leased = await leaseOne(queue, T0);
      await store().cancelTask(id, T0 + 1);
      const [outcome] = await store().releaseTasks([{ id, leaseToken: leased.leaseToken }], T0 + 2);
      expect(outcome).toMatchObject({ ok: false, error: { code: "task_cancelled" } });
      expect(await row(id)).toMatchObject({ state: "cancelled", finishedAt: T0 + 2 });
    });
  },
  { needs: CORE },
);
