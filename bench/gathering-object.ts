/**
 * A prototype of coalescing enqueues in a Durable Object, for the bill (bench/bill-ops.ts): what the issue
 * asks of the queue's coordinator — every producer's single-task enqueue sent to one object per queue, which
 * gathers those made within the linger (the client's EnqueueLinger, src/contracts/enqueue-linger.ts) into one
 * enqueue operation of many tasks. A Durable Object's incoming requests share one I/O context, so a call
 * gathered in one request may answer another's caller. Bench only: not a part of edgeq.
 */
import { DurableObject } from "cloudflare:workers";
import { EnqueueLinger, type EnqueuedTask } from "../src/contracts/enqueue-linger";
import type { Env } from "../src/env";
import { JsonText, parseArguments } from "../src/operations/api/define";
import { queueApi } from "../src/operations/api/queue-api";
import { operationContext } from "../src/operations/context";
import { ProcessorRegistry } from "../src/processors/registry";

export class GatheringObject extends DurableObject<Env> {
  private readonly linger = new EnqueueLinger<unknown, EnqueuedTask>(async (queue, tasks) => {
    const op = operationContext({
      env: this.env,
      processors: new ProcessorRegistry([]),
      waitUntil: (work) => this.ctx.waitUntil(work),
    });
    const parsed = parseArguments(queueApi.enqueue, { queue }, tasks.length === 1 ? tasks[0] : { tasks });
    const answer = await queueApi.enqueue.run(op, parsed.params as never, parsed.input as never);
    return (answer instanceof JsonText ? JSON.parse(answer.text) : answer) as { tasks: EnqueuedTask[] };
  });

  /** One producer's single-task enqueue, answered with its own task once its gathered call is. */
  async enqueue(queue: string, task: unknown): Promise<{ tasks: EnqueuedTask[] }> {
    return this.linger.enqueue(queue, task, undefined);
  }
}
