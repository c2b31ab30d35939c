import { describe, expect, it } from "vitest";
import { frontsAfterReap } from "../../src/cron/fronts-after-reap";
import type { QueueFront } from "../../src/engine/store";
import { uniqueQueue } from "../helpers";
import { clockRange } from "../support/clock-range";
import { lapsedMix } from "./conformance/lapsed-mix";
import { describeStore } from "./conformance/store-kinds";

/** The front is read over every queue, and the reap below takes every lapsed lease: a clock range of its own. */
const clock = clockRange("engine/live-front");

describeStore(
  "the live front the tick reads",
  (kind) => {
    it("finds every lapsed lease, in every priority, and the figures health reads", async () => {
      const t = clock.day(0);
      const queue = uniqueQueue("front");
      const { expiring } = await lapsedMix(kind.store(), queue, t);

      // The short leases expired; the provisional one went unclaimed past its claim window but has not
      // expired, so it is still its holder's (a lease may take it over; the reaper leaves it); all ran > 60 s.
      const now = t + 120_000;
      const front = (await kind.store().readLiveFront(now, { dueCountFor: () => 0 })).find((f) => f.queue === queue);
      expect(front).toMatchObject({
        queue,
        due: 5, // the low-priority tasks not leased; the delayed one is not due
        capped: false,
        oldest_due_at: t,
        lease_expired: 2,
        overrun: 5,
        leasable: true,
      });
      expect(front!.lapsed.map((l) => l.id).sort()).toEqual(expiring.map((r) => r.id).sort());
      await kind.discard(queue);
    });
  },
  { needs: ["core", "queueConfig", "liveFront"] },
);

describe("the live front after the reaper", () => {
  it("after the reaper: reaped tasks leave the lease figures, and those due again count as due", () => {
    const front: QueueFront = {
      queue: "q",
      due: 3,
      capped: false,
      oldest_due_at: 500,
      lease_expired: 2,
      overrun: 1,
      leasable: true,
      lapsed: [
        { id: "a", expired: true, overrun: true },
        { id: "b", expired: true, overrun: false },
        { id: "c", expired: false, overrun: false },
      ],
    };
    const [after] = frontsAfterReap(
      [front],
      [
        { id: "a", queue: "q", state: "dead", run_at: 100 },
        { id: "b", queue: "q", state: "pending", run_at: 5000 }, // after backoff: not yet due
        { id: "c", queue: "q", state: "pending", run_at: 200 }, // unclaimed, handed back: due at once
      ],
      1000,
    );
    expect(after).toMatchObject({ due: 4, oldest_due_at: 200, lease_expired: 0, overrun: 0 });
    expect(front).toMatchObject({ due: 3, lease_expired: 2 });
  });
});
