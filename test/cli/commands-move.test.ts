import { describe, expect, it } from "vitest";
import { EXIT } from "../../cli/errors";
import { counts, edgeq, enqueueTasks, getTask, uniqueQueue } from "./commands-support";
import { waitFor } from "./worker-support";

interface Placement {
  partitions: Array<{ part: number; shard: string; move: { from: string; left_on_source: number } | null }>;
}

describe("edgeq move / placement (two local shards, as npm start runs)", () => {
  it("moves a queue to the other shard online: same tasks, same ids, readable throughout", async () => {
    const queue = uniqueQueue("move");
    const ids = await enqueueTasks(
      queue,
      Array.from({ length: 30 }, (_, i) => ({ payload: { i } })),
    );
    const before = JSON.parse((await edgeq(["placement", queue, "--json"])).stdout) as Placement;
    const from = before.partitions[0]!.shard;
    const to = from === "DB" ? "DB_1" : "DB";

    const run = await edgeq(["move", queue, to]);
    expect(run.code, run.stderr).toBe(EXIT.ok);
    expect(run.stdout).toMatch(new RegExp(`^${queue}#0  ${from} -> ${to}`));

    // The request relays in the background; the placement shows it done once nothing is left behind.
    const after = await waitFor("the move to leave nothing on the source", async () => {
      const placement = JSON.parse((await edgeq(["placement", queue, "--json"])).stdout) as Placement;
      return placement.partitions[0]!.move?.left_on_source === 0 && placement;
    });
    expect(after.partitions[0]).toMatchObject({ shard: to, move: { from, left_on_source: 0 } });
    expect((await counts(queue)).pending).toBe(30);
    expect((await getTask(ids[7]!)).payload).toEqual({ i: 7 });

    const again = await edgeq(["move", queue, to]);
    expect(again.code).not.toBe(EXIT.ok);
    expect(again.stderr).toMatch(/move_conflict|already/);
  });

  it("reports a queue never used as not found, for placement and move alike", async () => {
    const queue = uniqueQueue("never");
    for (const args of [
      ["placement", queue],
      ["move", queue, "DB_1"],
    ]) {
      const run = await edgeq(args);
      expect(run.code, args.join(" ")).toBe(EXIT.api);
      expect(run.stderr).toBe(`edgeq: not_found: queue ${queue} not found: it has no task and no stored config\n`);
      expect(run.stdout).toBe("");
    }
  });
});
