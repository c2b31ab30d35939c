import { expectOk } from "../client";
import { positionals, taskIdArg } from "../flags";
import type { Command } from "../command";
import { writeJson } from "../output";

/**
 * `edgeq retry <id>`: a dead or cancelled task back to pending now, its attempts reset (its error history
 * is kept). --json prints the task as the API returns it.
 */
export const retry: Command = {
  summary: "Retry a dead or cancelled task now, attempts reset",
  usage: "edgeq retry <id> [--json]",
  options: { json: { type: "boolean", description: "print the task as JSON" } },
  async run(ctx) {
    const [idRaw] = positionals(ctx, retry, ["id"]);
    const id = taskIdArg(retry, idRaw);
    const task = await expectOk(await ctx.client.v1.tasks[":id"].retry.$post({ param: { id } }));
    if (ctx.flags.json) return writeJson(ctx.stdout, task);
    ctx.stdout.write(`retried ${task.id}: ${task.state}, attempts reset (0 of ${task.max_attempts})\n`);
  },
};
