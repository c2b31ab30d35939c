import { describe, expect, it } from "vitest";
import { QuietHubs } from "../../src/effects/quiet-hubs";

/** The skip's bookkeeping alone, on a clock the test moves (the hub's side and the whole path are covered
 * by test/events/quiet.test.ts against real Durable Objects). */
function hubs() {
  let now = 1_000;
  const quiet = new QuietHubs(500, () => now);
  const sends: string[] = [];
  const publish = (queue: string, listening: boolean) =>
    quiet.publish(queue, async () => {
      sends.push(queue);
      now += 7; // the answer comes back later than it was sent
      return { listening };
    });
  return { quiet, sends, publish, advance: (ms: number) => (now += ms) };
}

describe("QuietHubs", () => {
  it("after a 'nobody listens' answer skips the queue's publishes for the window counted from the send", async () => {
    const { sends, publish, advance } = hubs();
    await publish("q", false); // sent at 1,000: skips until 1,500
    await publish("q", true);
    expect(sends).toEqual(["q"]);
    advance(485); // 1,492
    await publish("q", true);
    expect(sends).toEqual(["q"]);
    advance(8); // 1,500: the window has run out
    await publish("q", true);
    expect(sends).toEqual(["q", "q"]);
  });

  it("keeps publishing while the hub answers 'listening'", async () => {
    const { sends, publish } = hubs();
    await publish("q", true);
    await publish("q", true);
    await publish("q", true);
    expect(sends).toEqual(["q", "q", "q"]);
  });

  it("skips per queue", async () => {
    const { quiet, sends, publish } = hubs();
    await publish("a", false);
    await publish("b", true);
    await publish("a", true);
    expect(sends).toEqual(["a", "b"]);
    expect([quiet.skips("a"), quiet.skips("b")]).toEqual([true, false]);
  });

  it("a 'listening' answer ends a skip at once (a publish already on its way when the skip began)", () => {
    const quiet = new QuietHubs(500, () => 2_000);
    quiet.answered("q", 2_000, { listening: false });
    expect(quiet.skips("q")).toBe(true);
    quiet.answered("q", 1_990, { listening: true });
    expect(quiet.skips("q")).toBe(false);
  });
});
