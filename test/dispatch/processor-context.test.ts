/// <reference types="vite/client" />
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { runTask } from "../../src/dispatch/run-task";
import { EdgeqError } from "../../src/contracts/errors";
import { z } from "zod";
import type { Env } from "../../src/env";
import { ProcessorRegistry } from "../../src/processors/registry";
import type { Processor, ProcessorContext } from "../../src/processors/types";
import { headArtifact, listArtifacts } from "../../src/storage/artifacts";
import { enqueueOne, leaseOne } from "../engine/fixtures";
import { d1TaskStore } from "../../src/engine/d1-store";
import { db, row, T0, uniqueQueue } from "../helpers";
import { Clock, runDeps, testProcessor } from "./support";

/** Runs one task of type `probe` through runTask and returns the context its processor was given. */
async function contextOfOneRun(
  probe: (ctx: ProcessorContext) => Promise<unknown> = async () => null,
): Promise<{ ctx: ProcessorContext; taskId: string; outcome: string }> {
  const queue = uniqueQueue("ctx");
  const taskId = await enqueueOne(queue, { type: "probe" }, T0);
  const task = await leaseOne(queue, T0);
  let seen: ProcessorContext | undefined;
  const processor = testProcessor("probe", async (_payload, ctx) => {
    seen = ctx;
    return probe(ctx);
  });
  const { outcome } = await runTask(runDeps([processor], new Clock(T0 + 1)), task);
  if (!seen) throw new Error("the processor never ran");
  return { ctx: seen, taskId, outcome };
}

describe("a processor's context", () => {
  it("answers a join's dependencies with their results, page by page, as GET /v1/tasks/{id}/dependencies does", async () => {
    const queue = uniqueQueue("ctx-join");
    const store = d1TaskStore(db());
    const { tasks, join } = await store.enqueueFanOut(
      queue,
      [{ type: "part" }, { type: "part" }],
      { type: "probe" },
      T0,
    );
    const parts = await store.leaseTasks({ queue, max: 2, visibilityTimeoutS: 30, holder: "w" }, T0);
    await store.completeTasks(
      parts.map((p) => ({ id: p.id, leaseToken: p.leaseToken!, result: { of: p.id } })),
      T0,
    );
    const task = await leaseOne(queue, T0 + 1);
    expect(task.id).toBe(join.id);
    const pages: unknown[] = [];
    const processor = testProcessor("probe", async (_payload, ctx) => {
      const first = await ctx.dependencies({ limit: 1 });
      pages.push(first, await ctx.dependencies({ cursor: first.next_cursor!, limit: 1 }), await ctx.dependencies());
      return null;
    });
    await runTask(runDeps([processor], new Clock(T0 + 2)), task);
    const [a, b] = tasks.map((t) => t.id).sort();
    const entry = (id: string) => ({
      id,
      queue,
      type: "part",
      state: "completed",
      result: { of: id },
      result_bytes: JSON.stringify({ of: id }).length,
    });
    expect(pages).toEqual([
      { dependencies: [entry(a!)], next_cursor: a },
      { dependencies: [entry(b!)], next_cursor: null },
      { dependencies: [entry(a!), entry(b!)], next_cursor: null },
    ]);
  });

  it("carries the Worker's whole env, its task's id and its task's database (for its own tables)", async () => {
    const { ctx, taskId } = await contextOfOneRun();
    expect(Object.keys(ctx).sort()).toEqual(
      [
        "artifacts",
        "attempt",
        "checkpoint",
        "db",
        "dependencies",
        "env",
        "group",
        "now",
        "progress",
        "queue",
        "results",
        "saveCheckpoint",
        "signal",
        "taskId",
        "type",
      ].sort(),
    );
    // Every binding, edgeq's and the Worker's own (DB_1 and TEST_MIGRATIONS are not in edgeq's Env type).
    expect(Object.keys(ctx.env).sort()).toEqual(Object.keys(env).sort());
    for (const binding of ["DB", "DB_1", "ARTIFACTS", "COORDINATOR", "TEST_MIGRATIONS"] as const)
      expect(ctx.env[binding as keyof typeof ctx.env]).toBe(env[binding]);
    // The id the enqueue answered (and GET /v1/tasks/{id} takes).
    expect(ctx.taskId).toBe(taskId);
    // The database is the one the task lives in (this test's queue is on the home shard).
    expect(ctx.db).toBe(env.DB);
  });

  it("is typed with the Worker's env its processor declares (Processor<Payload, Env>)", async () => {
    /** A Worker's own env type: edgeq's bindings and one of its own. */
    interface WorkerEnv extends Env {
      TEST_MIGRATIONS: Array<{ name: string }>;
    }
    const queue = uniqueQueue("ctx-env");
    await enqueueOne(queue, { type: "own-env", payload: { first: true } }, T0);
    const task = await leaseOne(queue, T0);
    const ownEnv: Processor<{ first: boolean }, WorkerEnv> = {
      type: "own-env",
      payload: z.object({ first: z.boolean() }),
      engine: (workerEnv) => ({ name: "own", available: workerEnv.TEST_MIGRATIONS.length > 0 }),
      async run(payload, ctx) {
        return { migration: ctx.env.TEST_MIGRATIONS[payload.first ? 0 : 1]!.name };
      },
    };
    const registry = new ProcessorRegistry([ownEnv]);
    expect(registry.whyUnavailable("own-env", env)).toBeNull();
    const { outcome } = await runTask(runDeps([ownEnv], new Clock(T0 + 1)), task);
    expect(outcome).toBe("completed");
    expect(JSON.parse((await row(task.id)).result!)).toEqual({ migration: env.TEST_MIGRATIONS[0]!.name });
  });

  it("stores artifacts under its own task, where the artifact routes' storage module finds them", async () => {
    const { taskId, outcome } = await contextOfOneRun((ctx) =>
      ctx.artifacts.put("out.txt", new TextEncoder().encode("hello"), "text/plain"),
    );
    expect(outcome).toBe("completed");
    const stored = { name: "out.txt", content_type: "text/plain", size: 5 };
    expect(await listArtifacts(env.ARTIFACTS, taskId)).toEqual([stored]);
    expect(await headArtifact(env.ARTIFACTS, taskId, "out.txt")).toEqual(stored);
  });

  it("cannot name a file outside its task: a path is refused before R2 is touched", async () => {
    let refused: unknown;
    const { taskId } = await contextOfOneRun(async (ctx) => {
      refused = await ctx.artifacts.put("../other/x.txt", new Uint8Array([1]), "text/plain").catch((e: unknown) => e);
      return null;
    });
    expect(refused).toBeInstanceOf(EdgeqError);
    expect((refused as EdgeqError).code).toBe("invalid_request");
    expect(await listArtifacts(env.ARTIFACTS, taskId)).toEqual([]);
  });
});

/** Every processor module's source, by path. */
const PROCESSOR_SOURCES = import.meta.glob<string>(["../../src/processors/*.ts", "../../src/plugins/**/*.ts"], {
  query: "?raw",
  import: "default",
  eager: true,
});

describe("processors reach tasks only through their context", () => {
  it("no module under src/processors or src/plugins imports the core's database schema or an engine query", () => {
    expect(Object.keys(PROCESSOR_SOURCES).length).toBeGreaterThan(10);
    const offending = Object.entries(PROCESSOR_SOURCES).flatMap(([path, source]) =>
      [...source.matchAll(/^import[^;]*?from "([^"]+)";/gms)]
        .map((m) => m[1]!)
        // A plugin may use Drizzle on its own tables (src/plugins/tag/schema.ts), never the core's.
        .filter((from) => /^(\.\.\/)+(db|engine|shards)\//.test(from))
        .filter((from) => !/^(\.\.\/)+engine\/(errors|limits)$/.test(from))
        .map((from) => `${path} imports ${from}`),
    );
    expect(offending).toEqual([]);
  });
});
