import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { inject } from "vitest";
import { until } from "../support/until";

/** Helpers for the worker tests: the API over fetch, the CLI as a real process, bounded polling. */

// vitest runs from the repository root (as test/cli/server.ts assumes too).
const REPO = process.cwd();
const BIN = join(REPO, "bin", "edgeq.mjs");

export const edgeqUrl = () => inject("edgeqUrl");

/** A queue name no other test uses. */
export function uniqueQueue(prefix: string): string {
  return `${prefix}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
}

/** A temporary directory, removed by the returned cleanup. */
export function tempDir(): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), "edgeq-worker-test-"));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Calls the API; returns the parsed JSON body, throwing on any non-2xx answer. */
export async function api<T = unknown>(method: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(`${edgeqUrl()}${path}`, {
    method,
    headers: { Authorization: `Bearer ${inject("edgeqToken")}`, "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return JSON.parse(text) as T;
}

export interface TaskView {
  id: string;
  state: string;
  type: string;
  attempts: number;
  result: unknown;
  errors: Array<{ attempt: number; message: string; kind: string }>;
  run_at: string;
  lease_expires_at: string | null;
  progress: number | null;
  checkpoint: unknown;
}

export const configureQueue = (queue: string, patch: Record<string, unknown>) =>
  api("PUT", `/v1/queues/${queue}/config`, patch);

/** Enqueues tasks; returns their ids in order. */
export async function enqueue(queue: string, tasks: Array<Record<string, unknown>>): Promise<string[]> {
  const out = await api<{ tasks: Array<{ id: string }> }>("POST", `/v1/queues/${queue}/tasks`, { tasks });
  return out.tasks.map((t) => t.id);
}

export const getTask = (id: string) => api<TaskView>("GET", `/v1/tasks/${id}`);

/** Between two probes here: a probe is often an API call to wrangler dev or a look at another process, so
 * ten a second — quick next to a process's start-up, light on 2 shared cores. */
const PROBE_INTERVAL_MS = 100;

/** The default bound: a CLI process starting and calling the API takes seconds on a loaded machine; twenty
 * is a hung one. */
const WAIT_TIMEOUT_MS = 20_000;

/** Polls `probe` until it returns something truthy; fails with `what` after `timeoutMs` (test/support/until.ts). */
export function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined | null | false> | T | undefined | null | false,
  timeoutMs = WAIT_TIMEOUT_MS,
): Promise<T> {
  return until(what, probe, { timeoutMs, intervalMs: PROBE_INTERVAL_MS });
}

/** A running `edgeq` process. */
export interface CliProcess {
  child: ChildProcess;
  readonly stdout: string;
  readonly stderr: string;
  /** Resolves with the exit code (null when killed by a signal). */
  exited: Promise<number | null>;
}

const running = new Set<ChildProcess>();

/** Starts `node bin/edgeq.mjs <args>` against the test server. */
export function startCli(args: string[], env: Record<string, string> = {}): CliProcess {
  const child = spawn(process.execPath, [BIN, ...args], {
    cwd: REPO,
    env: { ...process.env, EDGEQ_URL: edgeqUrl(), EDGEQ_TOKEN: inject("edgeqToken"), ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  running.add(child);
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) =>
    child.on("close", (code) => {
      running.delete(child);
      resolve(code);
    }),
  );
  return {
    child,
    get stdout() {
      return stdout;
    },
    get stderr() {
      return stderr;
    },
    exited,
  };
}

/** Runs the CLI to its end (bounded), returning its exit code and output. */
export async function runCli(
  args: string[],
  env: Record<string, string> = {},
  timeoutMs = 30_000,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const cli = startCli(args, env);
  const code = await exitWithin(cli, timeoutMs);
  return { code, stdout: cli.stdout, stderr: cli.stderr };
}

/** The process's exit code, or a failure (and SIGKILL) if it is still running after `timeoutMs`. */
export async function exitWithin(cli: CliProcess, timeoutMs: number): Promise<number | null> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<"timeout">((r) => (timer = setTimeout(() => r("timeout"), timeoutMs)));
  const result = await Promise.race([cli.exited, timeout]);
  clearTimeout(timer);
  if (result === "timeout") {
    cli.child.kill("SIGKILL");
    throw new Error(`edgeq did not exit within ${timeoutMs} ms\nstdout: ${cli.stdout}\nstderr: ${cli.stderr}`);
  }
  return result;
}

/** SIGKILLs every CLI process a test left running (for afterEach). */
export function killLeftovers(): void {
  for (const child of running) child.kill("SIGKILL");
  running.clear();
}

/** Whether a process exists and has not exited (a zombie waiting for its parent to reap it counts as exited). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return !stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z");
  } catch {
    return true; // no /proc: trust kill(0)
  }
}

/** The parent of process `pid` (from /proc, else `ps`). */
export function parentOf(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
  } catch {
    return Number(execFileSync("ps", ["-o", "ppid=", "-p", String(pid)], { encoding: "utf8" }).trim());
  }
}

/** Waits (bounded) until process `pid` has exited. */
export const exited = (pid: number, what: string) => waitFor(what, () => !alive(pid), 5_000);
