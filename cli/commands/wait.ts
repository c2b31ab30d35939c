import { MAX_TASK_WAIT_S } from "../../src/contracts/limits";
import { expectOk } from "../client";
import { durationFlag, positionals, taskIdArg } from "../flags";
import type { Command } from "../command";
import { writeJson } from "../output";

/**
 * `edgeq wait <id>`: waits until the task is finished (completed, dead, cancelled), asking the server again
 * every MAX_TASK_WAIT_S (20 s) until it is or --timeout has passed; prints its state and result (--json: the
 * task as the API returns it). Exit 0 when it completed, 1 when it ended otherwise or is still unfinished.
 */
export const wait: Command = {
  summary: "Wait for a task to finish; print its state and result",
  usage: "edgeq wait <id> [--timeout S] [--json]",
  options: {
    timeout: { type: "string", value: "S", description: "give up after S (90, 15m, …)", default: "never" },
    json: { type: "boolean", description: "print the task as JSON" },
  },
  async run(ctx) {
    const [idRaw] = positionals(ctx, wait, ["id"]);
    const id = taskIdArg(wait, idRaw);
    const timeoutS = durationFlag(ctx, wait, "timeout");
    const deadline = timeoutS === undefined ? Infinity : Date.now() + timeoutS * 1000;
    for (;;) {
      const leftS = Math.max(0, Math.min(MAX_TASK_WAIT_S, (deadline - Date.now()) / 1000));
      const { finished, task } = await expectOk(
        await ctx.client.v1.tasks[":id"].wait.$get({ param: { id }, query: { timeout_s: leftS.toFixed(3) } }),
      );
      if (!finished && Date.now() < deadline) continue;
      if (ctx.flags.json) writeJson(ctx.stdout, task);
      else if (!finished) ctx.stdout.write(`${task.id}: still ${task.state} after ${timeoutS} s\n`);
      else {
        const detail = task.state === "completed" ? JSON.stringify(task.result) : (task.errors.at(-1)?.message ?? "");
        ctx.stdout.write(`${task.id}: ${task.state}${detail ? ` ${detail}` : ""}\n`);
      }
      return task.state === "completed" ? 0 : 1;
    }
  },
};
