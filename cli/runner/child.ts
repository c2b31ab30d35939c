import { spawn, type ChildProcess } from "node:child_process";
import { TailBuffer } from "./tail-buffer";

/** After SIGTERM, a child gets this long to clean up before SIGKILL: enough to flush and exit, short
 * enough that a worker handing back on shutdown is not held up by a script that ignores SIGTERM. */
const KILL_AFTER_MS = 3_000;

/** After the child exits, how long its output pipes may stay open: a background process it left behind
 * could hold them forever, and the task should not wait for that. */
const STDIO_DRAIN_MS = 2_000;

/** What to run. */
export interface ChildSpec {
  command: string;
  args: string[];
  env?: NodeJS.ProcessEnv;
  /** Written to the child's stdin, which is then closed. */
  stdin?: string;
  /** Aborting kills the child (its whole process group). */
  signal: AbortSignal;
  /** Kills the child after this long (absent: no limit). */
  timeoutMs?: number;
  /** Bytes of stdout / stderr kept (the tail). */
  stdoutLimit: number;
  stderrLimit: number;
}

/** How the child ended. */
export interface ChildExit {
  /** Exit code, or null when killed by a signal or not started. */
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: TailBuffer;
  stderr: TailBuffer;
  timedOut: boolean;
  /** Set when the process could not be started (e.g. ENOENT). */
  spawnError?: Error;
}

/** Signals the child's process group (it leads one: spawned detached), or the child alone as a fallback. */
function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.exitCode !== null || child.signalCode !== null) return;
  try {
    if (child.pid !== undefined) process.kill(-child.pid, signal);
  } catch {
    child.kill(signal);
  }
}

/**
 * Runs a process to its end, capturing the tail of its output. The child leads its own process group, so
 * a Ctrl-C meant for the worker does not reach it (the worker decides when tasks stop), and stopping it
 * (abort or timeout) reaches everything it started: SIGTERM to the group, SIGKILL if still alive later.
 * Never rejects.
 *
 * @example
 * const exit = await runChild({ command: "sh", args: ["-c", "echo hi"], signal, stdoutLimit: 1024, stderrLimit: 1024 });
 */
export function runChild(spec: ChildSpec): Promise<ChildExit> {
  const stdout = new TailBuffer(spec.stdoutLimit);
  const stderr = new TailBuffer(spec.stderrLimit);
  return new Promise((resolve) => {
    let timedOut = false;
    let settled = false;
    const timers: NodeJS.Timeout[] = [];
    let child: ChildProcess;
    const finish = (exit: Omit<ChildExit, "stdout" | "stderr" | "timedOut">) => {
      if (settled) return;
      settled = true;
      timers.forEach(clearTimeout);
      spec.signal.removeEventListener("abort", onAbort);
      child?.stdout?.destroy();
      child?.stderr?.destroy();
      resolve({ ...exit, stdout, stderr, timedOut });
    };
    const terminate = () => {
      killGroup(child, "SIGTERM");
      timers.push(setTimeout(() => killGroup(child, "SIGKILL"), KILL_AFTER_MS));
    };
    const onAbort = () => terminate();

    try {
      child = spawn(spec.command, spec.args, { env: spec.env, stdio: ["pipe", "pipe", "pipe"], detached: true });
    } catch (error) {
      finish({ code: null, signal: null, spawnError: error as Error });
      return;
    }
    child.stdout!.on("data", (chunk: Buffer) => stdout.push(chunk));
    child.stderr!.on("data", (chunk: Buffer) => stderr.push(chunk));
    // A child that does not read its stdin closes the pipe early (EPIPE): not an error of the task.
    child.stdin!.on("error", () => {});
    child.stdin!.end(spec.stdin ?? "");
    child.on("error", (error) => finish({ code: null, signal: null, spawnError: error }));
    child.on("exit", (code, signal) => {
      timers.push(setTimeout(() => finish({ code, signal }), STDIO_DRAIN_MS));
    });
    child.on("close", (code, signal) => finish({ code, signal }));

    if (spec.signal.aborted) terminate();
    else spec.signal.addEventListener("abort", onAbort, { once: true });
    if (spec.timeoutMs !== undefined) {
      timers.push(
        setTimeout(() => {
          timedOut = true;
          terminate();
        }, spec.timeoutMs),
      );
    }
  });
}
