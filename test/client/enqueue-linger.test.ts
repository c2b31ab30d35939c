import { describe, expect, it } from "vitest";
import { EdgeqClient } from "../../src/client/index";
import { uniqueQueue } from "../helpers";
import { workerFetch } from "./worker-fetch";
import { settled } from "../support/settled";

// edgeq/client coalesces single-task enqueues (src/contracts/enqueue-linger.ts), against the real Worker:
// each caller still gets its own task's answer or its own refusal.

function clientOf(worker: ReturnType<typeof workerFetch>, linger?: { lingerMs?: number; maxBatch?: number }) {
  return new EdgeqClient({ url: "http://edgeq.test", token: "test-token", fetch: worker.fetch, linger });
}

describe("edgeq/client's coalesced enqueues", () => {
  it("sends 100 concurrent single enqueues as 1 request writing 0.03 rows a task (one pack), against 100 requests and 3 rows a task alone", async () => {
    const measure = async (lingerMs: number) => {
      const worker = workerFetch();
      const client = clientOf(worker, { lingerMs });
      const queue = uniqueQueue("linger-cost");
      await client.enqueue(queue, { payload: "places the queue" });
      worker.reset();
      const answers = await Promise.all(
        Array.from({ length: 100 }, (_, i) => client.enqueue(queue, { payload: { i } })),
      );
      const spent = { requests: worker.counts.requests / 100, rowsWritten: worker.rowsWritten() / 100 };
      // Each caller got its own task: distinct ids, each holding the caller's own payload.
      expect(new Set(answers.map((a) => a.tasks[0]!.id)).size).toBe(100);
      const mine = await Promise.all(answers.map((a) => client.get(a.tasks[0]!.id)));
      expect(mine.map((t) => t.payload)).toEqual(Array.from({ length: 100 }, (_, i) => ({ i })));
      return spent;
    };
    const alone = await measure(0);
    const lingered = await measure(5);
    expect({ alone, lingered }).toEqual({
      alone: { requests: 1, rowsWritten: 3 },
      // One call of 100 plain tasks: one pack — its row, its live-index entry and one counter row.
      lingered: { requests: 0.01, rowsWritten: 0.03 },
    });
  });

  it("gathers enqueues made within the linger into one call, in call order", async () => {
    const worker = workerFetch();
    const client = clientOf(worker);
    const queue = uniqueQueue("linger-order");
    const ids = await Promise.all(
      [1, 2, 3].map(async (n) => (await client.enqueue(queue, { payload: n })).tasks[0]!.id),
    );
    expect(worker.counts.requests).toBe(1);
    const page = await client.list(queue);
    expect(page.tasks.map((t) => [t.id, t.payload])).toEqual(ids.map((id, i) => [id, i + 1]));
  });

  it("keeps one caller's sequential awaits in order while others' enqueues share its calls", async () => {
    const worker = workerFetch();
    const client = clientOf(worker);
    const queue = uniqueQueue("linger-sequential");
    const caller = async (name: string) => {
      for (let n = 0; n < 3; n++) await client.enqueue(queue, { payload: { name, n } });
    };
    await Promise.all([caller("a"), caller("b")]);
    expect(worker.counts.requests).toBe(3);
    const payloads = (await client.list(queue)).tasks.map((t) => t.payload as { name: string; n: number });
    for (const name of ["a", "b"]) {
      expect(payloads.filter((p) => p.name === name).map((p) => p.n)).toEqual([0, 1, 2]);
    }
  });

  it("refuses only the caller whose task is bad, with the message it gets alone; its neighbours' tasks are stored", async () => {
    const worker = workerFetch();
    const client = clientOf(worker);
    const queue = uniqueQueue("linger-bad");
    const other = uniqueQueue("linger-bad-other");
    const taken = (await client.enqueue(other, { payload: "elsewhere" }, { signal: new AbortController().signal }))
      .tasks[0]!.id;
    worker.reset();
    const [good1, badField, good2, otherQueuesId] = await Promise.all([
      settled(client.enqueue(queue, { payload: 1 })),
      settled(client.enqueue(queue, { payload: 2, priority: "high" as unknown as number })),
      settled(client.enqueue(queue, { payload: 3 })),
      settled(client.enqueue(queue, { id: taken, payload: 4 })),
    ]);
    expect(badField).toEqual({ code: "invalid_request", message: expect.stringMatching(/^priority\b/) });
    expect(otherQueuesId).toMatchObject({ code: "id_in_other_queue" });
    expect(good1).toMatchObject({ ok: { tasks: [{ state: "pending", deduplicated: false }] } });
    expect(good2).toMatchObject({ ok: { tasks: [{ state: "pending", deduplicated: false }] } });
    // The refused call stored nothing; each task was then sent on its own: 1 + 4 requests.
    expect(worker.counts.requests).toBe(5);
    expect((await client.list(queue)).tasks.map((t) => t.payload)).toEqual([1, 3]);
  });

  it("answers each caller sharing a dedupe key as it would have alone: the first creates, the next is deduplicated to it", async () => {
    const worker = workerFetch();
    const client = clientOf(worker);
    const queue = uniqueQueue("linger-dedupe");
    const [first, second] = await Promise.all([
      client.enqueue(queue, { payload: 1, dedupe_key: "k" }),
      client.enqueue(queue, { payload: 2, dedupe_key: "k" }),
    ]);
    expect(worker.counts.requests).toBe(1);
    expect(first.tasks[0]).toMatchObject({ deduplicated: false });
    expect(second.tasks[0]).toEqual({ ...first.tasks[0], deduplicated: true });
  });

  it("gives every caller a transient failure's error and sends nothing again (nothing lost, nothing doubled)", async () => {
    const worker = workerFetch();
    const client = clientOf(worker);
    const queue = uniqueQueue("linger-down");
    await client.enqueue(queue, { payload: "places the queue" });
    worker.reset();
    worker.counts.failNext = 1;
    const results = await Promise.all(
      [1, 2, 3].map((n) => settled(client.enqueue(queue, { id: undefined, payload: n }))),
    );
    expect(results.map((r) => ("code" in r ? r.code : "ok"))).toEqual(["unreachable", "unreachable", "unreachable"]);
    expect(worker.counts.requests).toBe(1);
    expect((await client.list(queue)).tasks.map((t) => t.payload)).toEqual(["places the queue"]);
  });

  it("coalesces only enqueues to the same queue with the same signal; batches and lingerMs 0 go alone", async () => {
    const worker = workerFetch();
    const client = clientOf(worker);
    const [a, b] = [uniqueQueue("linger-a"), uniqueQueue("linger-b")];
    const signal = new AbortController().signal;
    await Promise.all([
      client.enqueue(a, { payload: 1 }),
      client.enqueue(a, { payload: 2 }),
      client.enqueue(b, { payload: 3 }),
      client.enqueue(a, { payload: 4 }, { signal }),
      client.enqueue(a, { payload: 5 }, { signal }),
      client.enqueue(a, { tasks: [{ payload: 6 }] }),
    ]);
    // a (1, 2), b (3), a with the signal (4, 5), the batch (6).
    expect(worker.counts.requests).toBe(4);
    const off = workerFetch();
    const alone = clientOf(off, { lingerMs: 0 });
    await Promise.all([alone.enqueue(a, { payload: 7 }), alone.enqueue(a, { payload: 8 })]);
    expect(off.counts.requests).toBe(2);
  });
});
