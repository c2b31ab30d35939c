import { QUEUE_NAME_PATTERN, QUEUE_NAME_RULE } from "../src/contracts/limits";
import { CliError, EXIT } from "./errors";
import type { Command, CommandContext } from "./command";

/**
 * Checks of the command line shared by the commands. Every failure is a usage error (exit code 2)
 * carrying the command's usage line, raised before any request is sent.
 */

/** A usage error for `command`: the message, then its usage line. */
export function usageError(command: Pick<Command, "usage">, message: string): CliError {
  return new CliError(`${message}\nusage: ${command.usage}`, EXIT.usage);
}

/**
 * The positional arguments, checked against how many the command takes.
 *
 * @example
 * const [queue, payload] = positionals(ctx, enqueue, ["queue"], ["payload-json"]);
 */
export function positionals(
  ctx: Pick<CommandContext, "args">,
  command: Pick<Command, "usage">,
  required: string[],
  optional: string[] = [],
): Array<string | undefined> {
  if (ctx.args.length < required.length) {
    throw usageError(command, `missing <${required[ctx.args.length]}>`);
  }
  if (ctx.args.length > required.length + optional.length) {
    throw usageError(command, `unexpected argument "${ctx.args[required.length + optional.length]}"`);
  }
  return [...required, ...optional].map((_, i) => ctx.args[i]);
}

/** A string flag's value (undefined when not given). */
export function stringFlag(ctx: Pick<CommandContext, "flags">, name: string): string | undefined {
  const value = ctx.flags[name];
  return typeof value === "string" ? value : undefined;
}

/** Every value of a flag given with `multiple: true` (empty when not given). */
export function listFlag(ctx: Pick<CommandContext, "flags">, name: string): string[] {
  const value = ctx.flags[name];
  return Array.isArray(value) ? value : typeof value === "string" ? [value] : [];
}

/**
 * An integer flag within [min, max], or undefined when not given.
 *
 * @example
 * const limit = intFlag(ctx, list, "limit", { min: 1 }) ?? 50;
 */
export function intFlag(
  ctx: Pick<CommandContext, "flags">,
  command: Pick<Command, "usage">,
  name: string,
  range: { min?: number; max?: number } = {},
): number | undefined {
  const raw = stringFlag(ctx, name);
  if (raw === undefined) return undefined;
  const n = Number(raw);
  const { min = -Infinity, max = Infinity } = range;
  if (!/^-?\d+$/.test(raw.trim()) || !Number.isSafeInteger(n) || n < min || n > max) {
    const bounds = min > -Infinity && max < Infinity ? ` from ${min} to ${max}` : min > -Infinity ? ` ≥ ${min}` : "";
    throw usageError(command, `--${name}: expected an integer${bounds}, got "${raw}"`);
  }
  return n;
}

const SECONDS_PER_UNIT: Record<string, number> = { "": 1, s: 1, m: 60, h: 3600, d: 86_400 };

/**
 * A duration in seconds: a number of seconds ("90", "1.5") or one with a unit ("90s", "15m", "2h", "7d").
 *
 * @example
 * parseDuration("2h"); // 7200
 */
export function parseDuration(raw: string): number | undefined {
  const match = /^(\d+(?:\.\d+)?)\s*([smhd]?)$/.exec(raw.trim());
  if (!match) return undefined;
  return Number(match[1]) * (SECONDS_PER_UNIT[match[2] ?? ""] ?? 1);
}

/** A duration flag (see parseDuration) in seconds, or undefined when not given. */
export function durationFlag(
  ctx: Pick<CommandContext, "flags">,
  command: Pick<Command, "usage">,
  name: string,
): number | undefined {
  const raw = stringFlag(ctx, name);
  if (raw === undefined) return undefined;
  const seconds = parseDuration(raw);
  if (seconds === undefined) {
    throw usageError(command, `--${name}: expected seconds, or a number with s, m, h or d (e.g. 90, 15m, 7d)`);
  }
  return seconds;
}

/**
 * A duration flag (see parseDuration) within [min, max] seconds, whole seconds when `whole`; undefined
 * when not given.
 *
 * @example
 * const graceS = durationIn(ctx, worker, "grace", { min: 0, max: 3600 }) ?? 30;
 */
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

/** An ISO 8601 time flag with a zone (Z or ±hh:mm), normalised to UTC; undefined when not given. */
export function isoFlag(
  ctx: Pick<CommandContext, "flags">,
  command: Pick<Command, "usage">,
  name: string,
): string | undefined {
  const raw = stringFlag(ctx, name);
  if (raw === undefined) return undefined;
  const ms = Date.parse(raw);
  if (!/^\d{4}-\d{2}-\d{2}T.*(Z|[+-]\d{2}:\d{2})$/i.test(raw) || Number.isNaN(ms)) {
    throw usageError(command, `--${name}: expected an ISO 8601 time with a zone, e.g. 2026-01-01T09:00:00Z`);
  }
  return new Date(ms).toISOString();
}

/** Task ids are ULIDs: 26 Crockford base32 characters (the API's TaskId). */
const ULID = /^[0-9A-HJKMNP-TV-Z]{26}$/i;

/** Whether `value` is shaped like a task id. */
export function isTaskId(value: string): boolean {
  return ULID.test(value);
}

/** A task id argument, upper-cased; anything else is a usage error. */
export function taskIdArg(command: Pick<Command, "usage">, value: string | undefined): string {
  if (!value || !isTaskId(value)) {
    throw usageError(command, `not a task id: "${value ?? ""}" (a ULID: 26 letters and digits)`);
  }
  return value.toUpperCase();
}

/** A queue argument, checked against the API's naming rule: a typo fails before any request is sent. */
export function queueArg(command: Pick<Command, "usage">, value: string | undefined): string {
  if (!value || !QUEUE_NAME_PATTERN.test(value)) {
    throw usageError(command, `not a queue name: "${value ?? ""}" (${QUEUE_NAME_RULE})`);
  }
  return value;
}
