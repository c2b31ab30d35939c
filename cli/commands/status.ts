import { TASK_STATES } from "../../src/contracts/states";
import { expectOk } from "../client";
import { CliError, EXIT } from "../errors";
import { positionals, queueArg, stringFlag, usageError } from "../flags";
import type { Command } from "../command";
import { keyValues, shortDuration, table, writeJson } from "../output";

/**
 * `edgeq status`: every queue with its task count per state (GET /v1/queues); `edgeq status <queue>`: one
 * queue's counts, how many pending tasks are due now and how long the oldest has waited (GET …/stats,
 * optionally of one --group). --json prints the API's response as it is. A queue with no task and no stored
 * config is an error (exit 1): it does not exist, and its zeros would hide a typo.
 */
export const status: Command = {
  summary: "Task counts per state for every queue, or one queue's stats",
  usage: "edgeq status [<queue>] [--group G] [--json]",
  options: {
    group: { type: "string", value: "G", description: "with <queue>: count only this group's tasks" },
    json: { type: "boolean", description: "print the API's response as JSON" },
  },
  async run(ctx) {
    const [queueRaw] = positionals(ctx, status, [], ["queue"]);
    const group = stringFlag(ctx, "group");
    if (queueRaw === undefined) {
      if (group !== undefined) throw usageError(status, "--group needs a <queue>");
      const body = await expectOk(await ctx.client.v1.queues.$get());
      if (ctx.flags.json) return writeJson(ctx.stdout, body);
      if (body.queues.length === 0) {
        ctx.stderr.write("no queues yet (a queue exists once it has a task or a stored config)\n");
        return;
      }
      const rows = body.queues.map(({ queue, counts }) => [
        queue,
        ...TASK_STATES.map((s) => String(counts[s] ?? 0)),
        String(TASK_STATES.reduce((sum, s) => sum + (counts[s] ?? 0), 0)),
      ]);
      ctx.stdout.write(table(["QUEUE", ...TASK_STATES.map((s) => s.toUpperCase()), "TOTAL"], rows));
      return;
    }

    const queue = queueArg(status, queueRaw);
    const stats = await expectOk(
      await ctx.client.v1.queues[":queue"].stats.$get({
        param: { queue },
        query: group === undefined ? {} : { group },
      }),
    );
    const total = TASK_STATES.reduce((sum, s) => sum + (stats.counts[s] ?? 0), 0);
    if (total === 0 && group === undefined) {
      // No task: a queue with a stored config still exists (GET /v1/queues lists it); otherwise the name is
      // most likely a typo, and zeros would hide it.
      const { queues } = await expectOk(await ctx.client.v1.queues.$get());
      if (!queues.some((q) => q.queue === queue)) {
        throw new CliError(
          `queue "${queue}" has no tasks and no stored config (edgeq status lists the queues)`,
          EXIT.api,
        );
      }
    }
    if (ctx.flags.json) return writeJson(ctx.stdout, stats);
    const pairs: Array<[string, string]> = [["queue", group === undefined ? queue : `${queue} (group ${group})`]];
    for (const s of TASK_STATES) pairs.push([s, String(stats.counts[s] ?? 0)]);
    pairs.push(["total", String(total)]);
    pairs.push(["due now", String(stats.due)]);
    const oldest = stats.oldest_due_at;
    const waited = oldest ? Math.max(0, Date.now() - Date.parse(oldest)) : 0;
    pairs.push(["oldest due", oldest ? `${oldest} (waiting ${shortDuration(waited)})` : "-"]);
    ctx.stdout.write(keyValues(pairs));
  },
};
