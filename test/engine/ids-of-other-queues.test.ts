import { ulid } from "ulid";
import { expect, it } from "vitest";
import { MAX_ENQUEUE_CHUNK_TASKS } from "../../src/contracts/limits";
import { T0, uniqueQueue } from "../helpers";
import { expectEdgeqError, storeFixtures } from "./conformance/fixtures";
import { CORE, describeStore } from "./conformance/store-kinds";

describeStore(
  "enqueueTasks: an id that is a task of another queue",
  (kind) => {
    const { store, enqueueOne, row, snapshot } = storeFixtures(kind);

    it("refuses a call of one statement whole: its insert inserts none of its rows", async () => {
      const [a, b] = [uniqueQueue("oa"), uniqueQueue("ob")];
      const taken = await enqueueOne(a, { id: ulid(T0), payload: "a's" }, T0);
      const fresh = ulid(T0);

      const error = await expectEdgeqError(
        store().enqueueTasks(b, [{ id: fresh }, { payload: "server id" }, { id: taken }], T0 + 1),
        "id_in_other_queue",
      );
      expect(error.message).toBe(
        `tasks[2].id: ${taken} belongs to queue ${a}; task ids are unique across queues, so nothing was enqueued`,
      );
      expect(await snapshot(b)).toEqual([]);
      expect(await store().findTaskState(fresh)).toBeNull();
      expect((await row(taken)).queue).toBe(a);
    });

    it("refuses a call of several statements before its first insert", async () => {
      const [a, b] = [uniqueQueue("oa"), uniqueQueue("ob")];
      const taken = await enqueueOne(a, { id: ulid(T0) }, T0);
      // More tasks than one statement takes, the other queue's id in the last chunk.
      const input = Array.from({ length: MAX_ENQUEUE_CHUNK_TASKS }, (_, i) => ({ id: ulid(T0), payload: i }));

      const error = await expectEdgeqError(
        store().enqueueTasks(b, [...input, { id: taken }], T0 + 1),
        "id_in_other_queue",
      );
      expect(error.message).toMatch(`tasks[${MAX_ENQUEUE_CHUNK_TASKS}].id: ${taken} belongs to queue ${a}`);
      expect(await snapshot(b)).toEqual([]);
    });

    it("keeps the same queue's id a dedupe, in the same call as new ones", async () => {
      const queue = uniqueQueue("osame");
      const existing = await enqueueOne(queue, { id: ulid(T0) }, T0);
      const { tasks } = await store().enqueueTasks(queue, [{ id: existing }, { id: ulid(T0) }], T0 + 1);
      expect(tasks.map((t) => t.deduplicated)).toEqual([true, false]);
      expect(tasks[0]!.id).toBe(existing);
    });
  },
  { needs: CORE },
);
