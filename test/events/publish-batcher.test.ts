import { describe, expect, it } from "vitest";
import { PublishBatcher } from "../../src/effects/publish-batcher";
import type { PublishedEvent } from "../../src/contracts/events";

/** The batcher's logic alone: `send` stands in for the call to the coordinator (the real call is covered by
 * the event stream tests, test/events/stream.test.ts, which now go through this batcher). */
function recording() {
  const sent: Array<{ queue: string; events: PublishedEvent[] }> = [];
  const batcher = new PublishBatcher(async (queue, events) => {
    sent.push({ queue, events });
  }, 20);
  return { sent, batcher };
}

const ev = (kind: PublishedEvent["kind"], id: string): PublishedEvent => ({ kind, id });

describe("PublishBatcher", () => {
  it("sends the events of one queue added within the window as one call, in arrival order", async () => {
    const { sent, batcher } = recording();
    const opened = batcher.add("q", [ev("leased", "a"), ev("leased", "b")]);
    const joined = batcher.add("q", [ev("completed", "a")]);
    await joined; // resolved at once: it rides on the opener's call
    expect(sent).toEqual([]);
    await opened;
    expect(sent).toEqual([{ queue: "q", events: [ev("leased", "a"), ev("leased", "b"), ev("completed", "a")] }]);
    // The window is closed: the next add opens a new batch.
    await batcher.add("q", [ev("completed", "b")]);
    expect(sent).toHaveLength(2);
    expect(sent[1]).toEqual({ queue: "q", events: [ev("completed", "b")] });
  });

  it("keeps queues apart", async () => {
    const { sent, batcher } = recording();
    await Promise.all([batcher.add("q1", [ev("leased", "a")]), batcher.add("q2", [ev("leased", "b")])]);
    expect(sent).toHaveLength(2);
    expect(sent.find((s) => s.queue === "q1")!.events).toEqual([ev("leased", "a")]);
    expect(sent.find((s) => s.queue === "q2")!.events).toEqual([ev("leased", "b")]);
  });

  it("hands what waits to a call going now, and then sends nothing twice", async () => {
    const { sent, batcher } = recording();
    const opened = batcher.add("q", [ev("leased", "a")]);
    expect(batcher.take("q")).toEqual([ev("leased", "a")]);
    expect(batcher.take("q")).toEqual([]);
    await opened;
    expect(sent).toEqual([]);
    // A later add opens a fresh batch rather than joining the taken one.
    await batcher.add("q", [ev("failed", "a")]);
    expect(sent).toEqual([{ queue: "q", events: [ev("failed", "a")] }]);
  });
});
