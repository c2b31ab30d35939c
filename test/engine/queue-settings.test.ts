import { expect, it } from "vitest";
import { DEFAULT_QUEUE_CONFIG } from "../../src/engine/queue-config";
import { PROCESSORS, T0, uniqueQueue } from "../helpers";
import { storeFixtures } from "./conformance/fixtures";
import { describeStore } from "./conformance/store-kinds";

// A queue's record beyond its config (QueueRecords.listConfiguredQueues, deleteQueueRecord) and the SQS
// endpoint's settings kept with it (SqsSettings): what src/sqs/queue-registry.ts and health ask of a store.

describeStore(
  "queue records: listing and deleting",
  (kind) => {
    const { store, enqueueOne } = storeFixtures(kind);

    it("lists the queues with a record, not those with tasks only; a deleted record leaves the defaults and the tasks", async () => {
      const configured = uniqueQueue("qrec");
      const tasksOnly = uniqueQueue("qrec");
      await store().putQueueConfig(configured, { max_attempts: 7 }, T0, PROCESSORS);
      const id = await enqueueOne(configured);
      await enqueueOne(tasksOnly);
      const names = await store().listConfiguredQueues();
      expect(names).toContain(configured);
      expect(names).not.toContain(tasksOnly);

      await store().deleteQueueRecord(configured);
      expect(await store().listConfiguredQueues()).not.toContain(configured);
      expect(await store().readQueueRecord(configured)).toBeNull();
      expect(await store().getQueueConfig(configured)).toEqual(DEFAULT_QUEUE_CONFIG);
      expect((await store().getTask(id)).state).toBe("pending");
      // Deleting a record that is not there changes nothing.
      await store().deleteQueueRecord(tasksOnly);
      expect(await store().readQueueRecord(tasksOnly)).toBeNull();
    });
  },
  { needs: ["core", "queueConfig", "presence"] },
);

describeStore("SQS settings kept with a queue's record", (kind) => {
  const store = () => kind.store();

  it("sets the settings given and keeps the others, on a queue with a record only", async () => {
    const queue = uniqueQueue("qsqs");
    await store().setSqsSettings(queue, { delayS: 5 });
    expect(await store().readQueueRecord(queue)).toBeNull();

    await store().putQueueConfig(queue, {}, T0, PROCESSORS);
    await store().setSqsSettings(queue, { delayS: 5, receiveWaitS: 10 });
    await store().setSqsSettings(queue, { receiveWaitS: 20 });
    expect(await store().readQueueRecord(queue)).toMatchObject({ sqsDelayS: 5, sqsReceiveWaitS: 20 });
  });

  it("adds tags (a key it has takes the new value) up to the bound, atomically refusing past it; removes by key", async () => {
    const queue = uniqueQueue("qsqs");
    const tags = async () => JSON.parse((await store().readQueueRecord(queue))?.sqsTags ?? "{}") as unknown;
    // A queue without a record gets one holding only its tags: its config stays the defaults.
    expect(await store().addQueueTags(queue, { team: "growth", env: "prod" }, 3, T0)).toBe(true);
    expect(await tags()).toEqual({ team: "growth", env: "prod" });
    expect(await store().getQueueConfig(queue)).toEqual(DEFAULT_QUEUE_CONFIG);
    expect(await store().addQueueTags(queue, { team: "core", tier: "1" }, 3, T0)).toBe(true);
    expect(await tags()).toEqual({ team: "core", env: "prod", tier: "1" });
    // A fourth key would pass the bound of 3: refused, nothing changes.
    expect(await store().addQueueTags(queue, { extra: "x", team: "other" }, 3, T0)).toBe(false);
    expect(await tags()).toEqual({ team: "core", env: "prod", tier: "1" });
    // Two adds at once that together stay within the bound both land.
    const both = await Promise.all([
      store().addQueueTags(queue, { tier: "2" }, 4, T0),
      store().addQueueTags(queue, { zone: "eu" }, 4, T0),
    ]);
    expect(both).toEqual([true, true]);
    expect(await tags()).toEqual({ team: "core", env: "prod", tier: "2", zone: "eu" });

    await store().removeQueueTags(queue, ["env", "missing"]);
    expect(await tags()).toEqual({ team: "core", tier: "2", zone: "eu" });
    await store().removeQueueTags(queue, ["team", "tier", "zone"]);
    expect((await store().readQueueRecord(queue))?.sqsTags).toBeNull();
  });
});
