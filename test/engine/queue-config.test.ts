import { describe, expect, it } from "vitest";
import { getQueueConfig, putQueueConfig } from "../../src/engine/queue-config";
import { PROCESSORS, T0, db, uniqueQueue } from "../helpers";
import { expectEdgeqError } from "./fixtures";

describe("putQueueConfig: rules that span fields, whoever writes the config", () => {
  it("refuses a cap below the base, counting stored values, and stores nothing", async () => {
    const queue = uniqueQueue("config");
    await putQueueConfig(db(), queue, { backoff_base_s: 30 }, T0, PROCESSORS);
    const before = await getQueueConfig(db(), queue);
    const error = await expectEdgeqError(
      putQueueConfig(db(), queue, { backoff_cap_s: 10, max_attempts: 9 }, T0 + 1, PROCESSORS),
      "invalid_request",
    );
    expect(error.message).toMatch(/backoff_cap_s \(10\) must be at least backoff_base_s \(30\)/);
    expect(await getQueueConfig(db(), queue)).toEqual(before);
  });

  it("refuses a processor this Worker does not have, naming the registered ones", async () => {
    const queue = uniqueQueue("config");
    const error = await expectEdgeqError(
      putQueueConfig(db(), queue, { mode: "push", processor: "klingon" }, T0, PROCESSORS),
      "invalid_request",
    );
    expect(error.message).toMatch(/processor: no processor "klingon" \(registered: .*tag/);
    expect(await getQueueConfig(db(), queue)).toMatchObject({ mode: "pull", processor: null });
    expect(await putQueueConfig(db(), queue, { mode: "push", processor: "tag" }, T0, PROCESSORS)).toMatchObject({
      mode: "push",
      processor: "tag",
    });
  });
});
