import { describe, expect, it } from "vitest";
import { EdgeqClient, type EnqueueAnswer } from "../../src/client/index";
import { DEFAULT_LINGER_MAX_BYTES, type LingerOptions } from "../../src/contracts/enqueue-linger";
import { uniqueQueue } from "../helpers";
import { settled } from "../support/settled";
import { workerFetch } from "./worker-fetch";

// edgeq/client's linger (src/contracts/enqueue-linger.ts) against the real Worker: the bounds of a coalesced
// call (tasks, bytes), and what one bad task among many costs its neighbours.

/** A client of `worker` that also records the number of tasks of each enqueue request it sends. */
function clientOf(worker: ReturnType<typeof workerFetch>, linger?: LingerOptions) {
  const calls: number[] = [];
  const fetch: typeof globalThis.fetch = async (input, init) => {
    if (init?.method === "POST" && String(input).endsWith("/tasks")) {
      const body = JSON.parse(String(init.body)) as { tasks?: unknown[] };
      calls.push(body.tasks?.length ?? 1);
    }
    return worker.fetch(input, init);
  };
  return { client: new EdgeqClient({ url: "http://edgeq.test", token: "test-token", fetch, linger }), calls };
}

const idOf = (answer: EnqueueAnswer) => answer.tasks[0]!.id;

describe("edgeq/client's coalesced enqueues: bounds", () => {
  it("sends N concurrent single enqueues as ⌈N/maxBatch⌉ calls, each caller its own id, the queue in call order", async () => {
    const worker = workerFetch();
    const { client, calls } = clientOf(worker, { maxBatch: 100 });
    const queue = uniqueQueue("linger-n");
    const answers = await Promise.all(Array.from({ length: 250 }, (_, i) => client.enqueue(queue, { payload: i })));
    expect(calls).toEqual([100, 100, 50]);
    expect(worker.counts.requests).toBe(3);
    const ids = answers.map(idOf);
    expect(new Set(ids).size).toBe(250);
    const listed = [];
    for (let cursor: string | undefined; ;) {
      const page = await client.list(queue, { limit: 100, ...(cursor ? { cursor } : {}) });
      listed.push(...page.tasks);
      if (!page.next_cursor) break;
      cursor = page.next_cursor;
    }
    // Creation order is the callers' order, and each caller's id holds its own payload.
    expect(listed.map((t) => [t.id, t.payload])).toEqual(ids.map((id, i) => [id, i]));
  });

  it(`sends a call before it would pass ${DEFAULT_LINGER_MAX_BYTES} bytes of JSON, so every call is one statement`, async () => {
    const worker = workerFetch();
    const { client, calls } = clientOf(worker);
    const queue = uniqueQueue("linger-bytes");
    // 200,000-byte payloads: two fit in 512 KiB, a third would not.
    const big = "x".repeat(200_000);
    const answers = await Promise.all(
      Array.from({ length: 5 }, (_, i) => client.enqueue(queue, { payload: { i, big } })),
    );
    expect(calls).toEqual([2, 2, 1]);
    expect(new Set(answers.map(idOf)).size).toBe(5);
    // A small limit splits by bytes, not by count: two of these ~50-byte tasks fit in 120 bytes, not three.
    const small = clientOf(workerFetch(), { maxBytes: 120 });
    await Promise.all(
      Array.from({ length: 4 }, (_, i) => small.client.enqueue(queue, { payload: { i, pad: "y".repeat(30) } })),
    );
    expect(small.calls).toEqual([2, 2]);
  });

  it("costs one more call, not one per task, when one of 100 callers' tasks is bad; only its caller is refused", async () => {
    const worker = workerFetch();
    const { client, calls } = clientOf(worker);
    const queue = uniqueQueue("linger-one-bad");
    const results = await Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        settled(client.enqueue(queue, i === 40 ? { payload: i, max_attempts: 0 } : { payload: i })),
      ),
    );
    const alone = await settled(
      clientOf(workerFetch(), { lingerMs: 0 }).client.enqueue(queue, { payload: 40, max_attempts: 0 }),
    );
    expect(results[40]).toEqual(alone);
    expect(alone).toMatchObject({ code: "invalid_request", message: expect.stringMatching(/^max_attempts\b/) });
    expect(results.filter((r) => "ok" in r)).toHaveLength(99);
    // The refused call of 100, the 99 others as one call, the bad one alone.
    expect(calls).toEqual([100, 99, 1]);
    const page = await client.list(queue, { limit: 100 });
    expect(page.tasks.map((t) => t.payload)).toEqual(Array.from({ length: 100 }, (_, i) => i).filter((i) => i !== 40));
  });

  it("answers two callers sharing a debounce key (refused twice in one call) as they are answered one after the other alone", async () => {
    const answer = async (lingerMs: number, sequential: boolean) => {
      const { client } = clientOf(workerFetch(), { lingerMs });
      const queue = uniqueQueue("linger-debounce");
      const body = (n: number) => ({ payload: n, debounce: { key: "k", window_s: 60 } });
      const [first, second] = sequential
        ? [await client.enqueue(queue, body(1)), await client.enqueue(queue, body(2))]
        : await Promise.all([client.enqueue(queue, body(1)), client.enqueue(queue, body(2))]);
      const kept = await client.get(idOf(first));
      return {
        first: first.tasks[0]!.deduplicated,
        second: second.tasks[0]!.deduplicated,
        same: idOf(first) === idOf(second),
        payload: kept.payload,
      };
    };
    const alone = await answer(0, true);
    expect(await answer(5, false)).toEqual(alone);
    expect(alone).toEqual({ first: false, second: true, same: true, payload: 2 });
  });

  it("refuses a task that cannot be sent (not JSON) to its own caller alone, without its neighbours", async () => {
    const worker = workerFetch();
    const { client, calls } = clientOf(worker);
    const queue = uniqueQueue("linger-not-json");
    const [good, bad] = await Promise.all([
      settled(client.enqueue(queue, { payload: 1 })),
      client.enqueue(queue, { payload: 10n as unknown as number }).then(
        () => "sent",
        (error: unknown) => (error as Error).name,
      ),
    ]);
    expect(bad).toBe("TypeError");
    expect(good).toMatchObject({ ok: { tasks: [{ state: "pending" }] } });
    expect(calls).toEqual([1]);
  });
});
