import { expectOk } from "../client";
import { positionals, queueArg, stringFlag, usageError } from "../flags";
import type { Command, CommandContext } from "../command";
import { writeJson } from "../output";

/** The pause route's key rule (src/contracts/fields.ts's TaskKey), checked here to name the flag. */
const KEY = /^[\x21-\x7e]{1,128}$/;

/**
 * `edgeq pause <queue> [--key K]` / `edgeq resume <queue> [--key K]`: flow control's pause
 * (docs/flow-control.md) — nothing of the queue (or of its key K) is handed out until resumed; enqueues are
 * accepted and running tasks finish.
 */
function pauseCommand(paused: boolean): Command {
  const verb = paused ? "pause" : "resume";
  const command: Command = {
    summary: paused
      ? "Pause a queue or one key: nothing of it is handed out (enqueues accepted)"
      : "Resume a paused queue or key",
    usage: `edgeq ${verb} <queue> [--key K] [--json]`,
    options: {
      key: { type: "string", value: "K", description: `${verb} only this key of the queue` },
      json: { type: "boolean", description: "print the answer { queue, key, paused } as JSON" },
    },
    async run(ctx: CommandContext) {
      const [queueRaw] = positionals(ctx, command, ["queue"]);
      const queue = queueArg(command, queueRaw);
      const key = stringFlag(ctx, "key");
      if (key !== undefined && !KEY.test(key)) {
        throw usageError(command, "--key: 1-128 printable ASCII characters without spaces");
      }
      const json = key === undefined ? { paused } : { paused, key };
      const body = await expectOk(await ctx.client.v1.queues[":queue"].pause.$post({ param: { queue }, json }));
      if (ctx.flags.json) return writeJson(ctx.stdout, body);
      const what = body.key === null ? `queue ${queue}` : `key ${body.key} of ${queue}`;
      ctx.stdout.write(`${body.paused ? "paused" : "resumed"} ${what}\n`);
    },
  };
  return command;
}

export const pause = pauseCommand(true);
export const resume = pauseCommand(false);
