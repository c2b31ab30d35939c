import { expectOk } from "../client";
import { CliError, EXIT } from "../errors";
import { intFlag, positionals, queueArg, stringFlag, usageError } from "../flags";
import type { Command, CommandContext } from "../command";
import { keyValues, table, writeJson } from "../output";

/** A schedule as the API shows it (GET /v1/schedules/{name}). */
interface ScheduleView {
  name: string;
  queue: string;
  cron: string;
  timezone: string;
  paused: boolean;
  overlap: string;
  catch_up: string;
  next_runs: string[];
  last_run: {
    slot: string;
    outcome: string | null;
    task_id: string | null;
    task_state: string | null;
    error: string | null;
  } | null;
}

const json = { json: { type: "boolean", description: "print the API's response as JSON" } } as const;

/** The schedule name argument (same rule as queue names). */
function nameArg(command: Pick<Command, "usage">, ctx: Pick<CommandContext, "args">): string {
  const [raw] = positionals(ctx, command, ["name"]);
  return queueArg(command, raw);
}

function render(view: ScheduleView): string {
  const last = view.last_run;
  return keyValues([
    ["name", view.name],
    ["queue", view.queue],
    ["cron", `${view.cron} (${view.timezone})`],
    ["state", view.paused ? "paused" : "active"],
    ["overlap", view.overlap],
    ["catch_up", view.catch_up],
    ["next runs", view.next_runs.join(", ") || "-"],
    [
      "last run",
      last
        ? `${last.slot} ${last.outcome ?? ""}${last.task_id ? ` task ${last.task_id} (${last.task_state ?? "purged"})` : ""}${last.error ? ` error: ${last.error}` : ""}`
        : "-",
    ],
  ]);
}

async function show(ctx: CommandContext, view: ScheduleView): Promise<void> {
  if (ctx.flags.json) return writeJson(ctx.stdout, view);
  ctx.stdout.write(render(view));
}

/** `edgeq schedule set <name> --queue Q --cron EXPR [...]`: creates or replaces a schedule. */
export const scheduleSet: Command = {
  summary: "Create or replace a schedule (a task enqueued at every cron slot)",
  usage:
    'edgeq schedule set <name> --queue Q --cron "EXPR" [--tz ZONE] [--type T] [--payload JSON] [--priority N] [--overlap allow|skip] [--catch-up none|last|all] [--paused] [--json]',
  options: {
    queue: { type: "string", value: "Q", description: "the queue each slot's task goes to" },
    cron: {
      type: "string",
      value: "EXPR",
      description: "5 fields (minute first), 6 (second first), or @every 30s / 5m / 1h / 1d",
    },
    tz: { type: "string", value: "ZONE", description: "IANA time zone the expression is read in", default: "UTC" },
    type: { type: "string", value: "T", description: "the task's type" },
    payload: { type: "string", value: "JSON", description: "the task's payload (JSON)" },
    priority: { type: "string", value: "N", description: "the task's priority" },
    overlap: {
      type: "string",
      value: "MODE",
      description: "skip: none while the last one runs; allow",
      default: "skip",
    },
    "catch-up": {
      type: "string",
      value: "MODE",
      description: "after downtime: none, last or all (bounded)",
      default: "none",
    },
    paused: { type: "boolean", description: "store it paused" },
    ...json,
  },
  async run(ctx) {
    const name = nameArg(scheduleSet, ctx);
    const queue = stringFlag(ctx, "queue");
    const cron = stringFlag(ctx, "cron");
    if (queue === undefined) throw usageError(scheduleSet, "missing --queue");
    if (cron === undefined) throw usageError(scheduleSet, "missing --cron");
    const rawPayload = stringFlag(ctx, "payload");
    let payload: unknown;
    if (rawPayload !== undefined) {
      try {
        payload = JSON.parse(rawPayload);
      } catch (error) {
        throw new CliError(`--payload: not JSON (${(error as Error).message})`, EXIT.input);
      }
    }
    const overlap = stringFlag(ctx, "overlap");
    const catchUp = stringFlag(ctx, "catch-up");
    const type = stringFlag(ctx, "type");
    const priority = intFlag(ctx, scheduleSet, "priority");
    const task = {
      ...(type === undefined ? {} : { type }),
      ...(payload === undefined ? {} : { payload }),
      ...(priority === undefined ? {} : { priority }),
    };
    const view = await expectOk(
      await ctx.client.v1.schedules[":name"].$put({
        param: { name },
        json: {
          queue: queueArg(scheduleSet, queue),
          cron,
          ...(stringFlag(ctx, "tz") === undefined ? {} : { timezone: stringFlag(ctx, "tz") }),
          task,
          ...(overlap === undefined ? {} : { overlap: overlap as "allow" | "skip" }),
          ...(catchUp === undefined ? {} : { catch_up: catchUp as "none" | "last" | "all" }),
          ...(ctx.flags.paused ? { paused: true } : {}),
        },
      }),
    );
    await show(ctx, view as ScheduleView);
  },
};

/** `edgeq schedule list`: every schedule, one line each. */
export const scheduleList: Command = {
  summary: "Every schedule with its next run and last outcome",
  usage: "edgeq schedule list [--json]",
  options: json,
  async run(ctx) {
    positionals(ctx, scheduleList, []);
    const body = await expectOk(await ctx.client.v1.schedules.$get());
    if (ctx.flags.json) return writeJson(ctx.stdout, body);
    const rows = (body.schedules as ScheduleView[]).map((s) => [
      s.name,
      s.queue,
      s.cron,
      s.paused ? "paused" : (s.next_runs[0] ?? "-"),
      s.last_run?.outcome ?? "-",
    ]);
    ctx.stdout.write(table(["NAME", "QUEUE", "CRON", "NEXT", "LAST"], rows));
  },
};

/** `edgeq schedule show <name>`: one schedule, its next 5 runs and its last run. */
export const scheduleShow: Command = {
  summary: "One schedule: next 5 runs, last run's task and state",
  usage: "edgeq schedule show <name> [--json]",
  options: json,
  async run(ctx) {
    const name = nameArg(scheduleShow, ctx);
    await show(ctx, (await expectOk(await ctx.client.v1.schedules[":name"].$get({ param: { name } }))) as ScheduleView);
  },
};

/** `edgeq schedule rm <name>`. */
export const scheduleRm: Command = {
  summary: "Delete a schedule (its tasks stay)",
  usage: "edgeq schedule rm <name>",
  async run(ctx) {
    const name = nameArg(scheduleRm, ctx);
    await expectOk(await ctx.client.v1.schedules[":name"].$delete({ param: { name } }));
    ctx.stdout.write(`deleted ${name}\n`);
  },
};

/** `edgeq schedule pause <name>`. */
export const schedulePause: Command = {
  summary: "Pause a schedule",
  usage: "edgeq schedule pause <name> [--json]",
  options: json,
  async run(ctx) {
    const name = nameArg(schedulePause, ctx);
    await show(
      ctx,
      (await expectOk(await ctx.client.v1.schedules[":name"].pause.$post({ param: { name } }))) as ScheduleView,
    );
  },
};

/** `edgeq schedule resume <name>`: from the first slot after now. */
export const scheduleResume: Command = {
  summary: "Resume a schedule from its next slot",
  usage: "edgeq schedule resume <name> [--json]",
  options: json,
  async run(ctx) {
    const name = nameArg(scheduleResume, ctx);
    await show(
      ctx,
      (await expectOk(await ctx.client.v1.schedules[":name"].resume.$post({ param: { name } }))) as ScheduleView,
    );
  },
};

/** `edgeq schedule trigger <name>`: run it now; prints the task id. */
export const scheduleTrigger: Command = {
  summary: "Run a schedule now (enqueue its task once)",
  usage: "edgeq schedule trigger <name> [--json]",
  options: json,
  async run(ctx) {
    const name = nameArg(scheduleTrigger, ctx);
    const body = await expectOk(await ctx.client.v1.schedules[":name"].trigger.$post({ param: { name } }));
    if (ctx.flags.json) return writeJson(ctx.stdout, body);
    ctx.stdout.write(`${body.task.id}\n`);
  },
};
