import { d1TaskStore } from "../../src/engine/d1-store";
import { dependencyPageView } from "../../src/contracts/dependency-page";
import { env } from "cloudflare:workers";
import { openDb } from "../../src/db/client";
import { collectCompletedResults } from "../../src/engine/completed-results";
import type { Env } from "../../src/env";
import type { ProcessorContext } from "../../src/processors/types";
import { taskArtifacts } from "../../src/storage/artifacts";
import { T0 } from "../helpers";

/**
 * A ProcessorContext for calling a processor's `run` directly in a test: the production artifacts and
 * completed-results reads (src/dispatch/processor-context.ts) on real R2 and D1, the Worker's bindings, a
 * fixed clock, and progress and checkpoint calls recorded in arrays instead of written as heartbeats.
 */

export interface TestContext {
  ctx: ProcessorContext;
  /** Every `ctx.progress` call, in order. */
  progress: { percent: number; message?: string }[];
  /** Every `ctx.saveCheckpoint` value, in order. */
  checkpoints: unknown[];
  /** Aborts `ctx.signal` (a cancel or a lost lease). */
  abort: AbortController;
}

export interface TestContextOptions {
  taskId?: string;
  queue?: string;
  type?: string;
  group?: string | null;
  attempt?: number;
  checkpoint?: unknown;
  /** The clock (default: always T0). */
  now?: () => number;
  /** Bindings to add or replace, e.g. `{ AI: fakeAi.ai }`; `{ AI: undefined }` removes one. */
  env?: Partial<Env>;
}

let counter = 0;

/**
 * Builds a context; unspecified fields get defaults unique to this call (task id, queue).
 *
 * @example
 * const { ctx, progress } = testContext({ type: "tag", group: "g1" });
 * const result = await tagProcessor.run(tagProcessor.payload.parse({ text: "..." }), ctx);
 */
export function testContext(options: TestContextOptions = {}): TestContext {
  counter += 1;
  const taskId = options.taskId ?? `test-task-${counter}-${Math.random().toString(36).slice(2, 8)}`;
  const bindings: Env = { ...env, ...options.env };
  const progress: TestContext["progress"] = [];
  const checkpoints: unknown[] = [];
  const abort = new AbortController();
  const now = options.now ?? (() => T0);
  const ctx: ProcessorContext = {
    taskId,
    queue: options.queue ?? `test-queue-${counter}`,
    type: options.type ?? "default",
    group: options.group ?? null,
    attempt: options.attempt ?? 1,
    env: bindings,
    now,
    signal: abort.signal,
    async progress(percent, message) {
      progress.push(message === undefined ? { percent } : { percent, message });
    },
    checkpoint: options.checkpoint ?? null,
    async saveCheckpoint(value, withProgress) {
      checkpoints.push(value);
      if (withProgress) {
        const { percent, message } = withProgress;
        progress.push(message === undefined ? { percent } : { percent, message });
      }
    },
    artifacts: taskArtifacts(bindings.ARTIFACTS, taskId),
    dependencies: async (page = {}) =>
      dependencyPageView(await d1TaskStore(openDb(bindings.DB)).listDependencies(taskId, { limit: 100, ...page })),
    results: { completed: (scope, limit, pick) => collectCompletedResults(openDb(bindings.DB), scope, limit, pick) },
    db: bindings.DB,
  };
  return { ctx, progress, checkpoints, abort };
}

/** One call an AI stand-in received. */
export interface AiCall {
  model: string;
  inputs: Record<string, unknown>;
}

/**
 * A stand-in for the Workers AI binding, for the only boundary tests cannot cross (Workers AI does not
 * run offline): `run` records each call and returns what `reply` gives for it.
 *
 * @example
 * const fake = fakeAi(() => ({ response: '{"tags": []}' }));
 * const { ctx } = testContext({ env: { AI: fake.ai } });
 */
export function fakeAi(reply: (call: AiCall) => unknown): { ai: Ai; calls: AiCall[] } {
  const calls: AiCall[] = [];
  const stand = {
    async run(model: string, inputs: Record<string, unknown>): Promise<unknown> {
      const call = { model, inputs };
      calls.push(call);
      return reply(call);
    },
  };
  return { ai: stand as unknown as Ai, calls };
}
