import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable, Writable } from "node:stream";
import { finished } from "node:stream/promises";
import { inject } from "vitest";
import { createClient, expectOk } from "../../cli/client";
import { main } from "../../cli/main";

/**
 * Helpers for the command tests: run `edgeq` against the test server (a one-shot command in this process,
 * a long-running one as the built binary), and drive the API.
 */

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

/** What a run of `edgeq` is given: its stdin, and changes to its environment. */
export interface RunOptions {
  input?: string;
  env?: Record<string, string>;
  unset?: string[];
}

/**
 * The environment of a run: this process's, with EDGEQ_URL / EDGEQ_TOKEN for the test server, then `env`,
 * less `unset`. A fresh HOME and no EDGEQ_CONFIG: a developer's ~/.config/edgeq/config.json cannot leak
 * into the tests.
 */
function runEnv(options: RunOptions): NodeJS.ProcessEnv {
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
  return env;
}

/**
 * Starts `node bin/edgeq.mjs ...args` with EDGEQ_URL / EDGEQ_TOKEN for the test server (override with
 * `env`), writing `input` to its stdin.
 */
export function start(args: string[], options: RunOptions = {}): Running {
  const child = spawn(process.execPath, [BIN, ...args], {
    env: runEnv(options),
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

/** A stream that appends what is written to it to a string. */
function collector(): { stream: Writable; text: () => string } {
  let text = "";
  const stream = new Writable({
    write(chunk: Buffer | string, _encoding, callback) {
      text += chunk.toString();
      callback();
    },
  });
  return { stream, text: () => text };
}

/**
 * Runs `edgeq ...args` to the end: in this process through the CLI's `main`, with the environment and stdin
 * the binary would get and its output collected (a start of the binary is ~0.15 s of CPU; the cli tests
 * made ~150 such runs). `spawn: true` runs the built binary (bin/edgeq.mjs → dist/edgeq.mjs) instead, for
 * the tests of the bundle itself. A command that runs until stopped (worker, watch) goes through `start`.
 */
export async function edgeq(args: string[], options: RunOptions & { spawn?: boolean } = {}): Promise<Run> {
  if (options.spawn) return start(args, options).done;
  const stdout = collector();
  const stderr = collector();
  // The binary's streams are a pipe and no terminal: no isTTY, no columns, as on these streams.
  const io = {
    stdout: stdout.stream as NodeJS.WriteStream,
    stderr: stderr.stream as NodeJS.WriteStream,
    stdin: Readable.from([options.input ?? ""]) as NodeJS.ReadStream,
  };
  const code = await main(args, io, runEnv(options));
  stdout.stream.end();
  stderr.stream.end();
  await Promise.all([finished(stdout.stream), finished(stderr.stream)]);
  return { code, signal: null, stdout: stdout.text(), stderr: stderr.text() };
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
