import { describe, expect, it } from "vitest";
import { EventBuffer } from "../../src/events/event-buffer";
import type { TaskEvent } from "../../src/contracts/events";

function event(seq: number): TaskEvent {
  return {
    event: "enqueued",
    seq,
    queue: "q",
    task_id: `t${seq}`,
    type: "default",
    group: null,
    state: "pending",
    attempt: 0,
    at: "2026-01-01T00:00:00.000Z",
    progress: null,
    message: null,
    error: null,
    retry_at: null,
  };
}

describe("event buffer", () => {
  it("replays exactly the events after `after`", () => {
    const buffer = new EventBuffer(10);
    for (let seq = 1; seq <= 5; seq++) buffer.append(event(seq));
    expect(buffer.since(2, 5)).toEqual({ events: [event(3), event(4), event(5)] });
    expect(buffer.since(5, 5)).toEqual({ events: [] });
  });

  it("keeps only the newest `size` events and asks for a resync when the gap is older", () => {
    const buffer = new EventBuffer(3);
    for (let seq = 1; seq <= 5; seq++) buffer.append(event(seq));
    expect(buffer.since(2, 5)).toEqual({ events: [event(3), event(4), event(5)] });
    expect(buffer.since(1, 5)).toEqual({ resync: true });
  });

  it("keeps exactly the newest `size` however many were appended (it trims in bulk)", () => {
    const buffer = new EventBuffer(3);
    for (let seq = 1; seq <= 100; seq++) {
      buffer.append(event(seq));
      // After every append: the last three replay, one further back is a resync.
      if (seq >= 4) {
        expect(buffer.since(seq - 3, seq)).toEqual({ events: [event(seq - 2), event(seq - 1), event(seq)] });
        expect(buffer.since(seq - 4, seq)).toEqual({ resync: true });
      }
    }
  });

  it("asks for a resync when it is empty but the client missed events (a coordinator evicted meanwhile)", () => {
    expect(new EventBuffer(3).since(4, 7)).toEqual({ resync: true });
    expect(new EventBuffer(3).since(7, 7)).toEqual({ events: [] });
  });
});
