import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { inject } from "vitest";
import { createClient, expectOk } from "../../cli/client";

/** Helpers for the command tests: run the built `edgeq` against the test server, and drive the API. */

const BIN = join(process.cwd(), "bin", "edgeq.mjs");
if (!existsSync(join(process.cwd(), "dist", "edgeq.mjs"))) {
  throw new Error("dist/edgeq.mjs is missing: run `npm run build:cli` before the cli tests");
}

export interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** The typed API client, as the CLI builds it, pointed at the test server. */
export function api() {
  return createClient({ url: inject("edgeqUrl"), token: inject("edgeqToken") });
}

const HOME = mkdtempSync(join(tmpdir(), "edgeq-home-"));

/** A queue name unique to one test. */
let counter = 0;
export function uniqueQueue(prefix = "cli"): string {
  counter += 1;
  return `${prefix}-${counter}-${Math.random().toString(36).slice(2, 8)}`;
}

/** A file in a fresh temporary directory. */
export function tempFile(name: string, content: string): string {
  const path = join(mkdtempSync(join(tmpdir(), "edgeq-cmd-")), name);
  writeFileSync(path, content);
  return path;
}

/** A running `edgeq` process: its output so far, and its end. */
export interface Running {
  output(): { stdout: string; stderr: string };
  /** Resolves once stdout contains `text`. */
  waitFor(text: string | RegExp, timeoutMs?: number): Promise<void>;
  kill(signal: NodeJS.Signals): void;
  done: Promise<Run>;
}

/**
 * Starts `node bin/edgeq.mjs ...args` with EDGEQ_URL / EDGEQ_TOKEN for the test server (override with
 * `env`), writing `input` to its stdin.
 */
export function start(
  args: string[],
  options: { input?: string; env?: Record<string, string>; unset?: string[] } = {},
): Running {
  // A fresh HOME and no EDGEQ_CONFIG: a developer's ~/.config/edgeq/config.json cannot leak into the tests.
  const inherited = { ...process.env };
  delete inherited.EDGEQ_CONFIG;
  const env: NodeJS.ProcessEnv = {
    ...inherited,
    HOME: HOME,
    EDGEQ_URL: inject("edgeqUrl"),
    EDGEQ_TOKEN: inject("edgeqToken"),
    ...options.env,
  };
  for (const name of options.unset ?? []) delete env[name];
  const child = spawn(process.execPath, [BIN, ...args], {
    env,
    stdio: ["pipe", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  const waiters: Array<() => void> = [];
  child.stdout.on("data", (d: Buffer) => {
    stdout += d.toString();
    for (const w of waiters) w();
  });
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  child.stdin.end(options.input ?? "");
  const done = new Promise<Run>((resolve) =>
    child.on("close", (code, signal) => resolve({ code, signal, stdout, stderr })),
  );
  return {
    output: () => ({ stdout, stderr }),
    kill: (signal) => child.kill(signal),
    done,
    waitFor(text, timeoutMs = 20_000) {
      const seen = () => (typeof text === "string" ? stdout.includes(text) : text.test(stdout));
      return new Promise<void>((resolve, reject) => {
        if (seen()) return resolve();
        const timer = setTimeout(
          () => reject(new Error(`timed out waiting for ${String(text)}; stdout: ${stdout}; stderr: ${stderr}`)),
          timeoutMs,
        );
        waiters.push(() => {
          if (seen()) {
            clearTimeout(timer);
            resolve();
          }
        });
        void done.then(() => {
          clearTimeout(timer);
          if (seen()) resolve();
          else reject(new Error(`edgeq exited before printing ${String(text)}; stdout: ${stdout}; stderr: ${stderr}`));
        });
      });
    },
  };
}

/** Runs `edgeq ...args` to the end. */
export function edgeq(
  args: string[],
  options: { input?: string; env?: Record<string, string>; unset?: string[] } = {},
): Promise<Run> {
  return start(args, options).done;
}

/** Parses JSON lines. */
export function jsonLines(text: string): unknown[] {
  return text
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line) as unknown);
}

/** Enqueues tasks through the API; returns their ids. */
export async function enqueueTasks(
  queue: string,
  tasks: Array<{ payload?: unknown; max_attempts?: number; group?: string; dedupe_key?: string }>,
): Promise<string[]> {
  const body = await expectOk(await api().v1.queues[":queue"].tasks.$post({ param: { queue }, json: { tasks } }));
  return body.tasks.map((t) => t.id);
}

/** Leases one task of `queue` (it must have one due). */
export async function leaseOne(queue: string): Promise<{ id: string; lease_token: string }> {
  const { tasks } = await expectOk(await api().v1.queues[":queue"].lease.$post({ param: { queue }, json: { max: 1 } }));
  const [task] = tasks;
  if (!task) throw new Error(`nothing to lease in ${queue}`);
  return task;
}

/** Leases the next task of `queue` and fails it permanently: it goes dead with `message` as its error. */
export async function killOne(queue: string, message = "boom"): Promise<string> {
  const task = await leaseOne(queue);
  await expectOk(
    await api().v1.tasks[":id"].fail.$post({
      param: { id: task.id },
      json: { lease_token: task.lease_token, error: message, retryable: false },
    }),
  );
  return task.id;
}

/** Leases the next task of `queue` and completes it. */
export async function completeOne(queue: string, result: unknown = { ok: true }): Promise<string> {
  const task = await leaseOne(queue);
  await expectOk(
    await api().v1.tasks[":id"].complete.$post({
      param: { id: task.id },
      json: { lease_token: task.lease_token, result },
    }),
  );
  return task.id;
}

/** The queue's counts per state. */
export async function counts(queue: string) {
  const stats = await expectOk(await api().v1.queues[":queue"].stats.$get({ param: { queue }, query: {} }));
  return stats.counts;
}

/** One task through the API. */
export async function getTask(id: string) {
  return expectOk(await api().v1.tasks[":id"].$get({ param: { id } }));
}
