import { BULK_ACTIONS, type BulkAction } from "../../src/contracts/bulk";
import { expectOk } from "../client";
import { intFlag, positionals, queueArg, stringFlag, usageError } from "../flags";
import type { Command } from "../command";
import { plural, writeJson } from "../output";

/** What each action's answer says it did. */
const DONE: Record<BulkAction, string> = { cancel: "cancelled", retry: "retried", redrive: "redrove" };

/**
 * `edgeq bulk <cancel|retry|redrive> <queue>`: the action on every task of the queue the filter flags match
 * (--state, --type, --group, --created-after, --created-before), calling the API again while it says more
 * remain (each call changes at most 1,000 per database). --dry-run prints how many match instead (counted up
 * to one call's cap: "at least" when more remain).
 */
export const bulk: Command = {
  summary: "Cancel, retry or redrive the tasks a filter matches (--dry-run counts them)",
  usage:
    "edgeq bulk <cancel|retry|redrive> <queue> [--state S] [--type T] [--group G] [--created-after ISO] [--created-before ISO] [--dry-run] [--json]",
  options: {
    state: { type: "string", value: "S", description: "only tasks in this state (one the action changes)" },
    type: { type: "string", value: "T", description: "only tasks of this type" },
    group: { type: "string", value: "G", description: "only this group's tasks" },
    "created-after": { type: "string", value: "ISO", description: "only tasks created at or after this time" },
    "created-before": { type: "string", value: "ISO", description: "only tasks created before this time" },
    limit: { type: "string", value: "N", description: "at most N tasks per database a call", default: "1000" },
    "dry-run": { type: "boolean", description: "count the matching tasks, change nothing" },
    json: { type: "boolean", description: "print { action, dry_run, count, more } as JSON" },
  },
  async run(ctx) {
    const [actionRaw, queueRaw] = positionals(ctx, bulk, ["action", "queue"]);
    if (!(BULK_ACTIONS as readonly string[]).includes(actionRaw!)) {
      throw usageError(bulk, `not an action: "${actionRaw}" (${BULK_ACTIONS.join(", ")})`);
    }
    const action = actionRaw as BulkAction;
    const queue = queueArg(bulk, queueRaw);
    const filter = {
      state: stringFlag(ctx, "state"),
      type: stringFlag(ctx, "type"),
      group: stringFlag(ctx, "group"),
      created_after: stringFlag(ctx, "created-after"),
      created_before: stringFlag(ctx, "created-before"),
    };
    const dryRun = ctx.flags["dry-run"] === true;
    const limit = intFlag(ctx, bulk, "limit", { min: 1 });
    let count = 0;
    let more: boolean;
    for (;;) {
      const answer = await expectOk(
        await ctx.client.v1.queues[":queue"].bulk.$post({
          param: { queue },
          // The server checks the filter (a 400 names the field); the CLI passes it on as given.
          json: { action, filter: filter as never, dry_run: dryRun, limit },
        }),
      );
      count += answer.count;
      more = answer.more;
      if (dryRun || !more || answer.count === 0) break;
    }
    if (ctx.flags.json) return writeJson(ctx.stdout, { action, dry_run: dryRun, count, more });
    const tasks = plural(count, "task");
    if (dryRun) ctx.stdout.write(`${more ? "more than " : ""}${tasks} of ${queue} to ${action} (dry run)\n`);
    else ctx.stdout.write(`${DONE[action]} ${tasks} of ${queue}${more ? " (more remain)" : ""}\n`);
  },
};
