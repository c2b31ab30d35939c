/**
 * Starts workerd through Miniflare with the bench worker (bench/bench-worker.ts, bundled by esbuild the way
 * wrangler bundles: workerd/worker/browser conditions) and a local D1 persisted in a temporary directory,
 * applies migrations/ (the same SQL files wrangler applies), the baseline's and the packs prototype's schemas, and sends it
 * operations.
 */
import { build } from "esbuild";
import { Miniflare } from "miniflare";
import { WebSocket } from "ws";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BASELINE_SCHEMA } from "./baseline-jobs";
import type { BenchRequest } from "./bench-worker";

/** The compatibility date the bench worker runs with: the newest the installed workerd supports. */
export const BENCH_COMPATIBILITY_DATE = "2026-07-30";

/** The statements of every migration file, in order, split where drizzle-kit marks a breakpoint. */
export function migrationStatements(root: string): string[] {
  const dir = join(root, "migrations");
  return readdirSync(dir)
    .filter((f) => f.endsWith(".sql"))
    .sort()
    .flatMap((f) => readFileSync(join(dir, f), "utf8").split("--> statement-breakpoint"))
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

export interface WorkerdBench {
  call<T>(req: BenchRequest): Promise<T>;
  /** Wall-clock milliseconds (Node's clock) of one call, with its result. */
  timed<T>(req: BenchRequest): Promise<{ ms: number; result: T }>;
  /** One HTTP request straight into the bench worker (section 12 sends the Worker's API requests so). */
  fetch(
    url: string,
    init: { method: string; headers: Record<string, string>; body?: string },
  ): Promise<{
    status: number;
    text: string;
  }>;
  /** A WebSocket opened into the bench worker over a real connection (section 12's worker sessions), as the
   * `ws` client of a Node worker opens one; null with the status when the upgrade was refused. */
  socket(url: string, headers: Record<string, string>): Promise<{ status: number; socket: WebSocket | null }>;
  dispose(): Promise<void>;
}

/**
 * `databases` (default 1): how many local D1 databases to bind — DB, then DB_1, DB_2, … (the shards'
 * naming) — each migrated with the same files. Section 7 (scale) binds several; the other sections one.
 */
export async function startWorkerdBench(root: string, databases = 1): Promise<WorkerdBench> {
  const bundle = await build({
    entryPoints: [join(root, "bench", "bench-worker.ts")],
    bundle: true,
    format: "esm",
    platform: "neutral",
    target: "es2022",
    conditions: ["workerd", "worker", "browser"],
    mainFields: ["module", "main"],
    external: ["node:*", "cloudflare:*"],
    write: false,
    logLevel: "warning",
  });
  const persist = mkdtempSync(join(tmpdir(), "edgeq-bench-d1-"));
  const mf = new Miniflare({
    modules: [{ type: "ESModule", path: join(root, "bench-worker.mjs"), contents: bundle.outputFiles[0]!.text }],
    compatibilityDate: BENCH_COMPATIBILITY_DATE,
    compatibilityFlags: ["nodejs_compat"],
    d1Databases: Object.fromEntries(
      Array.from({ length: databases }, (_, i) => (i === 0 ? ["DB", "edgeq-bench"] : [`DB_${i}`, `edgeq-bench-${i}`])),
    ),
    d1Persist: persist,
    // The Worker's own Durable Object classes (exported by the bench worker), as wrangler.toml binds them:
    // the growth section runs the real cron tick, which wakes coordinators and re-arms the scheduler.
    durableObjects: {
      COORDINATOR: { className: "Coordinator", useSQLite: true },
      EVENT_HUB: { className: "EventHub", useSQLite: true },
      SCHEDULER: { className: "Scheduler", useSQLite: true },
    },
    durableObjectsPersist: persist,
    r2Buckets: ["ARTIFACTS"],
    r2Persist: persist,
  });
  await mf.ready;
  const call = async <T>(req: BenchRequest): Promise<T> => {
    const res = await mf.dispatchFetch("http://bench/", { method: "POST", body: JSON.stringify(req) });
    const body = (await res.json()) as T & { error?: string };
    if (!res.ok || body.error) throw new Error(`bench worker ${req.op}: ${body.error ?? res.status}`);
    return body;
  };
  for (let shard = 0; shard < databases; shard++) {
    await call({
      op: "migrate",
      statements: [...migrationStatements(root), ...BASELINE_SCHEMA],
      shard,
    });
  }
  return {
    call,
    async timed<T>(req: BenchRequest) {
      const t0 = performance.now();
      const result = await call<T>(req);
      return { ms: performance.now() - t0, result };
    },
    async fetch(url, init) {
      const res = await mf.dispatchFetch(url, init);
      return { status: res.status, text: await res.text() };
    },
    async socket(url, headers) {
      // Why not dispatchFetch's socket: after a few minutes of other traffic, a close the worker sent did not
      // reach it (the worker saw its close completed; the socket stayed open here), measured in section 12.
      // Miniflare's own entry worker reads the request's URL from MF-Original-URL, as dispatchFetch sends it.
      const { pathname, search } = new URL(url);
      const socket = new WebSocket(new URL(pathname + search, await mf.ready), {
        headers: { ...headers, "MF-Original-URL": url },
      });
      return new Promise((resolve) => {
        socket.once("open", () => resolve({ status: 101, socket }));
        socket.once("unexpected-response", (_request, response) => {
          response.resume();
          resolve({ status: response.statusCode ?? 0, socket: null });
        });
        socket.once("error", () => resolve({ status: 0, socket: null }));
      });
    },
    async dispose() {
      await mf.dispose();
      rmSync(persist, { recursive: true, force: true });
    },
  };
}
