import { expect, it } from "vitest";
import { PROCESSORS, T0, uniqueQueue } from "../helpers";
import { expectEdgeqError, storeFixtures } from "./conformance/fixtures";
import { describeStore } from "./conformance/store-kinds";

describeStore(
  "putQueueConfig: rules that span fields, whoever writes the config",
  (kind) => {
    const { store } = storeFixtures(kind);

    it("refuses a cap below the base, counting stored values, and stores nothing", async () => {
      const queue = uniqueQueue("config");
      await store().putQueueConfig(queue, { backoff_base_s: 30 }, T0, PROCESSORS);
      const before = await store().getQueueConfig(queue);
      const error = await expectEdgeqError(
        store().putQueueConfig(queue, { backoff_cap_s: 10, max_attempts: 9 }, T0 + 1, PROCESSORS),
        "invalid_request",
      );
      expect(error.message).toMatch(/backoff_cap_s \(10\) must be at least backoff_base_s \(30\)/);
      expect(await store().getQueueConfig(queue)).toEqual(before);
    });

    it("refuses a processor this Worker does not have, naming the registered ones", async () => {
      const queue = uniqueQueue("config");
      const error = await expectEdgeqError(
        store().putQueueConfig(queue, { mode: "push", processor: "klingon" }, T0, PROCESSORS),
        "invalid_request",
      );
      expect(error.message).toMatch(/processor: no processor "klingon" \(registered: .*tag/);
      expect(await store().getQueueConfig(queue)).toMatchObject({ mode: "pull", processor: null });
      expect(await store().putQueueConfig(queue, { mode: "push", processor: "tag" }, T0, PROCESSORS)).toMatchObject({
        mode: "push",
        processor: "tag",
      });
    });
  },
  { needs: ["queueConfig"] },
);
