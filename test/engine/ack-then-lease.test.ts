import { expect, it } from "vitest";
import type { AckOutcome } from "../../src/engine/store";
import { T0, uniqueQueue } from "../helpers";
import { VT_MS, VT_S, storeFixtures } from "./conformance/fixtures";
import { CORE, describeStore } from "./conformance/store-kinds";

// An ack that carries the next lease (TaskWrites.ackThenLease, the API's ack with `lease`): the completions,
// failures and releases as their own calls make them, then a lease as leaseAnswers takes it, after them. Whatever
// a store does to make them in fewer round trips, this is what a caller sees.

const codes = (outcomes: AckOutcome[]) => outcomes.map((o) => (o.ok ? o.state : o.error.code));

describeStore(
  "an ack carrying the next lease",
  (kind) => {
    const { store, enqueueMany, lease, row, snapshot } = storeFixtures(kind);

    it("completes the items, then leases the next tasks in lease order, never one it just completed", async () => {
      const queue = uniqueQueue("ctl");
      const ids = await enqueueMany(
        queue,
        [3, 2, 1, 0].map((priority) => ({ payload: { priority }, priority })),
      );
      const held = await lease(queue, T0, 2);
      expect(held.map((t) => t.id)).toEqual(ids.slice(0, 2));
      const { outcomes, leased } = await store().ackThenLease(
        { complete: held.map((t, k) => ({ id: t.id, leaseToken: t.leaseToken!, result: { k } })) },
        { queue, max: 10, visibilityTimeoutS: VT_S, holder: "w2" },
        T0 + 1,
      );
      expect(codes(outcomes)).toEqual(["completed", "completed"]);
      expect(outcomes.map((o) => o.id)).toEqual(ids.slice(0, 2));
      // The two never leased, in priority order, each under a lease of its own that a holder's write accepts.
      expect(leased.map((t) => t.id)).toEqual(ids.slice(2));
      for (const t of leased) {
        expect(JSON.parse(t.view)).toMatchObject({ id: t.id, state: "processing", lease_holder: "w2", attempts: 1 });
        expect(t.leaseToken).toMatch(/^[0-9a-f]{32}(?:[0-9A-Z]{2})?$/);
      }
      expect(JSON.parse((await row(ids[0]!)).result!)).toEqual({ k: 0 });
      expect((await row(ids[2]!)).leaseExpiresAt).toBe(T0 + 1 + VT_MS);
      const done = await store().completeTasks(
        leased.map((t) => ({ id: t.id, leaseToken: t.leaseToken })),
        T0 + 2,
      );
      expect(codes(done)).toEqual(["completed", "completed"]);
      expect((await snapshot(queue)).map((t) => t.state)).toEqual(Array(4).fill("completed"));
    });

    it("an item refused (a wrong token, a task of another queue) changes nothing, and the lease still goes on", async () => {
      const queue = uniqueQueue("ctl-refused");
      const other = uniqueQueue("ctl-other");
      const ids = await enqueueMany(queue, [{}, {}, {}]);
      const [theirs] = await enqueueMany(other, [{}, {}]);
      const [mine] = await lease(queue, T0, 1);
      const [foreign] = await lease(other, T0, 1);
      expect(foreign!.id).toBe(theirs);
      const before = await snapshot(other);
      const { outcomes, leased } = await store().ackThenLease(
        {
          complete: [
            { id: mine!.id, leaseToken: "0".repeat(32) },
            { id: foreign!.id, leaseToken: foreign!.leaseToken! },
          ],
        },
        { queue, max: 1, visibilityTimeoutS: VT_S, holder: "w" },
        T0 + 1,
      );
      expect(codes(outcomes)).toEqual(["lease_lost", "not_found"]);
      expect(await snapshot(other)).toEqual(before);
      expect((await row(mine!.id)).state).toBe("processing");
      // The lease takes the next due task; the one refused is still held by its lease.
      expect(leased.map((t) => t.id)).toEqual([ids[1]]);
    });

    it("a repeat of the same completion is answered as one and leases what is due", async () => {
      const queue = uniqueQueue("ctl-repeat");
      const ids = await enqueueMany(queue, [{}, {}]);
      const [held] = await lease(queue, T0, 1);
      const item = { id: held!.id, leaseToken: held!.leaseToken! };
      const first = await store().ackThenLease(
        { complete: [item] },
        { queue, max: 1, visibilityTimeoutS: VT_S, holder: "w" },
        T0 + 1,
      );
      expect(first.outcomes[0]).toMatchObject({ ok: true, state: "completed", repeated: false });
      expect(first.leased.map((t) => t.id)).toEqual([ids[1]]);
      const again = await store().ackThenLease(
        { complete: [item] },
        { queue, max: 1, visibilityTimeoutS: VT_S, holder: "w" },
        T0 + 2,
      );
      expect(again.outcomes[0]).toMatchObject({ ok: true, state: "completed", repeated: true });
      expect(again.leased).toEqual([]);
    });

    it("completions, failures and releases in one ack, then a lease that takes the failed and released ones due", async () => {
      const queue = uniqueQueue("ctl-kinds");
      const ids = await enqueueMany(queue, [{}, {}, {}, {}, {}]);
      const held = await lease(queue, T0, 4);
      const item = (k: number) => ({ id: held[k]!.id, leaseToken: held[k]!.leaseToken! });
      const { outcomes, leased } = await store().ackThenLease(
        {
          complete: [{ ...item(0), result: "done" }],
          fail: [
            { ...item(1), message: "again", retryAfterS: 0 },
            { ...item(2), message: "broken", retryable: false },
          ],
          release: [item(3)],
        },
        { queue, max: 10, visibilityTimeoutS: VT_S, holder: "w2" },
        T0 + 1,
      );
      expect(codes(outcomes)).toEqual(["completed", "pending", "dead", "pending"]);
      expect(outcomes.map((o) => o.id)).toEqual(ids.slice(0, 4));
      // The one never leased, the one failed to retry at once and the one released: the dead and completed never.
      expect(leased.map((t) => t.id).sort()).toEqual([ids[1], ids[3], ids[4]].sort());
      const retried = JSON.parse(leased.find((t) => t.id === ids[1])!.view);
      expect(retried).toMatchObject({ attempts: 2, lease_holder: "w2" });
      expect(retried.errors.map((e: { message: string }) => e.message)).toEqual(["again"]);
      expect(JSON.parse(leased.find((t) => t.id === ids[3])!.view)).toMatchObject({ attempts: 1 });
      expect((await row(ids[2]!)).state).toBe("dead");
    });
  },
  { needs: CORE },
);
