import { hostname } from "node:os";
import {
  MAX_BATCH,
  MAX_HOLDER_CHARS,
  MAX_RUN_S_LIMIT,
  MAX_VISIBILITY_TIMEOUT_S,
  MAX_WAIT_S,
  MIN_VISIBILITY_TIMEOUT_S,
} from "../../src/contracts/limits";
import { durationIn, intFlag, positionals, queueArg, stringFlag, usageError } from "../flags";
import type { Command, CommandContext, FlagSpecs } from "../command";
import { defaultPidFile } from "./pid-file";
import type { RunnerOptions } from "../../src/node/runner";

/** Most tasks one worker process runs at once: each holds a child process, pipes and a heartbeat timer;
 * past a few hundred, more processes (or hosts) serve a queue better than one. */
const MAX_CONCURRENCY = 500;

/** Tasks at once by default: a few, so one slow task does not idle the worker, without flooding a laptop. */
const DEFAULT_CONCURRENCY = 4;

/** Lease length by default: a heartbeat every 20 s keeps it; a crashed worker's tasks are back in a minute. */
const DEFAULT_VISIBILITY_S = 60;

/** Grace period by default: time for a typical task to finish before it is handed back on shutdown. */
const DEFAULT_GRACE_S = 30;

/** Longest --grace: an hour covers any sane shutdown; longer is almost surely a unit mistake. */
const MAX_GRACE_S = 3_600;

/** How tasks are run: a shell command, or a built-in engine. */
export type HandlerChoice = { kind: "exec"; command: string } | { kind: "engine"; engine: "tts" };

/** Everything `edgeq worker` was asked to do. `options.timeout` is null here when --timeout was not given:
 * the queue's max_run_s then applies (see the worker command). */
export interface WorkerSettings {
  /** The runner's options but the session, which the SDK's Worker chooses (`session` below). */
  options: Omit<RunnerOptions, "session">;
  /** Keep leases with a worker session where Node has a WebSocket (the SDK's default), or not (--no-session). */
  session: boolean;
  handler: HandlerChoice;
  pidFile: string;
  /** Keep running when the process that started the worker is gone (--outlive-parent). */
  outliveParent: boolean;
}

/** The `edgeq worker` flags. */
export const WORKER_FLAGS = {
  exec: {
    type: "string",
    value: "CMD",
    description: "run `sh -c CMD` per task: payload on stdin, exit 0 completes, 75 retries, 78 fails for good",
  },
  engine: { type: "string", value: "NAME", description: "run tasks with a built-in engine instead: tts" },
  concurrency: {
    type: "string",
    value: "N",
    description: `most tasks running at once (1-${MAX_CONCURRENCY})`,
    default: String(DEFAULT_CONCURRENCY),
  },
  batch: {
    type: "string",
    value: "N",
    description: `most tasks per lease request (1-${MAX_BATCH})`,
    default: "the concurrency",
  },
  visibility: {
    type: "string",
    value: "S",
    description: "lease length without a worker session; a beat every S/3 extends a running task's lease by S",
    default: `${DEFAULT_VISIBILITY_S}s`,
  },
  wait: {
    type: "string",
    value: "S",
    description: `long poll: how long a lease request waits for work (0-${MAX_WAIT_S})`,
    default: `${MAX_WAIT_S}s`,
  },
  timeout: {
    type: "string",
    value: "S",
    description: "a task running longer is killed (its whole process group) and failed for a retry",
    default: "the queue's max_run_s, else none",
  },
  holder: {
    type: "string",
    value: "NAME",
    description: "recorded as the tasks' lease_holder",
    default: "<host>:<pid>",
  },
  grace: {
    type: "string",
    value: "S",
    description: "after SIGINT/SIGTERM, how long running tasks may finish before they are handed back",
    default: `${DEFAULT_GRACE_S}s`,
  },
  "pid-file": {
    type: "string",
    value: "PATH",
    description: "written at start, removed at exit (edgeq worker stop reads it)",
    default: "$TMPDIR/edgeq-worker-<queue>.pid",
  },
  once: { type: "boolean", description: "run what is due now (and what that makes due), then exit" },
  "no-session": {
    type: "boolean",
    description:
      "extend leases with a call every S/3 instead of keeping them with a worker session (a WebSocket, on Node 22+)",
  },
  "outlive-parent": {
    type: "boolean",
    description: "keep running when the process that started the worker exits (nohup; default: stop)",
  },
} as const satisfies FlagSpecs;

/**
 * Reads and checks `edgeq worker` arguments: every number in range, exactly one of --exec or --engine.
 *
 * @example
 * parseWorkerSettings(ctx, worker); // { options: { queue: "q", concurrency: 4, ... }, handler: {...}, pidFile }
 */
export function parseWorkerSettings(
  ctx: Pick<CommandContext, "args" | "flags">,
  command: Pick<Command, "usage">,
): WorkerSettings {
  const { flags } = ctx;
  const queue = queueArg(command, positionals(ctx, command, ["queue"])[0]);
  const concurrency = intFlag(ctx, command, "concurrency", { min: 1, max: MAX_CONCURRENCY }) ?? DEFAULT_CONCURRENCY;
  const batch = intFlag(ctx, command, "batch", { min: 1, max: MAX_BATCH }) ?? Math.min(concurrency, MAX_BATCH);
  const visibilityS =
    durationIn(ctx, command, "visibility", {
      min: MIN_VISIBILITY_TIMEOUT_S,
      max: MAX_VISIBILITY_TIMEOUT_S,
      whole: true,
    }) ?? DEFAULT_VISIBILITY_S;
  const waitS = durationIn(ctx, command, "wait", { min: 0, max: MAX_WAIT_S }) ?? MAX_WAIT_S;
  const graceS = durationIn(ctx, command, "grace", { min: 0, max: MAX_GRACE_S }) ?? DEFAULT_GRACE_S;
  // The queue's max_run_s bounds --timeout too: a longer limit is almost surely a unit mistake.
  const timeoutS = durationIn(ctx, command, "timeout", { min: 1, max: MAX_RUN_S_LIMIT });
  const holder = stringFlag(ctx, "holder") ?? `${hostname()}:${process.pid}`.slice(-MAX_HOLDER_CHARS);
  if (holder.length === 0 || holder.length > MAX_HOLDER_CHARS) {
    throw usageError(command, `--holder: 1 to ${MAX_HOLDER_CHARS} characters`);
  }

  let handler: HandlerChoice;
  if (typeof flags.exec === "string" && flags.engine !== undefined) {
    throw usageError(command, "give --exec or --engine, not both");
  } else if (typeof flags.exec === "string") {
    if (flags.exec.trim() === "") throw usageError(command, "--exec: an empty command");
    handler = { kind: "exec", command: flags.exec };
  } else if (flags.engine === "tts") {
    handler = { kind: "engine", engine: "tts" };
  } else if (flags.engine !== undefined) {
    throw usageError(command, `--engine: unknown engine "${String(flags.engine)}" (known: tts)`);
  } else {
    throw usageError(command, 'give --exec "<command>" or --engine tts');
  }

  const pidFile = typeof flags["pid-file"] === "string" ? flags["pid-file"] : defaultPidFile(queue);
  return {
    options: {
      queue,
      concurrency,
      batch,
      visibilityS,
      waitS,
      holder,
      graceS,
      once: flags.once === true,
      timeout: timeoutS === undefined ? null : { seconds: timeoutS, source: "--timeout" },
    },
    handler,
    pidFile,
    session: flags["no-session"] !== true,
    outliveParent: flags["outlive-parent"] === true,
  };
}
