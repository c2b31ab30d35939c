// The one launcher of the local edgeq server, for `npm start` (scripts/start.mjs), the CLI tests
// (test/cli/server.ts) and the benchmark (bench/local-server.ts): migrations applied to the local D1
// first, `wrangler dev --env local` on 127.0.0.1 with wrangler's Local Explorer off, ready once /health
// answers, stopped with its whole process group. What it serves without the token: docs/api.md, "What
// `npm start` serves".
import { spawn } from "node:child_process";
import { createServer } from "node:net";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import process from "node:process";
import { wranglerOutputFilter } from "./wrangler-output.mjs";

/** @typedef {import("./wrangler-dev.d.mts").WranglerDevOptions} WranglerDevOptions */
/** @typedef {import("./wrangler-dev.d.mts").LocalServer} LocalServer */

/** How long start-up may take: wrangler bundles the Worker and boots workerd in ~10 s on these 2 cores,
 * and up to ~60 s was seen while the worker test project ran beside it; twice that is a hung start. */
const START_TIMEOUT_MS = 120_000;

/** How often /health is asked during start-up: a quarter second adds little to a ~10 s start. */
const HEALTH_POLL_MS = 250;

/** Starts tried when one fails on a port clash (below, in startWranglerDev). */
const START_ATTEMPTS = 3;

/** After SIGTERM, wrangler stops workerd and exits in well under a second; five is a busy machine. */
const STOP_GRACE_MS = 5_000;

/** Characters of wrangler's output kept for error messages: its last error with a stack fits. */
const OUTPUT_TAIL_CHARS = 20_000;

/**
 * A port on 127.0.0.1 that was free a moment ago.
 * @returns {Promise<number>}
 */
export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() =>
        typeof address === "object" && address ? resolve(address.port) : reject(new Error("no free port")),
      );
    });
  });
}

/** @param {number} ms */
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Runs wrangler with its output passed through the filter to `onOutput` and kept in `tail`.
 * @param {string} root
 * @param {string[]} args
 * @param {{ detached: boolean, env: NodeJS.ProcessEnv, onOutput?: WranglerDevOptions["onOutput"],
 *   tail: { text: string } }} how
 */
function runWrangler(root, args, how) {
  const child = spawn(join(root, "node_modules", ".bin", "wrangler"), args, {
    cwd: root,
    env: how.env,
    // No stdin: wrangler dev runs in its own process group, and reading the terminal from there would
    // stop it (SIGTTIN); its interactive keys are turned off below.
    stdio: ["ignore", "pipe", "pipe"],
    detached: how.detached,
  });
  for (const stream of /** @type {const} */ (["stdout", "stderr"])) {
    const filter = wranglerOutputFilter((text) => {
      how.tail.text = (how.tail.text + text).slice(-OUTPUT_TAIL_CHARS);
      how.onOutput?.(text, stream);
    });
    child[stream].setEncoding("utf8");
    child[stream].on("data", (chunk) => filter.push(chunk));
    child[stream].on("end", () => filter.end());
  }
  /** @type {Promise<number | null>} */
  const exited = new Promise((resolve) => {
    child.on("error", () => resolve(null));
    child.on("exit", (code) => resolve(code));
  });
  return { child, exited };
}

/**
 * The D1 bindings of wrangler.toml's [env.local] (the shards `npm start` serves): DB, DB_1, ...
 * @param {string} root
 * @returns {Promise<string[]>}
 */
async function localShards(root) {
  const toml = await readFile(join(root, "wrangler.toml"), "utf8");
  const found = [...toml.matchAll(/^\[\[env\.local\.d1_databases\]\]\s*\nbinding\s*=\s*"([A-Z0-9_]+)"/gm)].map(
    (m) => m[1] ?? "",
  );
  return found.length > 0 ? found : ["DB"];
}

/**
 * Applies the migrations to every local shard's D1 (DB, DB_1, ...) in `persistTo`, with wrangler's own
 * `d1 migrations apply`, which boots a workerd per migration file: about 12 s of CPU per database from
 * scratch, 3 s when nothing is left to apply.
 * @param {{ root: string, persistTo?: string, onOutput?: WranglerDevOptions["onOutput"],
 *   tail?: { text: string } }} options
 * @returns {Promise<void>}
 * @example
 * await applyLocalMigrations({ root: process.cwd(), persistTo: "/tmp/state" });
 */
export async function applyLocalMigrations({ root, persistTo, onOutput, tail = { text: "" } }) {
  const persist = persistTo ? ["--persist-to", persistTo] : [];
  // CI=true: wrangler applies without asking.
  const env = { ...wranglerEnv(), CI: "true" };
  for (const binding of await localShards(root)) {
    const migrate = runWrangler(root, ["d1", "migrations", "apply", binding, "--local", "--env", "local", ...persist], {
      detached: false,
      env,
      onOutput,
      tail,
    });
    if ((await migrate.exited) !== 0) {
      throw new Error(`applying the migrations to the local D1 ${binding} failed:\n${tail.text}`);
    }
  }
}

/** The environment wrangler runs in. */
function wranglerEnv() {
  return {
    ...process.env,
    WRANGLER_SEND_METRICS: "false",
    // wrangler's Local Explorer (on by default in wrangler 4.164, on the server's own port under
    // /cdn-cgi/local/explorer) reads and writes every local D1 database, Durable Object and R2 bucket, and
    // calls scheduled(), for anyone, without the token. X_LOCAL_EXPLORER is wrangler's switch for it
    // (getLocalExplorerEnabledFromEnv in wrangler 4.164; not yet in Cloudflare's docs).
    X_LOCAL_EXPLORER: "false",
  };
}

/**
 * Applies the migrations (unless `migrate` is false), starts `wrangler dev --env local`, and resolves once
 * /health answers.
 * @param {WranglerDevOptions} options
 * @returns {Promise<LocalServer>}
 * @example
 * const server = await startWranglerDev({ root: process.cwd(), token: "t" });
 * await fetch(`${server.url}/health`);
 * await server.stop();
 */
export async function startWranglerDev(options) {
  const { root, token, sqsCredentials, main, persistTo, logLevel, extraArgs = [], onOutput } = options;
  const port = options.port ?? (await freePort());
  const persist = persistTo ? ["--persist-to", persistTo] : [];
  const env = wranglerEnv();
  const tail = { text: "" };

  if (options.migrate !== false) await applyLocalMigrations({ root, persistTo, onOutput, tail });

  const start = async () => {
    const dev = runWrangler(
      root,
      [
        "dev",
        ...(main ? [main] : []),
        "--env",
        "local",
        "--ip",
        "127.0.0.1",
        "--port",
        String(port),
        // Not for /__scheduled, which the Worker refuses in development like wrangler's other scheduled
        // routes (npm start runs the tick on POST /__tick): without it, wrangler prints that a cron must be
        // fired by hand at /cdn-cgi/local/scheduled, which would send people to a refused route.
        "--test-scheduled",
        "--show-interactive-dev-session=false",
        "--var",
        `EDGEQ_TOKEN:${token}`,
        // wrangler splits a --var at its first ':' only, so "AKID:secret" pairs pass whole.
        ...(sqsCredentials ? ["--var", `SQS_CREDENTIALS:${sqsCredentials}`] : []),
        ...(logLevel ? ["--log-level", logLevel] : []),
        ...persist,
        ...extraArgs,
      ],
      { detached: true, env, onOutput, tail },
    );
    const pid = dev.child.pid;
    if (pid === undefined) throw new Error(`wrangler dev did not start:\n${tail.text}`);
    let exitCode = /** @type {number | null | undefined} */ (undefined);
    void dev.exited.then((code) => (exitCode = code));

    /** @param {NodeJS.Signals} signal */
    const signalGroup = (signal) => {
      try {
        process.kill(-pid, signal);
      } catch {
        // the group is gone already
      }
    };
    const stop = async () => {
      if (exitCode === undefined) {
        signalGroup("SIGTERM");
        await Promise.race([dev.exited, sleep(STOP_GRACE_MS)]);
      }
      // workerd and anything else wrangler left in its group.
      signalGroup("SIGKILL");
      await dev.exited;
    };

    const url = `http://127.0.0.1:${port}`;
    const deadline = Date.now() + START_TIMEOUT_MS;
    for (;;) {
      try {
        if ((await fetch(`${url}/health`)).ok) break;
      } catch {
        // not listening yet
      }
      if (exitCode !== undefined || Date.now() > deadline) {
        await stop();
        const why =
          exitCode !== undefined ? `exited (${exitCode})` : `did not answer /health in ${START_TIMEOUT_MS} ms`;
        throw new Error(`wrangler dev ${why}:\n${tail.text}`);
      }
      await sleep(HEALTH_POLL_MS);
    }
    return { url, port, pid, output: () => tail.text, exited: dev.exited, stop };
  };

  // wrangler picks its inner sockets' ports (the dev registry's direct sockets, the inspector) as free a
  // moment before binding them, so two servers starting at once can pick the same one and one exits with
  // "Address already in use": start that one again (a port taken for good fails three times).
  for (let attempt = 1; ; attempt++) {
    try {
      return await start();
    } catch (error) {
      const clash = /Address already in use/.test(tail.text);
      if (!clash || attempt >= START_ATTEMPTS) throw error;
      tail.text = "";
    }
  }
}
