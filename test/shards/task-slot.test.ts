import { decodeTime } from "ulid";
import { describe, expect, it } from "vitest";
import { decodeSlot, slotIdFactory } from "../../src/shards/task-slot";

describe("slot ids", () => {
  it("carry their slot and the time asked for, increasing within a millisecond", () => {
    const slotId = slotIdFactory();
    const now = Date.parse("2026-11-27T12:00:00.000Z");
    const ids = Array.from({ length: 5 }, () => slotId(7, now));
    for (const id of ids) expect([decodeSlot(id), decodeTime(id)]).toEqual([7, now]);
    expect([...ids].sort()).toEqual(ids);
  });

  // A monotonic ULID factory answers a time before the last one it saw with that later time: an id from the
  // future for an enqueue at `now`, which the engine refuses (an injected clock in the past, a stepped clock).
  it("carry the time asked for when it goes back", () => {
    const slotId = slotIdFactory();
    const today = Date.parse("2026-11-27T12:00:00.000Z");
    slotId(3, today);
    const past = Date.parse("1990-01-01T00:00:00.000Z");
    const ids = [slotId(3, past), slotId(3, past)];
    expect(ids.map((id) => decodeTime(id))).toEqual([past, past]);
    expect(ids[1]! > ids[0]!).toBe(true);
  });
});
