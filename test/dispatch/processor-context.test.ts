/// <reference types="vite/client" />
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { runTask } from "../../src/dispatch/run-task";
import { EdgeqError } from "../../src/contracts/errors";
import type { ProcessorContext } from "../../src/processors/types";
import { headArtifact, listArtifacts } from "../../src/storage/artifacts";
import { enqueueOne, leaseOne } from "../engine/fixtures";
import { T0, uniqueQueue } from "../helpers";
import { Clock, runDeps, testProcessor } from "./support";

/** The bindings a processor may read (ProcessorEnv); the rest stay with the dispatcher. */
const PROCESSOR_BINDINGS = ["AI", "TAG_MODEL", "TTS_MODEL", "WEBHOOK_SECRET"];

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

describe("a processor reaches storage only through its context", () => {
  it("gets its task's database (for its own tables) and, of the bindings, only ProcessorEnv's", async () => {
    const { ctx } = await contextOfOneRun();
    expect(Object.keys(ctx).sort()).toEqual(
      [
        "artifacts",
        "attempt",
        "checkpoint",
        "db",
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
    expect(Object.keys(ctx.env).sort()).toEqual(PROCESSOR_BINDINGS);
    for (const binding of ["DB", "ARTIFACTS", "COORDINATOR", "EDGEQ_TOKEN"])
      expect(ctx.env).not.toHaveProperty(binding);
    // The database is the one the task lives in (this test's queue is on the home shard).
    expect(ctx.db).toBe(env.DB);
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
