import { exports } from "cloudflare:workers";
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { EdgeqClient } from "../../src/client/index";
import { edgeqRpc } from "../../src/rpc/edgeq-rpc";
import type { EdgeqService } from "../../src/rpc/edgeq-entrypoint";
import { uniqueQueue } from "../helpers";
import { countingBinding } from "./counting-binding";
import { workerFetch } from "../client/worker-fetch";

// A user's Worker that enqueues through edgeqRpc(env.EDGEQ) or edgeq/client: the linger lives inside the
// request that made it. An awaited enqueue holds the handler until its call is answered, and one handed to
// ctx.waitUntil holds the request's waitUntil: nothing is left gathering once the request is done.

interface ProducerEnv {
  EDGEQ: EdgeqService;
}

interface ProducerRequest {
  queue: string;
  n: number;
  /** Hand the enqueues to ctx.waitUntil and answer 202 at once, instead of awaiting them. */
  background?: boolean;
  /** Enqueue through edgeq/client (a fetch to the edgeq Worker) instead of the RPC binding. */
  client?: EdgeqClient;
}

/** The user's Worker: `n` single-task enqueues, each its own `edgeq.enqueue` call, with a wrapper per request. */
async function producer(request: ProducerRequest, env: ProducerEnv, ctx: ExecutionContext): Promise<Response> {
  const edgeq = request.client ?? edgeqRpc(env.EDGEQ);
  const sends = Array.from({ length: request.n }, (_, i) => edgeq.enqueue(request.queue, { payload: i }));
  if (request.background) {
    ctx.waitUntil(Promise.all(sends));
    return new Response(null, { status: 202 });
  }
  const answers = await Promise.all(sends);
  return Response.json(answers.map((a) => a.tasks[0]!.id));
}

const listed = async (queue: string) =>
  (await edgeqRpc(exports.EdgeqRpc as unknown as EdgeqService).list(queue, { limit: 100 })).tasks.map((t) => t.id);

describe("a linger inside a user's Worker request", () => {
  it("has sent every task, in one binding call, by the time an awaiting handler returns", async () => {
    const { env, counts } = countingBinding();
    const queue = uniqueQueue("linger-request");
    const ctx = createExecutionContext();
    const response = await producer({ queue, n: 10 }, env, ctx);
    const ids = (await response.json()) as string[];
    expect(counts.enqueues).toBe(1);
    expect(await listed(queue)).toEqual(ids);
    await waitOnExecutionContext(ctx);
    expect(counts.enqueues).toBe(1);
  });

  it("sends enqueues handed to ctx.waitUntil within the request's waitUntil, not after it", async () => {
    const { env, counts } = countingBinding();
    const queue = uniqueQueue("linger-wait-until");
    const ctx = createExecutionContext();
    const response = await producer({ queue, n: 10, background: true }, env, ctx);
    expect(response.status).toBe(202);
    // Answered before the linger ran out: the tasks are still gathering, held by the request's waitUntil.
    expect(counts.enqueues).toBe(0);
    await waitOnExecutionContext(ctx);
    expect(counts.enqueues).toBe(1);
    expect(await listed(queue)).toHaveLength(10);
  });

  it("does the same through edgeq/client made in the request", async () => {
    const worker = workerFetch();
    const queue = uniqueQueue("linger-request-client");
    const client = new EdgeqClient({ url: "http://edgeq.test", token: "test-token", fetch: worker.fetch });
    const ctx = createExecutionContext();
    const ids = (await (await producer({ queue, n: 10, client }, countingBinding().env, ctx)).json()) as string[];
    expect(worker.counts.requests).toBe(1);
    expect(await listed(queue)).toEqual(ids);
  });

  it("coalesces nothing across requests that each enqueue one task through a wrapper of their own", async () => {
    const { env, counts } = countingBinding();
    const queue = uniqueQueue("linger-per-request");
    await Promise.all(Array.from({ length: 20 }, () => producer({ queue, n: 1 }, env, createExecutionContext())));
    // One binding call per request: coalescing across requests is the server's to do, if anyone's (docs/rpc.md).
    expect(counts.enqueues).toBe(20);
    expect(await listed(queue)).toHaveLength(20);
  });
});
