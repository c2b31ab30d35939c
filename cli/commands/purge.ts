import { FINAL_STATES } from "../../src/contracts/states";
import { expectOk } from "../client";
import { durationFlag, isoFlag, listFlag, positionals, queueArg, usageError } from "../flags";
import type { Command } from "../command";
import { plural, writeJson } from "../output";

type FinalState = (typeof FINAL_STATES)[number];

/**
 * `edgeq purge <queue>`: deletes the queue's finished tasks (completed, dead, cancelled, expired — or the --state
 * ones) that finished more than --older-than ago or before --before. The API deletes at most 5,000 per call;
 * the CLI calls again until one deletes nothing.
 */
export const purge: Command = {
  summary: "Delete a queue's finished tasks older than a cutoff",
  usage: "edgeq purge <queue> (--older-than S | --before ISO) [--state completed|dead|cancelled|expired]... [--json]",
  options: {
    "older-than": { type: "string", value: "S", description: "tasks finished longer ago than this (90, 15m, 7d)" },
    before: { type: "string", value: "ISO", description: "tasks finished before this time (ISO 8601 with a zone)" },
    state: {
      type: "string",
      value: "S",
      multiple: true,
      description: `only tasks in this state (${FINAL_STATES.join(", ")})`,
      default: "all three",
    },
    json: { type: "boolean", description: "print { purged } as JSON" },
  },
  async run(ctx) {
    const [queueRaw] = positionals(ctx, purge, ["queue"]);
    const queue = queueArg(purge, queueRaw);
    const olderThan = durationFlag(ctx, purge, "older-than");
    const before = isoFlag(ctx, purge, "before");
    if ((olderThan === undefined) === (before === undefined)) {
      throw usageError(purge, "give --older-than S or --before ISO (one of them)");
    }
    const states = listFlag(ctx, "state");
    for (const s of states) {
      if (!(FINAL_STATES as readonly string[]).includes(s)) {
        throw usageError(purge, `--state: one of ${FINAL_STATES.join(", ")} (only finished tasks are purged)`);
      }
    }
    const json = {
      ...(before !== undefined ? { before } : { older_than_s: olderThan }),
      ...(states.length ? { states: [...new Set(states)] as FinalState[] } : {}),
    };
    let purged = 0;
    for (;;) {
      const body = await expectOk(await ctx.client.v1.queues[":queue"].purge.$post({ param: { queue }, json }));
      purged += body.purged;
      if (body.purged === 0) break;
    }
    if (ctx.flags.json) return writeJson(ctx.stdout, { purged });
    const which = states.length ? [...new Set(states)].join("/") : "finished";
    ctx.stdout.write(`purged ${plural(purged, `${which} task`)} from ${queue}\n`);
  },
};
