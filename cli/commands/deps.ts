import { MAX_DEPENDENCY_PAGE } from "../../src/contracts/limits";
import { expectOk, type Client } from "../client";
import { positionals, taskIdArg } from "../flags";
import type { Command, CommandContext } from "../command";
import { plural, table, truncate, writeJsonLines } from "../output";
import { DEFAULT_LIMIT, limitFlag } from "./list";

type DependencyPage = Awaited<ReturnType<typeof dependencyPage>>;
type DependentPage = Awaited<ReturnType<typeof dependentPage>>;

function dependencyPage(client: Client, id: string, limit: number, cursor?: string) {
  return client.v1.tasks[":id"].dependencies
    .$get({ param: { id }, query: { limit: String(limit), cursor } })
    .then(expectOk);
}

function dependentPage(client: Client, id: string, limit: number, cursor?: string) {
  return client.v1.tasks[":id"].dependents
    .$get({ param: { id }, query: { limit: String(limit), cursor } })
    .then(expectOk);
}

/**
 * Up to `limit` items (all with undefined) of a paged listing, a page of the API's largest size
 * (MAX_DEPENDENCY_PAGE) per request; whether more remain past `limit`.
 */
async function follow<T>(
  limit: number | undefined,
  page: (want: number, cursor?: string) => Promise<{ items: T[]; next_cursor: string | null }>,
  onPage: (items: T[]) => void,
): Promise<{ items: T[]; more: boolean }> {
  const items: T[] = [];
  let cursor: string | undefined;
  for (;;) {
    const want = limit === undefined ? MAX_DEPENDENCY_PAGE : Math.min(MAX_DEPENDENCY_PAGE, limit - items.length);
    const got = await page(want, cursor);
    items.push(...got.items);
    onPage(got.items);
    if (got.next_cursor === null) return { items, more: false };
    if (limit !== undefined && items.length >= limit) return { items, more: true };
    cursor = got.next_cursor;
  }
}

const options = {
  limit: { type: "string", value: "N", description: "show at most N tasks", default: String(DEFAULT_LIMIT) },
  all: { type: "boolean", description: "show every one (follows the API's pages)" },
  json: { type: "boolean", description: "one per line, as the API returns it (JSON lines)" },
} as const;

/** A result in one short line: its JSON, or its size when the API left it out (over 16 KiB). */
function resultText(d: DependencyPage["dependencies"][number], width: number): string {
  if (d.result !== null && d.result !== undefined) return truncate(JSON.stringify(d.result), width);
  return d.result_bytes === null ? "-" : `(${d.result_bytes} bytes: edgeq show ${d.id})`;
}

/**
 * A listing of the tasks related to one task (`<id>`): its pages followed up to --limit (or --all), printed
 * as JSON lines with --json, else as `render`'s table, or `none` on stderr when there is nothing.
 */
async function listRelated<T>(
  ctx: CommandContext,
  command: Command,
  page: (id: string, want: number, cursor?: string) => Promise<{ items: T[]; next_cursor: string | null }>,
  none: (id: string) => string,
  render: (items: T[]) => string,
): Promise<void> {
  const [idRaw] = positionals(ctx, command, ["id"]);
  const id = taskIdArg(command, idRaw);
  const json = ctx.flags.json === true;
  const { items, more } = await follow(
    limitFlag(ctx, command),
    (want, cursor) => page(id, want, cursor),
    (got) => {
      if (json) writeJsonLines(ctx.stdout, got);
    },
  );
  if (!json) {
    if (items.length === 0) ctx.stderr.write(`${none(id)}\n`);
    else ctx.stdout.write(render(items));
  }
  if (more) ctx.stderr.write(`(first ${plural(items.length, "task")}; more with --limit N or --all)\n`);
}

/**
 * `edgeq deps <id>`: the tasks a task depends on (GET /v1/tasks/{id}/dependencies), in id order — each one's
 * queue, type, state and result (what a join reads); a pruned one shows `-`. --json prints them as the API
 * returns them, one per line.
 */
export const deps: Command = {
  summary: "List the tasks a task depends on, with their states and results",
  usage: "edgeq deps <id> [--limit N | --all] [--json]",
  options,
  run: (ctx: CommandContext) =>
    listRelated(
      ctx,
      deps,
      async (id, want, cursor) => {
        const page: DependencyPage = await dependencyPage(ctx.client, id, want, cursor);
        return { items: page.dependencies, next_cursor: page.next_cursor };
      },
      (id) => `task ${id} depends on no task`,
      (items) => {
        const width = Math.max(20, (ctx.stdout.columns ?? 120) - 70);
        const rows = items.map((d) => [
          d.id,
          d.queue ?? "-",
          d.type ?? "-",
          d.state ?? "(pruned)",
          resultText(d, width),
        ]);
        return table(["ID", "QUEUE", "TYPE", "STATE", "RESULT"], rows);
      },
    ),
};

/**
 * `edgeq dependents <id>`: the tasks that depend on a task (GET /v1/tasks/{id}/dependents), in id order —
 * each one's queue, type, state and what this task's finishing counted as for it (`-` while unfinished).
 */
export const dependents: Command = {
  summary: "List the tasks that depend on a task, with their states",
  usage: "edgeq dependents <id> [--limit N | --all] [--json]",
  options,
  run: (ctx: CommandContext) =>
    listRelated(
      ctx,
      dependents,
      async (id, want, cursor) => {
        const page: DependentPage = await dependentPage(ctx.client, id, want, cursor);
        return { items: page.dependents, next_cursor: page.next_cursor };
      },
      (id) => `no task depends on ${id}`,
      (items) =>
        table(
          ["ID", "QUEUE", "TYPE", "STATE", "OUTCOME"],
          items.map((d) => [d.id, d.queue, d.type, d.state, d.outcome ?? "-"]),
        ),
    ),
};
