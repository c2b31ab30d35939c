/**
 * The real edgeq Worker (src/index.ts: Hono API, D1, coordinators; or the bench's build of it,
 * bench/timed-worker.ts) served by workerd through Miniflare
 * directly, without `wrangler dev` in front: the profile section (bench/section-http-profile.ts) runs the
 * same requests against this and against `wrangler dev` to tell the Worker's own time from what wrangler's
 * local proxy adds.
 *
 * Same code, same runtime as `wrangler dev`: the bundle is the one wrangler itself builds for the local
 * environment (`wrangler deploy [entry] --dry-run --env local --outdir`), run by wrangler's own Miniflare and
 * workerd (node_modules/wrangler/node_modules/miniflare), with wrangler.toml's compatibility date and flags
 * and [env.local]'s bindings (every D1 shard); migrations/ applied to each local D1 first.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, extname, join } from "node:path";
import { pathToFileURL } from "node:url";
import { parse as parseToml } from "smol-toml";
import { migrationStatements } from "./workerd-host";

export interface EdgeqHost {
  url: string;
  /** A request to one of `opts.workers` by name, straight into workerd (no port of its own). */
  fetchWorker(name: string, url: string, init?: RequestInit): Promise<Response>;
  /** The bundle's source map (for bench/inspector-profile.ts), until `stop()`. */
  sourceMap: string;
  stop(): Promise<void>;
}

/** Wrangler's Miniflare 5: the constructor takes its own options, made from Miniflare 4's by a converter. */
type MiniflareModule = {
  Miniflare: new (options: unknown) => import("miniflare").Miniflare;
  convertV4MiniflareOptions(options: import("miniflare").MiniflareOptions): unknown;
};

/** Runs a command to the end; rejects with its output when it fails. */
function run(command: string, args: string[], cwd: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (d: Buffer) => (output += d.toString()));
    child.stderr.on("data", (d: Buffer) => (output += d.toString()));
    child.on("error", reject);
    child.on("exit", (code) =>
      code === 0 ? resolve() : reject(new Error(`${command} ${args.join(" ")}: exit ${code}\n${output}`)),
    );
  });
}

/**
 * Builds the Worker as wrangler does and serves it on a free port of 127.0.0.1. `opts.main` replaces
 * wrangler.toml's entry module (a path under `root`).
 *
 * @example
 * const host = await startEdgeqInWorkerd(root, { EDGEQ_TOKEN: "t" }, { main: "bench/timed-worker.ts" });
 * await fetch(`${host.url}/health`);
 * await host.stop();
 */
export async function startEdgeqInWorkerd(
  root: string,
  vars: Record<string, string>,
  opts: { inspectorPort?: number; main?: string; workers?: Array<Record<string, unknown>> } = {},
): Promise<EdgeqHost> {
  const dir = mkdtempSync(join(tmpdir(), "edgeq-bench-workerd-"));
  try {
    const toml = parseToml(readFileSync(join(root, "wrangler.toml"), "utf8")) as {
      main: string;
      compatibility_date: string;
      compatibility_flags: string[];
      env: { local: { vars: Record<string, string>; d1_databases: Array<{ binding: string; database_id: string }> } };
    };
    const main = opts.main ?? toml.main;
    const outdir = join(dir, "bundle");
    await run(
      join(root, "node_modules", ".bin", "wrangler"),
      ["deploy", main, "--dry-run", "--env", "local", "--outdir", outdir],
      root,
    );
    // wrangler names the bundle after the entry module: src/index.ts → index.js.
    const bundle = join(outdir, `${basename(main, extname(main))}.js`);
    const miniflarePath = join(
      root,
      "node_modules",
      "wrangler",
      "node_modules",
      "miniflare",
      "dist",
      "src",
      "index.js",
    );
    const { Miniflare, convertV4MiniflareOptions } = (await import(
      pathToFileURL(miniflarePath).href
    )) as MiniflareModule;
    const edgeq = {
      name: "edgeq",
      modulesRoot: outdir,
      modules: [
        {
          type: "ESModule",
          path: bundle,
          contents: readFileSync(bundle, "utf8"),
        },
      ],
      compatibilityDate: toml.compatibility_date,
      compatibilityFlags: toml.compatibility_flags,
      bindings: { ...toml.env.local.vars, ...vars },
      // Every local shard of [env.local] (DB, DB_1, …), as wrangler dev binds them.
      d1Databases: Object.fromEntries(toml.env.local.d1_databases.map((d) => [d.binding, d.database_id])),
      r2Buckets: ["ARTIFACTS"],
      durableObjects: { COORDINATOR: "Coordinator", EVENT_HUB: "EventHub", SCHEDULER: "Scheduler" },
    };
    const mf = new Miniflare(
      // Miniflare 5 (wrangler's) converts the Miniflare 4 options wrangler itself passes.
      convertV4MiniflareOptions({
        host: "127.0.0.1",
        port: 0,
        // workerd's DevTools inspector, for a CPU profile of the Worker (bench/inspector-profile.ts).
        ...(opts.inspectorPort === undefined ? {} : { inspectorPort: opts.inspectorPort }),
        d1Persist: join(dir, "d1"),
        r2Persist: join(dir, "r2"),
        durableObjectsPersist: join(dir, "do"),
        // edgeq first: the one served on the port; the others are reached by fetchWorker or bindings.
        workers: [edgeq, ...(opts.workers ?? [])],
      } as import("miniflare").MiniflareOptions),
    );
    const url = await mf.ready;
    for (const { binding } of toml.env.local.d1_databases) {
      const d1 = await mf.getD1Database(binding);
      for (const statement of migrationStatements(root)) await d1.prepare(statement).run();
    }
    return {
      url: url.origin,
      sourceMap: `${bundle}.map`,
      async fetchWorker(name, url, init) {
        const worker = (await mf.getWorker(name)) as unknown as {
          fetch(u: string, i?: RequestInit): Promise<Response>;
        };
        return worker.fetch(url, init);
      },
      async stop() {
        await mf.dispose();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
}
