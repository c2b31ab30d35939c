import { describe, expect, it } from "vitest";
import { expectOk } from "../../cli/client";
import { HEALTH_EXIT } from "../../cli/commands/health";
import { api, edgeq, enqueueTasks, uniqueQueue } from "./commands-support";

describe("edgeq health", () => {
  it("exits 0 / 1 / 2 with the queue's status, and prints its reasons", async () => {
    const queue = uniqueQueue("health");
    await expectOk(
      await api().v1.queues[":queue"].health.config.$put({
        param: { queue },
        json: { thresholds: { due_depth: { warn: 1, critical: 3 } } },
      }),
    );
    const ok = await edgeq(["health", queue]);
    expect(ok.code, ok.stderr).toBe(HEALTH_EXIT.ok);
    expect(ok.stdout).toMatch(new RegExp(`^QUEUE\\s+STATUS\\s+REASONS\\s+ALERT\\n${queue}\\s+OK\\s+-`));

    await enqueueTasks(queue, [{}]);
    const warn = await edgeq(["health", queue]);
    expect(warn.code).toBe(HEALTH_EXIT.warn);
    expect(warn.stdout).toMatch(new RegExp(`${queue}\\s+WARN\\s+1 tasks are due and waiting \\(warn at 1\\)`));

    await enqueueTasks(queue, [{}, {}]);
    const critical = await edgeq(["health", queue, "--json"]);
    expect(critical.code).toBe(HEALTH_EXIT.critical);
    expect(JSON.parse(critical.stdout)).toMatchObject({ queue, status: "critical" });

    // Every queue: the worst status decides the exit code.
    const all = await edgeq(["health"]);
    expect(all.code).toBe(HEALTH_EXIT.critical);
    expect(all.stdout).toMatch(new RegExp(`${queue}\\s+CRITICAL`));
  });
});
