import { afterEach, describe, expect, it, vi } from "vitest";
import { EnqueueLinger, LINGER_WAIT_LIMIT_MS, type EnqueuedTask } from "../../src/contracts/enqueue-linger";
import { settled } from "../support/settled";

// A caller of a coalesced enqueue waits at most its wait limit (src/contracts/enqueue-linger.ts): a call that
// is never answered (its request cancelled under it) answers its callers `timeout`, transient. No database:
// the call is one that never settles, and the clock is vitest's.

afterEach(() => {
  vi.useRealTimers();
});

describe("a coalesced enqueue's wait limit", () => {
  it("answers every caller of a call that never settles `timeout` once the limit passes, and not before", async () => {
    vi.useFakeTimers();
    const calls: number[] = [];
    const linger = new EnqueueLinger<unknown, EnqueuedTask>((_queue, tasks) => {
      calls.push(tasks.length);
      return new Promise(() => undefined);
    });
    const waits = [1, 2].map((n) => settled(linger.enqueue("q", { payload: n }, undefined)));
    let answered = 0;
    for (const w of waits) void w.then(() => (answered += 1));
    await vi.advanceTimersByTimeAsync(LINGER_WAIT_LIMIT_MS - 1);
    expect({ calls, answered }).toEqual({ calls: [2], answered: 0 });
    await vi.advanceTimersByTimeAsync(1);
    expect(await Promise.all(waits)).toEqual([
      { code: "timeout", message: `enqueue: its coalesced call was not answered within ${LINGER_WAIT_LIMIT_MS} ms` },
      { code: "timeout", message: `enqueue: its coalesced call was not answered within ${LINGER_WAIT_LIMIT_MS} ms` },
    ]);
  });
});
