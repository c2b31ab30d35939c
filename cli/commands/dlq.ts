import { MAX_REDRIVE_PER_CALL } from "../../src/contracts/limits";
import { REVIVABLE_STATES } from "../../src/contracts/states";
import { expectOk } from "../client";
import { intFlag, positionals, queueArg, stringFlag, usageError } from "../flags";
import type { Command } from "../command";
import { plural, relativeTime, table, truncate, writeJson, writeJsonLines } from "../output";
import { DEFAULT_LIMIT, describeFilter, fetchTasks, limitFlag } from "./list";

/**
 * `edgeq dlq list <queue>`: the queue's dead tasks (optionally one --group) with their last error, oldest
 * first; --json prints one task per line exactly as the API returns it.
 */
export const dlqList: Command = {
  summary: "List a queue's dead tasks with their last error",
  usage: "edgeq dlq list <queue> [--group G] [--limit N | --all] [--json]",
  options: {
    group: { type: "string", value: "G", description: "only this group's dead tasks" },
    limit: { type: "string", value: "N", description: "show at most N tasks", default: String(DEFAULT_LIMIT) },
    all: { type: "boolean", description: "show every dead task (follows the API's pages)" },
    json: { type: "boolean", description: "one task per line, as the API returns it (JSON lines)" },
  },
  async run(ctx) {
    const [queueRaw] = positionals(ctx, dlqList, ["queue"]);
    const queue = queueArg(dlqList, queueRaw);
    const filter = { state: "dead" as const, group: stringFlag(ctx, "group") };
    const limit = limitFlag(ctx, dlqList);
    const json = ctx.flags.json === true;
    const { tasks, more } = await fetchTasks(ctx.client, queue, filter, limit, (page) => {
      if (json) writeJsonLines(ctx.stdout, page);
    });
    if (!json) {
      if (tasks.length === 0) {
        ctx.stderr.write(`no dead tasks in ${queue}${describeFilter({ group: filter.group })}\n`);
      } else {
        const now = Date.now();
        const width = Math.max(30, (ctx.stdout.columns ?? 120) - 80);
        const rows = tasks.map((t) => {
          const error = t.errors.at(-1);
          return [
            t.id,
            t.type,
            `${t.attempts}/${t.max_attempts}`,
            relativeTime(t.finished_at, now),
            error ? truncate(`${error.kind === "error" ? "" : `[${error.kind}] `}${error.message}`, width) : "-",
          ];
        });
        ctx.stdout.write(table(["ID", "TYPE", "ATTEMPTS", "DIED", "LAST ERROR"], rows));
      }
    }
    if (more) ctx.stderr.write(`(first ${tasks.length}; more with --limit N or --all)\n`);
  },
};

/**
 * `edgeq dlq redrive <queue>`: the queue's dead tasks (or, with --state, its expired or cancelled ones, as the
 * API's redrive takes; optionally one --group, at most --limit) back to pending with attempts reset — an
 * expired task without its start deadline. The API revives at most MAX_REDRIVE_PER_CALL (5,000) per call, so without --limit the CLI calls
 * again until none is left — stopping early if a task it revived is dead again (a push-mode processor
 * failing at once), which would otherwise loop forever.
 */
export const dlqRedrive: Command = {
  summary: "Move a queue's dead (or expired, cancelled) tasks back to pending, attempts reset",
  usage: "edgeq dlq redrive <queue> [--state S] [--group G] [--limit N] [--json]",
  options: {
    state: {
      type: "string",
      value: "S",
      description: `the state to redrive: ${REVIVABLE_STATES.join(", ")}`,
      default: "dead",
    },
    group: { type: "string", value: "G", description: "only this group's tasks" },
    limit: { type: "string", value: "N", description: "redrive at most N tasks", default: "all of them" },
    json: { type: "boolean", description: "print { redriven, ids } as JSON" },
  },
  async run(ctx) {
    const [queueRaw] = positionals(ctx, dlqRedrive, ["queue"]);
    const queue = queueArg(dlqRedrive, queueRaw);
    const state = stringFlag(ctx, "state") ?? "dead";
    if (!(REVIVABLE_STATES as readonly string[]).includes(state)) {
      throw usageError(dlqRedrive, `--state: one of ${REVIVABLE_STATES.join(", ")}`);
    }
    const group = stringFlag(ctx, "group");
    const limit = intFlag(ctx, dlqRedrive, "limit", { min: 1 });
    const ids: string[] = [];
    const seen = new Set<string>();
    for (;;) {
      const remaining = limit === undefined ? undefined : Math.min(MAX_REDRIVE_PER_CALL, limit - ids.length);
      const body = await expectOk(
        await ctx.client.v1.queues[":queue"].redrive.$post({
          param: { queue },
          json: { state: state as (typeof REVIVABLE_STATES)[number], group, limit: remaining },
        }),
      );
      const again = body.ids.some((id) => seen.has(id));
      for (const id of body.ids) seen.add(id);
      ids.push(...body.ids);
      if (body.redriven === 0 || again) break;
      if (limit !== undefined && ids.length >= limit) break;
    }
    const unique = [...new Set(ids)];
    if (ctx.flags.json) return writeJson(ctx.stdout, { redriven: unique.length, ids: unique });
    const scope = group === undefined ? queue : `${queue} group ${group}`;
    ctx.stdout.write(`redrove ${plural(unique.length, `${state} task`)} of ${scope} back to pending\n`);
  },
};
