import { describe, expect, inject, it } from "vitest";
import { EdgeqClient, EdgeqError } from "../../src/node/index";
import { uniqueQueue } from "./worker-support";

/**
 * The Node SDK's enqueues (edgeq/node re-exports edgeq/client) against a real `wrangler dev` (test/cli/server.ts):
 * single-task enqueues made at once coalesce into calls of up to maxBatch (src/contracts/enqueue-linger.ts),
 * counted as the server receives them — every request the client sends goes through this fetch.
 */
function countingClient(linger?: { lingerMs?: number; maxBatch?: number }) {
  const calls: number[] = [];
  const fetch: typeof globalThis.fetch = (input, init) => {
    if (init?.method === "POST" && String(input).endsWith("/tasks")) {
      calls.push((JSON.parse(String(init.body)) as { tasks?: unknown[] }).tasks?.length ?? 1);
    }
    return globalThis.fetch(input, init);
  };
  const client = new EdgeqClient({ url: inject("edgeqUrl"), token: inject("edgeqToken"), fetch, linger });
  return { client, calls };
}

/** Every task of `queue` in creation order. */
async function all(client: EdgeqClient, queue: string) {
  const tasks = [];
  for (let cursor: string | undefined; ;) {
    const page = await client.list(queue, { limit: 100, ...(cursor ? { cursor } : {}) });
    tasks.push(...page.tasks);
    if (!page.next_cursor) return tasks;
    cursor = page.next_cursor;
  }
}

describe("the Node SDK's coalesced enqueues", () => {
  it("sends 120 concurrent single enqueues as ⌈120/50⌉ = 3 calls, each caller its own id, in call order", async () => {
    const { client, calls } = countingClient({ maxBatch: 50 });
    const queue = uniqueQueue("sdk-linger");
    const answers = await Promise.all(Array.from({ length: 120 }, (_, i) => client.enqueue(queue, { payload: i })));
    expect(calls).toEqual([50, 50, 20]);
    const ids = answers.map((a) => a.tasks[0]!.id);
    expect((await all(client, queue)).map((t) => [t.id, t.payload])).toEqual(ids.map((id, i) => [id, i]));
  });

  it("refuses only the caller whose task is bad, with the refusal it gets alone", async () => {
    const { client, calls } = countingClient();
    const queue = uniqueQueue("sdk-linger-bad");
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        client.enqueue(queue, i === 3 ? { payload: i, priority: 0.5 } : { payload: i }).then(
          (answer) => answer.tasks[0]!.state,
          (error: unknown) => (error instanceof EdgeqError ? `${error.status} ${error.code}: ${error.message}` : error),
        ),
      ),
    );
    const alone = await countingClient({ lingerMs: 0 })
      .client.enqueue(queue, { payload: 3, priority: 0.5 })
      .catch((error: EdgeqError) => `${error.status} ${error.code}: ${error.message}`);
    expect(alone).toMatch(/^400 invalid_request: priority\b/);
    expect(results).toEqual(results.map((_, i) => (i === 3 ? alone : "pending")));
    expect(calls).toEqual([10, 9, 1]);
    expect((await all(client, queue)).map((t) => t.payload)).toEqual([0, 1, 2, 4, 5, 6, 7, 8, 9]);
  });
});
