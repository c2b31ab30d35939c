import { MAX_BATCH } from "../../src/contracts/limits";
import { TASK_STATES } from "../../src/contracts/states";
import { expectOk, type Client } from "../client";
import { intFlag, positionals, queueArg, stringFlag, usageError } from "../flags";
import type { Command, CommandContext } from "../command";
import { relativeTime, table, writeJsonLines } from "../output";

/** Rows shown when neither --limit nor --all is given: a screenful. */
export const DEFAULT_LIMIT = 50;

/**
 * How many tasks a listing shows: --limit N, everything with --all (undefined), else DEFAULT_LIMIT.
 * Shared by `list` and `dlq list`.
 */
export function limitFlag(ctx: CommandContext, command: Command): number | undefined {
  const given = intFlag(ctx, command, "limit", { min: 1 });
  if (given !== undefined && ctx.flags.all) throw usageError(command, "give --limit or --all, not both");
  return ctx.flags.all ? undefined : (given ?? DEFAULT_LIMIT);
}

/** A task as the list endpoint returns it. */
export type TaskView = Awaited<ReturnType<typeof fetchPage>>["tasks"][number];

/** Filters of the list endpoint. */
export interface TaskFilter {
  state?: (typeof TASK_STATES)[number];
  group?: string;
  type?: string;
}

function fetchPage(client: Client, queue: string, filter: TaskFilter, limit: number, cursor?: string) {
  return client.v1.queues[":queue"].tasks
    .$get({ param: { queue }, query: { ...filter, limit: String(limit), cursor } })
    .then(expectOk);
}

/**
 * A queue's tasks in creation order, following the API's cursors: at most `limit` tasks (all of them when
 * `limit` is undefined), fetched a page of the API's largest size (MAX_BATCH) per request. Reports whether more remain past `limit`.
 *
 * @example
 * const { tasks, more } = await fetchTasks(client, "emails", { state: "dead" }, 50);
 */
export async function fetchTasks(
  client: Client,
  queue: string,
  filter: TaskFilter,
  limit: number | undefined,
  onPage?: (tasks: TaskView[]) => void,
): Promise<{ tasks: TaskView[]; more: boolean }> {
  const tasks: TaskView[] = [];
  let cursor: string | undefined;
  for (;;) {
    const want = limit === undefined ? MAX_BATCH : Math.min(MAX_BATCH, limit - tasks.length);
    const page = await fetchPage(client, queue, filter, want, cursor);
    tasks.push(...page.tasks);
    onPage?.(page.tasks);
    if (page.next_cursor === null) return { tasks, more: false };
    if (limit !== undefined && tasks.length >= limit) return { tasks, more: true };
    cursor = page.next_cursor;
  }
}

/** The --state, --group and --type flags, checked. */
export function filterFlags(ctx: CommandContext, command: Command): TaskFilter {
  const state = stringFlag(ctx, "state");
  if (state !== undefined && !(TASK_STATES as readonly string[]).includes(state)) {
    throw usageError(command, `--state: one of ${TASK_STATES.join(", ")}`);
  }
  return {
    state: state as TaskFilter["state"],
    group: stringFlag(ctx, "group"),
    type: stringFlag(ctx, "type"),
  };
}

/** One table row per task: id, type, state, priority, attempts, run_at, updated. */
function taskRows(tasks: TaskView[], now: number): string[][] {
  return tasks.map((t) => [
    t.id,
    t.type,
    t.cancel_requested && t.state === "processing" ? "processing (cancel requested)" : t.state,
    String(t.priority),
    `${t.attempts}/${t.max_attempts}`,
    t.state === "pending" ? relativeTime(t.run_at, now) : "-",
    relativeTime(t.updated_at, now),
  ]);
}

/**
 * `edgeq list <queue>`: the queue's tasks in creation order as a table (id, type, state, priority,
 * attempts, run_at for pending tasks, updated), or with --json one task per line exactly as the API returns
 * it. Shows --limit tasks (default 50); --all follows the cursors to the end.
 */
export const list: Command = {
  summary: "List a queue's tasks (table, or JSON lines with --json)",
  usage: "edgeq list <queue> [--state S] [--group G] [--type T] [--limit N | --all] [--json]",
  options: {
    state: { type: "string", value: "S", description: `only tasks in this state (${TASK_STATES.join(", ")})` },
    group: { type: "string", value: "G", description: "only this group's tasks" },
    type: { type: "string", value: "T", description: "only tasks of this type" },
    limit: { type: "string", value: "N", description: "show at most N tasks", default: String(DEFAULT_LIMIT) },
    all: { type: "boolean", description: "show every task (follows the API's pages)" },
    json: { type: "boolean", description: "one task per line, as the API returns it (JSON lines)" },
  },
  async run(ctx) {
    const [queueRaw] = positionals(ctx, list, ["queue"]);
    const queue = queueArg(list, queueRaw);
    const filter = filterFlags(ctx, list);
    const limit = limitFlag(ctx, list);

    // JSON lines stream page by page, so `--all --json` on a big queue starts printing at once.
    const json = ctx.flags.json === true;
    const { tasks, more } = await fetchTasks(ctx.client, queue, filter, limit, (page) => {
      if (json) writeJsonLines(ctx.stdout, page);
    });
    if (!json) {
      if (tasks.length === 0) {
        ctx.stderr.write(`no tasks in ${queue}${describeFilter(filter)}\n`);
      } else {
        const headers = ["ID", "TYPE", "STATE", "PRIORITY", "ATTEMPTS", "RUN_AT", "UPDATED"];
        ctx.stdout.write(table(headers, taskRows(tasks, Date.now())));
      }
    }
    if (more) ctx.stderr.write(`(first ${tasks.length}; more with --limit N or --all)\n`);
  },
};

/** " (state dead, group g)" for messages; "" without filters. */
export function describeFilter(filter: TaskFilter): string {
  const parts = Object.entries(filter)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `${k} ${String(v)}`);
  return parts.length ? ` (${parts.join(", ")})` : "";
}
