import { hostname } from "node:os";
import { MAX_BATCH, MAX_VISIBILITY_TIMEOUT_S, MAX_WAIT_S, MIN_VISIBILITY_TIMEOUT_S } from "../../src/engine/limits";
import { durationFlag, intFlag, positionals, stringFlag, usageError } from "../flags";
import type { Command, CommandContext } from "../main";
import { defaultPidFile } from "./pid-file";
import type { WorkerOptions } from "./runner";

/** Most tasks one worker process runs at once: each holds a child process, pipes and a heartbeat timer;
 * past a few hundred, more processes (or hosts) serve a queue better than one. */
const MAX_CONCURRENCY = 500;

/** Longest --grace: an hour covers any sane shutdown; longer is almost surely a unit mistake. */
const MAX_GRACE_S = 3_600;

/** The API's queue names (src/http/schemas.ts QueueName); checked here so a typo fails before leasing. */
const QUEUE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/** The API's longest lease holder name. */
const MAX_HOLDER_CHARS = 128;

/** How tasks are run: a shell command, or a built-in engine. */
export type HandlerChoice = { kind: "exec"; command: string } | { kind: "engine"; engine: "tts" };

/** Everything `edgeq worker` was asked to do. */
export interface WorkerSettings {
  options: WorkerOptions;
  handler: HandlerChoice;
  pidFile: string;
}

/** The `edgeq worker` flags (node:util parseArgs). */
export const WORKER_FLAGS = {
  concurrency: { type: "string" },
  batch: { type: "string" },
  visibility: { type: "string" },
  wait: { type: "string" },
  holder: { type: "string" },
  exec: { type: "string" },
  engine: { type: "string" },
  grace: { type: "string" },
  "pid-file": { type: "string" },
  once: { type: "boolean" },
} as const;

/** A duration flag (seconds, or with a unit: 90, 2m) within [min, max], whole seconds when `whole`. */
export function durationIn(
  ctx: Pick<CommandContext, "flags">,
  command: Pick<Command, "usage">,
  name: string,
  range: { min: number; max: number; whole?: boolean },
): number | undefined {
  const seconds = durationFlag(ctx, command, name);
  if (seconds === undefined) return undefined;
  if (seconds < range.min || seconds > range.max || (range.whole && !Number.isInteger(seconds))) {
    const kind = range.whole ? "whole seconds" : "seconds";
    throw usageError(
      command,
      `--${name}: expected ${kind} from ${range.min} to ${range.max}, got "${String(ctx.flags[name])}"`,
    );
  }
  return seconds;
}

/** The queue argument, checked against the API's naming rule before anything is sent. */
export function queueName(command: Pick<Command, "usage">, value: string): string {
  if (!QUEUE_NAME.test(value)) {
    throw usageError(
      command,
      `queue "${value}": 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit`,
    );
  }
  return value;
}

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
  const queue = queueName(command, positionals(ctx, command, ["queue"])[0]!);
  const concurrency = intFlag(ctx, command, "concurrency", { min: 1, max: MAX_CONCURRENCY }) ?? 4;
  const batch = intFlag(ctx, command, "batch", { min: 1, max: MAX_BATCH }) ?? Math.min(concurrency, MAX_BATCH);
  const visibilityS =
    durationIn(ctx, command, "visibility", {
      min: MIN_VISIBILITY_TIMEOUT_S,
      max: MAX_VISIBILITY_TIMEOUT_S,
      whole: true,
    }) ?? 60;
  const waitS = durationIn(ctx, command, "wait", { min: 0, max: MAX_WAIT_S }) ?? MAX_WAIT_S;
  const graceS = durationIn(ctx, command, "grace", { min: 0, max: MAX_GRACE_S }) ?? 30;
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
    options: { queue, concurrency, batch, visibilityS, waitS, holder, graceS, once: flags.once === true },
    handler,
    pidFile,
  };
}
