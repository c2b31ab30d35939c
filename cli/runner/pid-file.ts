import { readFileSync, unlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CliError, EXIT } from "../errors";

/**
 * Where a worker of `queue` records its pid unless told otherwise (--pid-file): the OS temporary
 * directory (TMPDIR), one file per queue. Queue names are file-name safe (letters, digits, . _ -).
 *
 * @example
 * defaultPidFile("emails"); // "/tmp/edgeq-worker-emails.pid"
 */
export function defaultPidFile(queue: string): string {
  return join(tmpdir(), `edgeq-worker-${queue}.pid`);
}

/** The pid recorded in `path`, or null when there is no such file (or it holds no pid). */
export function readPid(path: string): number | null {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw new CliError(`pid file ${path}: ${(error as Error).message}`, EXIT.usage);
  }
  const pid = Number(text.trim());
  return Number.isInteger(pid) && pid > 0 ? pid : null;
}

/** Whether a process `pid` exists (EPERM: it does, but belongs to someone else). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** Whether `pid` has exited: gone, or a zombie its parent has not reaped yet (Linux /proc tells). */
export function hasExited(pid: number): boolean {
  if (!isAlive(pid)) return true;
  try {
    // /proc/<pid>/stat: "<pid> (<command>) <state> ...", the command possibly containing spaces.
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z");
  } catch {
    return false;
  }
}

/**
 * Whether `pid` is (as far as this host can tell) an edgeq process, so a stale pid file whose pid was
 * reused by another program is not taken for a worker. Where /proc is unavailable, any live pid counts.
 */
export function isEdgeqProcess(pid: number): boolean {
  if (!isAlive(pid)) return false;
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("edgeq");
  } catch {
    return true;
  }
}

/**
 * Writes this process's pid to `path`. Refuses when the file names a live edgeq worker (two workers on
 * one pid file would make `edgeq worker stop` stop only one); a stale file is replaced.
 */
export function claimPidFile(path: string): void {
  for (let tries = 0; tries < 2; tries++) {
    try {
      writeFileSync(path, `${process.pid}\n`, { flag: "wx" });
      return;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") {
        throw new CliError(`pid file ${path}: ${(error as Error).message}`, EXIT.usage);
      }
    }
    const pid = readPid(path);
    if (pid !== null && pid !== process.pid && isEdgeqProcess(pid)) {
      throw new CliError(
        `a worker is already running with pid file ${path} (pid ${pid}); stop it (edgeq worker stop) or give another --pid-file`,
        EXIT.usage,
      );
    }
    try {
      unlinkSync(path);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT")
        throw new CliError(`pid file ${path}: ${(error as Error).message}`, EXIT.usage);
    }
  }
  throw new CliError(`pid file ${path}: could not claim it (another worker starting at the same time?)`, EXIT.usage);
}

/** Removes `path` if it still names this process. */
export function releasePidFile(path: string): void {
  try {
    if (readPid(path) === process.pid) unlinkSync(path);
  } catch {
    // already gone, or unreadable: nothing of ours to remove
  }
}
