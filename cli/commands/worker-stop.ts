import { CliError, EXIT } from "../errors";
import type { Command } from "../command";
import { durationIn, positionals, queueArg, stringFlag, usageError } from "../flags";
import { defaultPidFile, hasExited, isEdgeqProcess, readPid } from "../runner/pid-file";

const USAGE = "edgeq worker stop [<queue>] [--pid-file PATH] [--timeout S]";

/** Default wait for the worker to exit: its default --grace (30 s), plus time to hand back what is left
 * and for the handed-back tasks' releases to be answered. */
const DEFAULT_TIMEOUT_S = 60;

/** Longest --timeout: a day; anything longer is a unit mistake (a stuck worker needs a second stop). */
const MAX_TIMEOUT_S = 86_400;

/** How often to look whether the worker is gone: quick enough to return promptly, cheap (one syscall). */
const POLL_MS = 100;

/**
 * `edgeq worker stop [<queue>]`: sends SIGTERM to the worker recorded in the pid file (the queue's default
 * one, or --pid-file) and waits up to --timeout seconds for it to exit, saying so on stderr. The worker
 * finishes what it runs within its --grace, hands back the rest and exits (an idle worker at once);
 * running `stop` again meanwhile hands back at once.
 *
 * @example
 * edgeq worker stop thumbnails
 * edgeq worker stop --pid-file /run/edgeq/thumbs.pid --timeout 120
 */
export const workerStop: Command = {
  summary: "Stop a running worker (SIGTERM via its pid file) and wait for it to exit",
  usage: USAGE,
  options: {
    "pid-file": {
      type: "string",
      value: "PATH",
      description: "the worker's pid file",
      default: "$TMPDIR/edgeq-worker-<queue>.pid",
    },
    timeout: {
      type: "string",
      value: "S",
      description: "how long to wait for the worker to exit",
      default: `${DEFAULT_TIMEOUT_S}s`,
    },
  },
  async run(ctx) {
    const [queue] = positionals(ctx, workerStop, [], ["queue"]);
    const pidFile =
      stringFlag(ctx, "pid-file") ?? (queue === undefined ? undefined : defaultPidFile(queueArg(workerStop, queue)));
    if (pidFile === undefined) throw usageError(workerStop, "give <queue> or --pid-file");
    const timeoutS = durationIn(ctx, workerStop, "timeout", { min: 1, max: MAX_TIMEOUT_S }) ?? DEFAULT_TIMEOUT_S;

    const pid = readPid(pidFile);
    if (pid === null) throw new CliError(`no worker is running (no pid file ${pidFile})`, EXIT.api);
    if (hasExited(pid))
      throw new CliError(`no worker is running (stale pid file ${pidFile}: pid ${pid} has exited)`, EXIT.api);
    if (!isEdgeqProcess(pid)) {
      throw new CliError(`no worker is running (pid file ${pidFile} names pid ${pid}, not an edgeq process)`, EXIT.api);
    }
    try {
      process.kill(pid, "SIGTERM");
    } catch (error) {
      throw new CliError(`cannot signal worker ${pid}: ${(error as Error).message}`, EXIT.api);
    }
    ctx.stderr.write(
      `edgeq: sent SIGTERM to worker ${pid}; waiting up to ${timeoutS}s while it finishes or hands back its tasks and exits\n`,
    );
    const deadline = Date.now() + timeoutS * 1000;
    while (!hasExited(pid)) {
      if (Date.now() > deadline) {
        throw new CliError(
          `worker ${pid} is still running after ${timeoutS}s (its --grace may be longer; run stop again to hand back at once)`,
          EXIT.api,
        );
      }
      await new Promise((r) => setTimeout(r, POLL_MS));
    }
    ctx.stdout.write(`stopped worker ${pid}\n`);
    return EXIT.ok;
  },
};
