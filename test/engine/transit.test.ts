import { expect, it } from "vitest";
import type { DeliveredRow, TransitRow } from "../../src/engine/transit";
import type { StoredTask, TaskStore } from "../../src/engine/store";
import { T0, uniqueQueue } from "../helpers";
import { storeFixtures } from "./conformance/fixtures";
import type { StoreGroup } from "../../src/engine/packs/pack-store";
import { describeStore, itNeeds } from "./conformance/store-kinds";

const TO = { shard: "DB_1", slot: 7 };

/** What the transit properties call: the core (to make, lease and read tasks) and transit. */
const TRANSIT: readonly StoreGroup[] = ["core", "transit"];

/** Rows as a delivery puts them in: keeping the slot each task had (`before`: the tasks as they were). */
function delivered(rows: TransitRow[], before: StoredTask[]): DeliveredRow[] {
  const slots = new Map(before.map((t) => [t.id, t.slot]));
  return rows.map((r) => ({ ...r, rowSlot: slots.get(r.id) ?? null }));
}

// The source is the suite's store; the destination a store of the same kind over a second database.
describeStore(
  "takeOutForTransit",
  (kind) => {
    const { store, enqueueOne, enqueueMany, completedTask, snapshot } = storeFixtures(kind);
    const source = (): TaskStore => store();

    /** This queue's tasks in transit out of the source (other tests' may be there too). */
    async function transitOf(queue: string): Promise<TransitRow[]> {
      return (await source().listTransit(1_000)).filter((r) => r.queue === queue);
    }

    it("turns up to `limit` selected tasks from live into in-transit, each recorded whole with its destination", async () => {
      const queue = uniqueQueue("transit-out");
      const other = uniqueQueue("transit-stay");
      const ids = await enqueueMany(queue, [{ payload: 1 }, { payload: 2 }, { payload: 3 }]);
      const stays = await enqueueOne(other);
      const before = await snapshot(queue);

      expect(await source().takeOutForTransit({ queue }, TO, 2, T0 + 50)).toBe(2);
      expect((await snapshot(queue)).map((r) => r.id)).toEqual([ids[2]]);
      const first = await transitOf(queue);
      expect(first.map((r) => r.id)).toEqual(ids.slice(0, 2));
      expect(first[0]).toMatchObject({ dest: "DB_1", slot: 7 });
      // Recorded whole: put in on a store of the same kind, it is the task it was.
      const probe = kind.otherStore();
      await probe.putInFromTransit(delivered(first.slice(0, 1), before));
      expect(await probe.getTask(first[0]!.id)).toEqual(before[0]);

      expect(await source().takeOutForTransit({ queue }, TO, 2, T0 + 60)).toBe(1);
      expect(await source().takeOutForTransit({ queue }, TO, 2, T0 + 70)).toBe(0);
      expect(await snapshot(queue)).toEqual([]);
      expect((await transitOf(queue)).map((r) => r.id)).toEqual(ids);
      expect((await snapshot(other)).map((r) => r.id)).toEqual([stays]);
      await source().clearTransit(ids);
    });

    it("takes only live tasks when asked, and only ids matching the GLOB pattern when given one", async () => {
      const queue = uniqueQueue("transit-select");
      const done = await completedTask(queue);
      const live = await enqueueOne(queue);
      expect(await source().takeOutForTransit({ queue, liveOnly: true }, TO, 200, T0 + 10)).toBe(1);
      expect((await transitOf(queue)).map((r) => r.id)).toEqual([live]);
      expect((await snapshot(queue)).map((r) => r.id)).toEqual([done]);
      await source().clearTransit([live]);

      // A partition's tasks: ids carrying its slot; the others stay.
      const slotted = "01JAAAAAAAQRST000000000005";
      const unslotted = "01JAAAAAAAWXYZ000000000006";
      const ids = uniqueQueue("transit-ids");
      await enqueueMany(ids, [{ id: slotted }, { id: unslotted }]);
      const partition = { slot: 7, idGlob: "??????????QRST*" };
      expect(await source().takeOutForTransit({ queue: ids, partition }, TO, 200, T0 + 10)).toBe(1);
      expect((await transitOf(ids)).map((r) => r.id)).toEqual([slotted]);
      expect((await snapshot(ids)).map((r) => r.id)).toEqual([unslotted]);
      await source().clearTransit([slotted]);
    });

    // Enqueues with a partition `slot`, which the pack store refuses (docs/design/packs.md, "Left").
    itNeeds(kind, "all")(
      "takes ids of any form whose slot column names the partition, and not an id carrying it whose column names another",
      async () => {
        const slotted = "01JAAAAAAAQRST000000000001";
        const unslotted = "01JAAAAAAAWXYZ000000000002";
        const named = "01JAAAAAAAWXYZ000000000003";
        const elsewhere = "01JAAAAAAAQRST000000000004";
        const glob = uniqueQueue("transit-glob");
        await enqueueMany(glob, [
          { id: slotted },
          { id: unslotted },
          { id: named, slot: 7 },
          { id: elsewhere, slot: 8 },
        ]);
        const partition = { slot: 7, idGlob: "??????????QRST*" };
        expect(await source().takeOutForTransit({ queue: glob, partition }, TO, 200, T0 + 10)).toBe(2);
        expect((await transitOf(glob)).map((r) => r.id)).toEqual([slotted, named]);
        expect((await snapshot(glob)).map((r) => r.id).sort()).toEqual([elsewhere, unslotted]);
        await source().clearTransit([slotted, named]);
      },
    );
  },
  { needs: TRANSIT },
);

describeStore(
  "putInFromTransit",
  (kind) => {
    const { store, enqueueOne, enqueueMany, leaseOne, snapshot } = storeFixtures(kind);
    const source = (): TaskStore => store();
    const dest = (): TaskStore => kind.otherStore();

    /** This queue's tasks in transit out of the source (other tests' may be there too). */
    async function transitOf(queue: string): Promise<TransitRow[]> {
      return (await source().listTransit(1_000)).filter((r) => r.queue === queue);
    }

    /** Takes the queue's tasks out, puts them in on the destination and clears them: one whole relay step. */
    async function relay(queue: string, now = T0 + 100): Promise<void> {
      const before = await snapshot(queue);
      await source().takeOutForTransit({ queue }, TO, 200, now);
      const rows = await transitOf(queue);
      await dest().putInFromTransit(delivered(rows, before));
      await source().clearTransit(rows.map((r) => r.id));
    }

    it("inserts every task as it was (a held lease keeps its token), and a repeat inserts nothing twice", async () => {
      const queue = uniqueQueue("transit-in");
      await enqueueMany(queue, [{ payload: "a", dedupeKey: "k" }, { payload: "b", priority: 5 }, { payload: "c" }]);
      const held = await leaseOne(queue, T0 + 1);
      const before = await snapshot(queue);
      await source().takeOutForTransit({ queue }, TO, 200, T0 + 2);
      const rows = await transitOf(queue);
      expect(rows).toHaveLength(3);
      for (const row of rows) expect(await source().isInTransit(row.id)).toBe(true);

      await dest().putInFromTransit(delivered(rows, before));
      expect(await snapshot(queue, dest())).toEqual(before);
      // A crash before the clear: the next relay delivers the same rows again.
      await dest().putInFromTransit(delivered(rows, before));
      expect(await snapshot(queue, dest())).toEqual(before);
      expect((await snapshot(queue, dest())).find((r) => r.id === held.id)).toMatchObject({
        leaseToken: held.leaseToken,
        state: "processing",
      });

      await source().clearTransit(rows.map((r) => r.id));
      for (const row of rows) expect(await source().isInTransit(row.id)).toBe(false);
      expect(await transitOf(queue)).toEqual([]);
    });

    it("drops a dedupe key a live task on the destination holds, keeping the task; a finished holder takes nothing", async () => {
      const queue = uniqueQueue("transit-key");
      const [kept] = (await dest().enqueueTasks(queue, [{ dedupeKey: "live" }], T0)).tasks;
      // The holder of "done" finishes on the destination (leased first: its priority is higher).
      const [finished] = (await dest().enqueueTasks(queue, [{ dedupeKey: "done", priority: 1 }], T0)).tasks;
      const [leased] = await dest().leaseTasks({ queue, max: 1, visibilityTimeoutS: 30, holder: "w" }, T0);
      expect(leased!.id).toBe(finished!.id);
      const [completed] = await dest().completeTasks([{ id: leased!.id, leaseToken: leased!.leaseToken! }], T0 + 1);
      expect(completed).toMatchObject({ ok: true, state: "completed" });
      const [clash, free] = await enqueueMany(queue, [{ dedupeKey: "live" }, { dedupeKey: "done" }], T0 + 5);

      await relay(queue);
      const landed = new Map((await snapshot(queue, dest())).map((r) => [r.id, r.dedupeKey]));
      expect(landed.get(kept!.id)).toBe("live");
      expect(landed.get(clash!)).toBeNull();
      expect(landed.get(free!)).toBe("done");
      expect(landed.size).toBe(4);
    });

    it("puts in, without its key, a task whose key another task of the same rows took first", async () => {
      const queue = uniqueQueue("transit-twins");
      // The first child leaves for its queue's shard; a second with the same key is enqueued where the first
      // was (its key is free there now) and follows: both are in transit together.
      const first = await enqueueOne(queue, { dedupeKey: "twin" }, T0);
      const firstBefore = await snapshot(queue);
      await source().takeOutForTransit({ queue }, TO, 200, T0 + 1);
      const second = await enqueueOne(queue, { dedupeKey: "twin" }, T0 + 2);
      const secondBefore = await snapshot(queue);
      await source().takeOutForTransit({ queue }, TO, 200, T0 + 3);
      const rows = await transitOf(queue);
      expect(rows.map((r) => r.id)).toEqual([first, second]);

      await dest().putInFromTransit(delivered(rows, [...firstBefore, ...secondBefore]));
      const landed = await snapshot(queue, dest());
      expect(landed.map((r) => [r.id, r.dedupeKey, r.state])).toEqual([
        [first, "twin", "pending"],
        [second, null, "pending"],
      ]);
      await source().clearTransit([first, second]);
    });

    it("does nothing for no rows", async () => {
      await expect(dest().putInFromTransit([])).resolves.toBeUndefined();
    });
  },
  { needs: TRANSIT },
);
