import { expect, it } from "vitest";
import { CLAIM_WINDOW_S } from "../../src/contracts/limits";
import { T0, uniqueQueue } from "../helpers";
import { storeFixtures } from "./conformance/fixtures";
import { CORE, CORE_AND_HAND_OUT, describeStore, itNeeds } from "./conformance/store-kinds";

const CLAIM_MS = CLAIM_WINDOW_S * 1000;
/** The provisional leases' length here. */
const LEASE_MS = 60_000;

// A provisional lease (a long poll answered after it waited, whose client may have hung up unseen) is
// claimed by any fenced write. Unclaimed past its claim window — or lapsed by its coordinator at once — it
// is leasable: the next lease takes it over with the attempt refunded, and until one does it is still its
// holder's. The reaper hands an unclaimed one back only once it has expired too.
describeStore(
  "provisional leases",
  (kind) => {
    const { store, enqueueMany, row } = storeFixtures(kind);

    /** Enqueues `n` tasks and leases them provisionally for LEASE_MS at T0. */
    async function handedOut(n: number) {
      const queue = uniqueQueue("provisional");
      await enqueueMany(
        queue,
        Array.from({ length: n }, () => ({})),
      );
      const leased = await store().leaseTasks(
        { queue, max: n, visibilityTimeoutS: LEASE_MS / 1000, holder: "poll", provisional: true },
        T0,
      );
      expect(leased.map((t) => t.claimBy)).toEqual(leased.map(() => T0 + CLAIM_MS));
      return { queue, leased: leased.map((t) => ({ id: t.id, leaseToken: t.leaseToken! })) };
    }

    /** Leases up to `max` of the queue's tasks for 30 s at `now`. */
    const leaseAt = (queue: string, now: number, max = 1) =>
      store().leaseTasks({ queue, max, visibilityTimeoutS: 30, holder: "w" }, now);

    it("an extend within the window claims it: an ordinary lease, not leasable, until its expiry", async () => {
      const { queue, leased } = await handedOut(1);
      const [claimed] = await store().extendLeases(leased, T0 + CLAIM_MS - 1);
      expect(claimed).toMatchObject({ ok: true, lease_expires_at: T0 + CLAIM_MS - 1 + LEASE_MS });
      expect(await row(leased[0]!.id)).toMatchObject({ state: "processing", claimBy: null });
      expect(await leaseAt(queue, T0 + CLAIM_MS + 30_000)).toEqual([]);
      const [done] = await store().completeTasks(leased, T0 + CLAIM_MS + 30_000);
      expect(done).toMatchObject({ ok: true, state: "completed" });
    });

    it("unclaimed past the window: still its holder's until the next lease takes it over, attempt refunded", async () => {
      const { queue, leased } = await handedOut(2);
      const [slow, gone] = leased;
      // A slow live client: its first call after the window still claims the lease.
      await store().heartbeatTask({ ...slow!, progress: 10 }, T0 + CLAIM_MS);
      expect(await row(slow!.id)).toMatchObject({ state: "processing", claimBy: null, progress: 10 });

      // The other one is taken over by the next lease, its attempt refunded, nothing recorded as an error.
      const again = await leaseAt(queue, T0 + CLAIM_MS, 10);
      expect(again).toHaveLength(1);
      expect(again[0]).toMatchObject({ id: gone!.id, attempts: 1, errors: "[]", leaseHolder: "w", claimBy: null });
      expect(again[0]!.leaseToken).not.toBe(gone!.leaseToken);
      // Its first holder is refused from then on.
      const [late] = await store().completeTasks([gone!], T0 + CLAIM_MS + 1);
      expect(late).toMatchObject({ ok: false, error: { code: "lease_lost" } });
    });

    itNeeds(kind, CORE_AND_HAND_OUT)(
      "returnUndelivered returns only hand-outs still unclaimed under their token: pending at once, attempt refunded",
      async () => {
        const { leased } = await handedOut(3);
        const [unclaimed, claimed, wrongToken] = leased;
        await store().extendLeases([claimed!], T0 + 1);

        const returned = await store().returnUndelivered(
          [unclaimed!, claimed!, { id: wrongToken!.id, leaseToken: "0".repeat(32) }],
          T0 + 2,
        );
        expect(returned.map((t) => t.id)).toEqual([unclaimed!.id]);
        expect(await row(unclaimed!.id)).toMatchObject({
          state: "pending",
          attempts: 0,
          leaseToken: null,
          claimBy: null,
        });
        expect(await row(claimed!.id)).toMatchObject({ state: "processing", leaseToken: claimed!.leaseToken });
        expect(await row(wrongToken!.id)).toMatchObject({ state: "processing", leaseToken: wrongToken!.leaseToken });
        // The holder it was taken from is refused.
        const [late] = await store().completeTasks([unclaimed!], T0 + 3);
        expect(late).toMatchObject({ ok: false, error: { code: "lease_lost" } });
      },
    );

    itNeeds(kind, CORE_AND_HAND_OUT)(
      "endClaimWindows ends the claim window of the first `limit` unclaimed hand-outs now: leasable, still their holder's",
      async () => {
        const { queue, leased } = await handedOut(4);
        const [claimed, first, second, third] = leased;
        await store().extendLeases([claimed!], T0 + 1);

        const lapsed = await store().endClaimWindows([claimed!, first!, second!, third!], T0 + 2, 2);
        expect(lapsed.map((t) => t.id).sort()).toEqual([first!.id, second!.id].sort());
        expect(await row(first!.id)).toMatchObject({
          state: "processing",
          claimBy: T0 + 2,
          leaseToken: first!.leaseToken,
        });
        expect(await row(third!.id)).toMatchObject({ claimBy: T0 + CLAIM_MS });
        expect(await row(claimed!.id)).toMatchObject({ claimBy: null });

        // Until another lease takes it, the holder's own write is accepted; then the next lease takes the other.
        const [kept] = await store().completeTasks([first!], T0 + 3);
        expect(kept).toMatchObject({ ok: true, state: "completed" });
        expect((await leaseAt(queue, T0 + 3, 10)).map((t) => t.id)).toEqual([second!.id]);
      },
    );

    itNeeds(kind, ["core", "upkeep"])(
      "the reaper leaves an unclaimed lease to its holder until it expires, then hands it back refunded",
      async () => {
        const { queue, leased } = await handedOut(1);
        const id = leased[0]!.id;
        // Each lapse is re-checked as it is reaped.
        expect(await store().reapLapsedLeases([id], T0 + CLAIM_MS)).toEqual({ reaped: [], unclaimed: [] });
        expect(await store().reapLapsedLeases([id], T0 + LEASE_MS)).toEqual({
          reaped: [{ id, queue, state: "pending", run_at: T0 }],
          unclaimed: [id],
        });
        expect(await row(id)).toMatchObject({ state: "pending", attempts: 0, errors: "[]", claimBy: null });
      },
    );
  },
  { needs: CORE },
);
