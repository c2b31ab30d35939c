/// <reference types="vite/client" />
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { runTask } from "../../src/dispatch/run-task";
import { EdgeqError } from "../../src/engine/errors";
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
  it("gets no database handle, and of the bindings only ProcessorEnv's", async () => {
    const { ctx } = await contextOfOneRun();
    expect(Object.keys(ctx).sort()).toEqual(
      [
        "artifacts",
        "attempt",
        "calibrations",
        "checkpoint",
        "env",
        "group",
        "now",
        "progress",
        "queue",
        "saveCheckpoint",
        "signal",
        "taskId",
        "type",
      ].sort(),
    );
    expect(Object.keys(ctx.env).sort()).toEqual(PROCESSOR_BINDINGS);
    for (const binding of ["DB", "ARTIFACTS", "COORDINATOR", "EDGEQ_TOKEN"])
      expect(ctx.env).not.toHaveProperty(binding);
    // @ts-expect-error -- the type says so too: ProcessorContext has no `db`.
    expect(ctx.db).toBeUndefined();
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
const PROCESSOR_SOURCES = import.meta.glob<string>("../../src/processors/*.ts", {
  query: "?raw",
  import: "default",
  eager: true,
});

describe("processors import no storage of their own", () => {
  it("no module under src/processors imports the database, Drizzle or an engine query", () => {
    expect(Object.keys(PROCESSOR_SOURCES).length).toBeGreaterThan(5);
    const offending = Object.entries(PROCESSOR_SOURCES).flatMap(([path, source]) =>
      [...source.matchAll(/^import[^;]*?from "([^"]+)";/gms)]
        .map((m) => m[1]!)
        .filter((from) => from === "drizzle-orm" || from.startsWith("../db/") || from.startsWith("../engine/"))
        .filter((from) => !["../engine/errors", "../engine/limits"].includes(from))
        .map((from) => `${path} imports ${from}`),
    );
    expect(offending).toEqual([]);
  });
});
