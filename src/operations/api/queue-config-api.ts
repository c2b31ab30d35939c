import * as z from "zod";
import { QueueConfigPatch, QueueConfigSchema, QueueParams } from "../../contracts/api";
import type { ProcessorRegistry } from "../../processors/registry";
import { queueConfigOf } from "../../shards/queue-config-ops";
import { readRoute } from "../../shards/queue-route";
import { configureQueue } from "../queue";
import { defineOperation, jsonInput } from "./define";

/** The API's operations on a queue's configuration (`/v1/queues/{queue}/config`; RPC `configure`). */

/** The queue's effective configuration (stored values over defaults). */
export const getQueueConfig = defineOperation({
  params: QueueParams,
  input: undefined,
  answer: QueueConfigSchema,
  run: async (op, { queue }) => queueConfigOf(await readRoute(op.env, queue)),
});

/**
 * A push queue's processor: one of `types` (the Worker's registry), so the document lists them as an
 * enum and a generated client cannot send a name the server refuses. Built from the registry the Worker
 * was given; kept out of src/contracts/api.ts, which the CLI bundles.
 */
function processorName(types: readonly string[]) {
  const description = "push mode: the processor for every task; null runs each task's own type";
  if (types.length === 0) return z.null().optional().meta({ description });
  const names = [...types] as [string, ...string[]];
  return z
    .enum(names, { error: (issue) => `no processor ${JSON.stringify(issue.input)} (registered: ${names.join(", ")})` })
    .nullable()
    .optional()
    .meta({ description });
}

/** Sets some or all of a queue's configuration, for a Worker whose processors are `types`. */
function configureFor(types: readonly string[]) {
  return defineOperation({
    params: QueueParams,
    input: jsonInput(QueueConfigPatch.extend({ processor: processorName(types) }).meta(QueueConfigPatch.meta() ?? {})),
    answer: QueueConfigSchema,
    run: (op, { queue }, patch) => configureQueue(op, queue, patch),
  });
}

const built = new WeakMap<ProcessorRegistry, ReturnType<typeof configureFor>>();

/**
 * Sets some or all of a queue's configuration: the operation for a Worker with `processors`, built once
 * per registry (its body's schema names the registry's processors).
 *
 * @example
 * app.openapi(...operationRoute(configureQueueOperation(processors), doc));
 */
export function configureQueueOperation(processors: ProcessorRegistry) {
  let operation = built.get(processors);
  if (operation === undefined) {
    operation = configureFor(processors.types());
    built.set(processors, operation);
  }
  return operation;
}
