import { expectOk } from "../client";
import { positionals, queueArg, stringFlag, taskIdArg, usageError } from "../flags";
import type { Command } from "../command";
import { writeJson } from "../output";

/**
 * `edgeq cancel <id>`: cancels a pending task, or asks a processing one to stop (its worker learns at its
 * next heartbeat or ack). `edgeq cancel --queue Q --group G` / `--all`: the same for every live task of a
 * queue or of one group. --json prints the API's response.
 */
export const cancel: Command = {
  summary: "Cancel a task, or a queue's live tasks (--queue Q with --group G or --all)",
  usage: "edgeq cancel <id> | edgeq cancel --queue Q (--group G | --all) [--json]",
  options: {
    queue: {
      type: "string",
      value: "Q",
      description: "cancel in this queue instead of one task (with --group or --all)",
    },
    group: { type: "string", value: "G", description: "with --queue: the group's live tasks" },
    all: { type: "boolean", description: "with --queue: every live task of the queue" },
    json: { type: "boolean", description: "print the API's response as JSON" },
  },
  async run(ctx) {
    const queueFlag = stringFlag(ctx, "queue");
    const group = stringFlag(ctx, "group");
    const all = ctx.flags.all === true;
    if (queueFlag === undefined) {
      if (group !== undefined || all) throw usageError(cancel, "--group and --all need --queue Q");
      const [idRaw] = positionals(ctx, cancel, ["id"]);
      const id = taskIdArg(cancel, idRaw);
      const task = await expectOk(await ctx.client.v1.tasks[":id"].cancel.$post({ param: { id } }));
      if (ctx.flags.json) return writeJson(ctx.stdout, task);
      ctx.stdout.write(
        task.state === "cancelled"
          ? `cancelled ${task.id}\n`
          : `cancel requested for ${task.id} (${task.state}: its worker stops at its next heartbeat or ack)\n`,
      );
      return;
    }
    positionals(ctx, cancel, []);
    const queue = queueArg(cancel, queueFlag);
    if ((group === undefined) === !all) throw usageError(cancel, "give --group G or --all (one of them)");
    const body = await expectOk(
      await ctx.client.v1.queues[":queue"].cancel.$post({
        param: { queue },
        json: all ? { all: true } : { group },
      }),
    );
    if (ctx.flags.json) return writeJson(ctx.stdout, body);
    const scope = all ? queue : `${queue} group ${group}`;
    ctx.stdout.write(
      `${scope}: cancelled ${body.cancelled} pending, cancel requested for ${body.cancel_requested} processing\n`,
    );
  },
};
