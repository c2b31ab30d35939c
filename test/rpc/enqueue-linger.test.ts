import { describe, expect, it } from "vitest";
import { edgeqRpc } from "../../src/rpc/edgeq-rpc";
import { uniqueQueue } from "../helpers";
import { countingBinding } from "./counting-binding";
import { settled } from "../support/settled";

// edgeqRpc(binding) coalesces single-task enqueues (src/contracts/enqueue-linger.ts) into binding calls of
// many tasks, against the Worker's own EdgeqRpc entrypoint (a real RPC call through its loopback binding).

describe("edgeqRpc's coalesced enqueues", () => {
  it("makes 100 concurrent single enqueues 1 binding call (100 with lingerMs 0), each caller answered with its own task", async () => {
    const measure = async (lingerMs: number) => {
      const { binding, counts } = countingBinding();
      const edgeq = edgeqRpc(binding, { lingerMs });
      const queue = uniqueQueue("rpc-linger-cost");
      const answers = await Promise.all(Array.from({ length: 100 }, (_, i) => edgeq.enqueue(queue, { payload: i })));
      const calls = counts.enqueues;
      const page = await edgeq.list(queue, { limit: 100 });
      const payloadOf = new Map(page.tasks.map((t) => [t.id, t.payload]));
      expect(answers.map((a) => payloadOf.get(a.tasks[0]!.id))).toEqual(Array.from({ length: 100 }, (_, i) => i));
      return calls / 100;
    };
    expect({ alone: await measure(0), lingered: await measure(5) }).toEqual({ alone: 1, lingered: 0.01 });
  });

  it("refuses only the caller whose task is bad, with the message it gets alone", async () => {
    const { binding, counts } = countingBinding();
    const edgeq = edgeqRpc(binding);
    const queue = uniqueQueue("rpc-linger-bad");
    const [good, bad] = await Promise.all([
      settled(edgeq.enqueue(queue, { payload: 1 })),
      settled(edgeq.enqueue(queue, { payload: 2, max_attempts: 0 })),
    ]);
    expect(bad).toEqual({ code: "invalid_request", message: expect.stringMatching(/^max_attempts\b/) });
    expect(good).toMatchObject({ ok: { tasks: [{ state: "pending", deduplicated: false }] } });
    expect(counts.enqueues).toBe(3);
    expect((await edgeq.list(queue)).tasks.map((t) => t.payload)).toEqual([1]);
  });

  it("sends a batch as it is, and keeps a caller's sequential awaits in order", async () => {
    const { binding, counts } = countingBinding();
    const edgeq = edgeqRpc(binding);
    const queue = uniqueQueue("rpc-linger-order");
    const caller = async (name: string) => {
      for (let n = 0; n < 3; n++) await edgeq.enqueue(queue, { payload: { name, n } });
    };
    await Promise.all([caller("a"), caller("b"), edgeq.enqueue(queue, { tasks: [{ payload: { name: "c", n: 0 } }] })]);
    expect(counts.enqueues).toBe(4);
    const payloads = (await edgeq.list(queue)).tasks.map((t) => t.payload as { name: string; n: number });
    for (const name of ["a", "b"]) {
      expect(payloads.filter((p) => p.name === name).map((p) => p.n)).toEqual([0, 1, 2]);
    }
  });
});
