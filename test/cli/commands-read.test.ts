import { describe, expect, it } from "vitest";
import { expectOk } from "../../cli/client";
import { EXIT } from "../../cli/errors";
import {
  api,
  completeOne,
  edgeq,
  enqueueTasks,
  getTask,
  jsonLines,
  killOne,
  leaseOne,
  uniqueQueue,
} from "./commands-support";

/** One page of a queue's tasks, straight from the API. */
async function page(queue: string, query: { state?: "pending" | "dead"; limit?: string; cursor?: string } = {}) {
  return expectOk(await api().v1.queues[":queue"].tasks.$get({ param: { queue }, query: { limit: "100", ...query } }));
}

describe("edgeq list", () => {
  it("prints a table of the first 50 tasks, and JSON lines identical to the API's with --json", async () => {
    const queue = uniqueQueue();
    const ids = await enqueueTasks(
      queue,
      Array.from({ length: 120 }, (_, i) => ({ payload: { n: i } })),
    );

    const table = await edgeq(["list", queue]);
    expect(table.code).toBe(EXIT.ok);
    const lines = table.stdout.trim().split("\n");
    expect(lines[0]).toMatch(/^ID\s+TYPE\s+STATE\s+PRIORITY\s+ATTEMPTS\s+RUN_AT\s+UPDATED$/);
    expect(lines).toHaveLength(51);
    expect(lines[1]).toMatch(new RegExp(`^${ids[0]}\\s+default\\s+pending\\s+0\\s+0/3\\s+`));
    expect(table.stderr).toContain("more with --limit N or --all");

    const first = await edgeq(["list", queue, "--json", "--limit", "7"]);
    const firstTasks = jsonLines(first.stdout);
    expect(firstTasks).toEqual((await page(queue, { limit: "7" })).tasks);

    const all = await edgeq(["list", queue, "--json", "--all"]);
    expect(all.code).toBe(EXIT.ok);
    const second = await page(queue, { cursor: (await page(queue)).next_cursor! });
    expect(jsonLines(all.stdout)).toEqual([...(await page(queue)).tasks, ...second.tasks]);
    expect(jsonLines(all.stdout).map((t) => (t as { id: string }).id)).toEqual(ids);
    expect(all.stderr).toBe("");
  });

  it("filters by state, group and type", async () => {
    const queue = uniqueQueue();
    await enqueueTasks(queue, [{ group: "a" }, { group: "b" }, { group: "a", max_attempts: 1 }]);
    const dead = await killOne(queue); // the first one leased: the oldest due
    const byGroup = jsonLines((await edgeq(["list", queue, "--group", "a", "--json"])).stdout);
    expect(byGroup).toHaveLength(2);
    const byState = jsonLines((await edgeq(["list", queue, "--state", "dead", "--json"])).stdout);
    expect(byState.map((t) => (t as { id: string }).id)).toEqual([dead]);
    const byType = await edgeq(["list", queue, "--type", "nope"]);
    expect(byType.stdout).toBe("");
    expect(byType.stderr).toContain("no tasks");
    const badState = await edgeq(["list", queue, "--state", "running"]);
    expect(badState.code).toBe(EXIT.usage);
  });
});

describe("edgeq show", () => {
  it("--json is the API's task plus its artifacts", async () => {
    const queue = uniqueQueue();
    const [id] = await enqueueTasks(queue, [{ payload: { text: "hello" } }]);
    const run = await edgeq(["show", id!, "--json"]);
    expect(run.code).toBe(EXIT.ok);
    expect(JSON.parse(run.stdout)).toEqual({ ...(await getTask(id!)), artifacts: [] });
  });

  it("shows payload, result, progress, checkpoint and the error history", async () => {
    const queue = uniqueQueue();
    const [id] = await enqueueTasks(queue, [{ payload: { text: "hello" }, max_attempts: 3 }]);
    // Attempt 1 saves a checkpoint and fails; attempt 2 reports progress and completes.
    const first = await leaseOne(queue);
    await expectOk(
      await api().v1.tasks[":id"].heartbeat.$post({
        param: { id: id! },
        json: { lease_token: first.lease_token, checkpoint: { page: 7 } },
      }),
    );
    await expectOk(
      await api().v1.tasks[":id"].fail.$post({
        param: { id: id! },
        json: { lease_token: first.lease_token, error: "renderer crashed\n  at render()", retry_after_s: 0 },
      }),
    );
    const second = await leaseOne(queue);
    await expectOk(
      await api().v1.tasks[":id"].heartbeat.$post({
        param: { id: id! },
        json: { lease_token: second.lease_token, progress: 40, message: "rendering page 8" },
      }),
    );
    const running = await edgeq(["show", id!]);
    expect(running.code).toBe(EXIT.ok);
    expect(running.stdout).toMatch(/^state\s+processing$/m);
    expect(running.stdout).toMatch(/^progress\s+\[#+-+\] 40%\s+rendering page 8$/m);
    expect(running.stdout).toMatch(/^attempts\s+2 of 3$/m);
    expect(running.stdout).toContain('"page": 7');
    expect(running.stdout).toContain('"text": "hello"');
    expect(running.stdout).toMatch(/#1 .* error\n\s+renderer crashed\n\s+at render\(\)/);

    await expectOk(
      await api().v1.tasks[":id"].complete.$post({
        param: { id: id! },
        json: { lease_token: second.lease_token, result: { pages: 9 } },
      }),
    );
    const done = await edgeq(["show", id!.toLowerCase()]);
    expect(done.stdout).toMatch(/^state\s+completed$/m);
    expect(done.stdout).toMatch(/^result\n\s+\{\n\s+"pages": 9/m);
  });

  it("reports an unknown task as the API's not_found (exit 1) and a malformed id as a usage error", async () => {
    const missing = await edgeq(["show", "01ARZ3NDEKTSV4RRFFQ69G5FAV"]);
    expect(missing.code).toBe(EXIT.api);
    expect(missing.stderr).toBe("edgeq: not_found: task 01ARZ3NDEKTSV4RRFFQ69G5FAV not found\n");
    const malformed = await edgeq(["show", "12"]);
    expect(malformed.code).toBe(EXIT.usage);
  });
});

describe("edgeq status", () => {
  it("lists every queue's counts, and one queue's stats, matching the API", async () => {
    const queue = uniqueQueue();
    await enqueueTasks(queue, [{}, {}, {}, { max_attempts: 1 }]);
    await completeOne(queue);
    await killOne(queue);

    // Test files run in parallel against one server: other queues change meanwhile (one may be purged
    // away), so the CLI is compared with the API on this queue, and on the queues the API listed both just
    // before and just after.
    const before = await expectOk(await api().v1.queues.$get());
    const all = await edgeq(["status", "--json"]);
    expect(all.code).toBe(EXIT.ok);
    const body = JSON.parse(all.stdout) as { queues: Array<{ queue: string; counts: Record<string, number> }> };
    expect(body.queues.find((q) => q.queue === queue)?.counts).toEqual({
      pending: 2,
      waiting: 0,
      processing: 0,
      completed: 1,
      dead: 1,
      cancelled: 0,
      expired: 0,
    });
    const after = await expectOk(await api().v1.queues.$get());
    expect(body.queues.find((q) => q.queue === queue)).toEqual(after.queues.find((q) => q.queue === queue));
    const listed = new Set(body.queues.map((q) => q.queue));
    const stayed = before.queues.filter((q) => after.queues.some((a) => a.queue === q.queue));
    expect(stayed.map((q) => q.queue)).toContain(queue);
    for (const q of stayed) expect(listed, q.queue).toContain(q.queue);

    const table = await edgeq(["status"]);
    expect(table.stdout).toMatch(
      /^QUEUE\s+PENDING\s+WAITING\s+PROCESSING\s+COMPLETED\s+DEAD\s+CANCELLED\s+EXPIRED\s+TOTAL$/m,
    );
    expect(table.stdout).toMatch(new RegExp(`^${queue}\\s+2\\s+0\\s+0\\s+1\\s+1\\s+0\\s+0\\s+4$`, "m"));

    const one = await edgeq(["status", queue, "--json"]);
    const stats = await expectOk(await api().v1.queues[":queue"].stats.$get({ param: { queue }, query: {} }));
    expect(JSON.parse(one.stdout)).toEqual(stats);

    const text = await edgeq(["status", queue]);
    expect(text.stdout).toMatch(/^pending\s+2$/m);
    expect(text.stdout).toMatch(/^dead\s+1$/m);
    expect(text.stdout).toMatch(/^due now\s+2$/m);
  });

  // Issue 8.12: an unknown queue printed zeros and exited 0, hiding a typo.
  it("a queue with no task and no stored config is an error; one with only a config is not", async () => {
    const queue = uniqueQueue("ghost");
    for (const args of [
      ["status", queue],
      ["status", queue, "--json"],
    ]) {
      const run = await edgeq(args);
      expect(run.code, args.join(" ")).toBe(EXIT.api);
      expect(run.stderr).toBe(
        `edgeq: queue "${queue}" has no tasks and no stored config (edgeq status lists the queues)\n`,
      );
      expect(run.stdout).toBe("");
    }
    expect((await edgeq(["config", "set", queue, "max_attempts=5"])).code).toBe(EXIT.ok);
    const configured = await edgeq(["status", queue]);
    expect(configured.code, configured.stderr).toBe(EXIT.ok);
    expect(configured.stdout).toMatch(/^total\s+0$/m);
  });
});
