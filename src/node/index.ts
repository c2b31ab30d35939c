/**
 * `edgeq/node`: the Node worker runtime. `new Worker(queue, handler, options)` leases a queue's tasks and
 * runs them; docs/sdk.md has the options, events and errors. The client (`edgeq/client`) is re-exported.
 *
 * @example
 * import { Worker, PermanentError, RetryAfterError } from "edgeq/node";
 * const worker = new Worker("emails", async (task, ctx) => {
 *   if (ctx.signal.aborted) return;
 *   await ctx.progress(10, "rendering");
 *   return { sent: true };
 * }, { url: process.env.EDGEQ_URL, token: process.env.EDGEQ_TOKEN });
 * await worker.run();
 */
export { Worker, type WorkerEvents, type WorkerOptions, type Task } from "./consumer";
export type { Handler } from "./handler-outcome";
export type { SessionSocket, SessionSocketFactory } from "./worker-session";
export { TaskStopped, type HeartbeatUpdate, type StopReason, type TaskContext } from "./types";
export { PermanentError, RetryAfterError } from "../processors/errors";
export { EdgeqClient, EdgeqError, type EdgeqClientOptions, type EdgeqErrorCode } from "../client/index";
export type { Artifact, LeasedTask } from "../client/types";
