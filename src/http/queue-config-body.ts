import { z } from "@hono/zod-openapi";
import { defaultRegistry } from "../processors/registry";
import { QueueConfigPatch } from "./schemas";

/** The processors this Worker has, in registry order (built-ins, then src/processors/custom.ts). */
const registered = defaultRegistry.list().map((p) => p.type) as [string, ...string[]];

/**
 * A push queue's processor: one the registry has, so the document lists them as an enum and a generated
 * client cannot send a name the server refuses. Kept out of src/http/schemas.ts, which the CLI bundles, so
 * the CLI does not carry the processors with it.
 */
const ProcessorName = z.enum(registered, {
  error: (issue) => `no processor ${JSON.stringify(issue.input)} (registered: ${registered.join(", ")})`,
});

/** The body of PUT /v1/queues/{queue}/config: QueueConfigPatch, with `processor` limited to registered ones. */
export const QueueConfigPutBody = QueueConfigPatch.extend({
  processor: ProcessorName.nullable()
    .optional()
    .openapi({ description: "push mode: the processor for every task; null runs each task's own type" }),
});
