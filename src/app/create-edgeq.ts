import { QueueCoordinator } from "../coordinator/coordinator";
import { runTick } from "../cron/tick";
import { readSettings, type Env } from "../env";
import { EventHub } from "../events/event-hub";
import { buildApp } from "../http/app";
import type { HttpPart } from "../http/http-part";
import { prepareEnqueue, type EnqueueInput, type PreparedEnqueue } from "../operations/batch-enqueue";
import { enqueueGatheredWith } from "../operations/gathered-enqueue";
import { ProcessorRegistry } from "../processors/registry";
import type { AnyProcessor } from "../processors/types";
import { EdgeqEntrypoint } from "../rpc/edgeq-entrypoint";
import { Scheduler } from "../schedules/scheduler";
import { processorListProblem } from "./processor-check";

/** What a Worker builds edgeq with. */
export interface EdgeqOptions {
  /** The processors its push queues run (none: pull workers only); each may type the Worker's env as its
   * own (`Processor<Payload, Env>`). */
  processors?: readonly AnyProcessor[];
  /** The dashboard at /dashboard (`import { dashboard } from "edgeq/dashboard"`); left out, not bundled. */
  dashboard?: HttpPart<"dashboard">;
  /** The SQS-compatible endpoint (`import { sqs } from "edgeq/sqs"`); left out, not bundled. */
  sqs?: HttpPart<"sqs">;
  /** /openapi.json and the API reference at /docs (`import { reference } from "edgeq/reference"`); left out,
   * not bundled. */
  reference?: HttpPart<"reference">;
}

/** What createEdgeq builds: a Worker's handlers and the classes its module exports. */
export interface Edgeq {
  /** The processors, checked and registered. */
  processors: ProcessorRegistry;
  /** The HTTP API, with the dashboard, the SQS endpoint and the reference it was built with. */
  fetch: (request: Request, env: Env, ctx: ExecutionContext) => Response | Promise<Response>;
  /** The minute tick (wrangler.toml's cron trigger). */
  scheduled: (controller: ScheduledController, env: Env, ctx: ExecutionContext) => void;
  /** Durable Object class `Coordinator`: one per queue partition, running this Worker's processors. */
  Coordinator: new (ctx: DurableObjectState, env: Env) => QueueCoordinator;
  /** Durable Object class `EventHub`: one per queue, its event stream. */
  EventHub: typeof EventHub;
  /** Durable Object class `Scheduler`: fires every schedule. */
  Scheduler: typeof Scheduler;
  /** The Workers RPC entrypoint other Workers bind (docs/rpc.md). */
  EdgeqRpc: new (ctx: ExecutionContext, env: Env) => EdgeqEntrypoint;
  /**
   * Prepares an enqueue to go into a D1 `batch()` of your own, with your writes: both commit or neither
   * (docs/processors.md, "Enqueue in your own batch"). `d1` is the binding your batch runs on, where the
   * queue must live; `body` is an enqueue's body. Put `statements` in the batch, then call `committed()`.
   *
   * @example
   * const enqueue = await edgeq.prepareEnqueue(env, env.DB, "receipts", { type: "receipt", payload: { order: 7 } });
   * await env.DB.batch([env.DB.prepare("INSERT INTO orders (id) VALUES (?)").bind(7), ...enqueue.statements]);
   * ctx.waitUntil(enqueue.committed());
   */
  prepareEnqueue(env: Env, d1: D1Database, queue: string, body: EnqueueInput): Promise<PreparedEnqueue>;
}

/**
 * Builds edgeq for a Worker: its `fetch` (the HTTP API, and the dashboard, the SQS endpoint and the API
 * reference when given: each is its own import, bundled only by a Worker that passes it) and `scheduled`
 * (the minute tick) handlers, the Durable Object classes the Worker's module must export under the class
 * names its wrangler.toml binds (`Coordinator`, `EventHub`, `Scheduler`), and `EdgeqRpc`, the entrypoint
 * a service binding of another Worker names. The processor list is
 * checked here, once: a processor without a valid type, payload schema, engine or run function, or two of
 * one type, throws an Error naming it as the Worker starts.
 *
 * @example
 * const edgeq = createEdgeq({ processors: [echoProcessor], dashboard, sqs, reference });
 * export const { Coordinator, EventHub, Scheduler, EdgeqRpc } = edgeq;
 * export default { fetch: edgeq.fetch, scheduled: edgeq.scheduled } satisfies ExportedHandler<Env>;
 */
export function createEdgeq(options: EdgeqOptions = {}): Edgeq {
  const list = options.processors ?? [];
  const problem = processorListProblem(list);
  if (problem !== null) throw new Error(`edgeq: ${problem}`);
  const processors = new ProcessorRegistry(list);
  const { dashboard, sqs, reference } = options;
  const app = buildApp({ processors, parts: { dashboard, sqs, reference } });

  /** The queue-partition coordinator, with this Worker's processors. */
  class Coordinator extends QueueCoordinator {
    constructor(ctx: DurableObjectState, env: Env) {
      super(ctx, env, { processors, enqueueGathered: enqueueGatheredWith(processors) });
    }
  }

  /** The Workers RPC binding other Workers of the account call (a service binding's `entrypoint`). */
  class EdgeqRpc extends EdgeqEntrypoint {
    constructor(ctx: ExecutionContext, env: Env) {
      super(ctx, env, { processors });
    }
  }

  return {
    processors,
    fetch: (request, env, ctx) => app.fetch(request, env, ctx),
    /** The cron tick, awaited through waitUntil (never fire-and-forget). Refused in development: there
     * `wrangler dev` calls scheduled() for anyone who asks, with the clock they send, and `npm start` runs
     * the tick on POST /__tick with the bearer token instead (src/http/routes/local-tick.ts). */
    scheduled(controller, env, ctx): void {
      if (readSettings(env).ENVIRONMENT === "development") {
        throw new Error(
          "edgeq: scheduled events are refused in development (wrangler dev serves them without the token); run the tick with POST /__tick and the bearer token",
        );
      }
      ctx.waitUntil(
        runTick(env, controller.scheduledTime).then((result) => {
          console.log("cron tick", JSON.stringify(result));
        }),
      );
    },
    Coordinator,
    EventHub,
    Scheduler,
    EdgeqRpc,
    prepareEnqueue: (env, d1, queue, body) => prepareEnqueue({ env, processors }, d1, queue, body),
  };
}
