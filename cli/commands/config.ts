import type { z } from "zod";
import type { QueueConfigPatch } from "../../src/contracts/api";
import { expectOk } from "../client";
import { positionals, queueArg, usageError } from "../flags";
import type { Command } from "../command";
import { keyValues, writeJson } from "../output";

type Patch = z.input<typeof QueueConfigPatch>;
type Config = Required<Patch>;

const NUMBER_KEYS = [
  "max_attempts",
  "visibility_timeout_s",
  "backoff_base_s",
  "backoff_cap_s",
  "retention_s",
  "concurrency",
] as const;
/** Whole seconds, or `null` for none. */
const NULLABLE_NUMBER_KEYS = ["max_run_s"] as const;
const KEYS = [...NUMBER_KEYS, "mode", "processor", "rate_limit", ...NULLABLE_NUMBER_KEYS] as const;

/** "10/second", or "none". */
function formatRateLimit(limit: Config["rate_limit"]): string {
  return limit ? `${limit.count}/${limit.per}` : "null";
}

/** The configuration as aligned `key  value` lines, in the API's key order. */
function render(config: Config): string {
  return keyValues(
    KEYS.map((key) => {
      const value = config[key];
      return [key, key === "rate_limit" ? formatRateLimit(config.rate_limit) : String(value)];
    }),
  );
}

/**
 * Parses `key=value` arguments into a config patch: numbers for the numeric keys (max_run_s also `null`),
 * `push|pull` for mode,
 * a processor name or `null`, `COUNT/second|COUNT/minute` or `null` for rate_limit. Unknown keys and
 * malformed values throw before any request; ranges are the API's to check.
 *
 * @example
 * parseAssignments(["concurrency=4", "rate_limit=10/second"]); // { concurrency: 4, rate_limit: { count: 10, per: "second" } }
 */
export function parseAssignments(assignments: string[]): Patch {
  const patch: Record<string, unknown> = {};
  for (const assignment of assignments) {
    const eq = assignment.indexOf("=");
    if (eq <= 0) throw usageError(configSet, `expected key=value, got "${assignment}"`);
    const key = assignment.slice(0, eq).trim();
    const value = assignment.slice(eq + 1).trim();
    if (!(KEYS as readonly string[]).includes(key)) {
      throw usageError(configSet, `unknown key "${key}" (keys: ${KEYS.join(", ")})`);
    }
    if ((NULLABLE_NUMBER_KEYS as readonly string[]).includes(key)) {
      if (value !== "null" && !/^\d+$/.test(value)) {
        throw usageError(configSet, `${key}: expected a whole number of seconds or null, got "${value}"`);
      }
      patch[key] = value === "null" ? null : Number(value);
    } else if ((NUMBER_KEYS as readonly string[]).includes(key)) {
      if (!/^\d+$/.test(value)) throw usageError(configSet, `${key}: expected a whole number, got "${value}"`);
      patch[key] = Number(value);
    } else if (key === "mode") {
      if (value !== "push" && value !== "pull") throw usageError(configSet, `mode: push or pull, got "${value}"`);
      patch.mode = value;
    } else if (key === "processor") {
      if (value === "") throw usageError(configSet, "processor: a processor name, or null");
      patch.processor = value === "null" ? null : value;
    } else {
      const match = /^(\d+)\/(second|minute)$/.exec(value);
      if (value !== "null" && !match) {
        throw usageError(configSet, `rate_limit: COUNT/second, COUNT/minute or null, got "${value}"`);
      }
      patch.rate_limit = match ? { count: Number(match[1]), per: match[2] } : null;
    }
  }
  return patch as Patch;
}

/** `edgeq config get <queue>`: the queue's effective configuration (stored values over defaults). */
export const configGet: Command = {
  summary: "Show a queue's configuration",
  usage: "edgeq config get <queue> [--json]",
  options: { json: { type: "boolean", description: "print the configuration as JSON" } },
  async run(ctx) {
    const [queueRaw] = positionals(ctx, configGet, ["queue"]);
    const queue = queueArg(configGet, queueRaw);
    const config = await expectOk(await ctx.client.v1.queues[":queue"].config.$get({ param: { queue } }));
    if (ctx.flags.json) return writeJson(ctx.stdout, config);
    ctx.stdout.write(render(config));
  },
};

/**
 * `edgeq config set <queue> key=value...`: changes some of a queue's configuration and prints the result.
 * Keys: max_attempts, visibility_timeout_s, backoff_base_s, backoff_cap_s, retention_s, concurrency
 * (numbers); mode (push|pull); processor (a name, or null); rate_limit (COUNT/second, COUNT/minute, null).
 */
export const configSet: Command = {
  summary: "Change a queue's configuration (key=value ...)",
  usage: `edgeq config set <queue> key=value... [--json]   (keys: ${KEYS.join(", ")})`,
  options: { json: { type: "boolean", description: "print the resulting configuration as JSON" } },
  async run(ctx) {
    const [queueRaw, ...assignments] = ctx.args;
    const queue = queueArg(configSet, queueRaw);
    if (assignments.length === 0) throw usageError(configSet, "missing key=value");
    const patch = parseAssignments(assignments);
    const config = await expectOk(await ctx.client.v1.queues[":queue"].config.$put({ param: { queue }, json: patch }));
    if (ctx.flags.json) return writeJson(ctx.stdout, config);
    ctx.stdout.write(render(config));
  },
};
