import { expectOk } from "../client";
import { intFlag, positionals, queueArg } from "../flags";
import type { Command } from "../command";
import { writeJson } from "../output";

interface PartitionView {
  part: number;
  shard: string;
  move: { from: string; state: string | null; relayed: number; left_on_source: number } | null;
}

function describe(queue: string, partitions: PartitionView[]): string {
  return (
    partitions
      .map((p) =>
        p.move
          ? `${queue}#${p.part}  ${p.move.from} -> ${p.shard}  ${p.move.state ?? ""}  relayed ${p.move.relayed}, ${p.move.left_on_source} left`
          : `${queue}#${p.part}  ${p.shard}`,
      )
      .join("\n") + "\n"
  );
}

/** `edgeq move <queue> <shard>`: starts moving a partition of the queue to another shard (online). */
export const move: Command = {
  summary: "Move a queue (one partition) to another shard, online",
  usage: "edgeq move <queue> <shard> [--part N] [--json]",
  options: {
    part: { type: "string", value: "N", description: "the partition to move", default: "0" },
    json: { type: "boolean", description: "print the placement as JSON" },
  },
  async run(ctx) {
    const [queueRaw, shard] = positionals(ctx, move, ["queue", "shard"]);
    const queue = queueArg(move, queueRaw);
    const part = intFlag(ctx, move, "part", { min: 0 }) ?? 0;
    const body = await expectOk(
      await ctx.client.v1.queues[":queue"].move.$post({ param: { queue }, json: { shard: shard!, part } }),
    );
    if (ctx.flags.json) return writeJson(ctx.stdout, body);
    ctx.stdout.write(describe(queue, body.partitions));
  },
};

/** `edgeq placement <queue>`: which shard holds each partition, and a move's progress. */
export const placement: Command = {
  summary: "Show which shard holds each partition of a queue",
  usage: "edgeq placement <queue> [--json]",
  options: { json: { type: "boolean", description: "print the placement as JSON" } },
  async run(ctx) {
    const [queueRaw] = positionals(ctx, placement, ["queue"]);
    const queue = queueArg(placement, queueRaw);
    const body = await expectOk(await ctx.client.v1.queues[":queue"].placement.$get({ param: { queue } }));
    if (ctx.flags.json) return writeJson(ctx.stdout, body);
    ctx.stdout.write(describe(queue, body.partitions));
  },
};
