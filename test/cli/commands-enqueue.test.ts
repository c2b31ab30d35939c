import { describe, expect, it } from "vitest";
import { EXIT } from "../../cli/errors";
import { api, counts, edgeq, enqueueTasks, tempFile, uniqueQueue } from "./commands-support";
import { expectOk } from "../../cli/client";

const ULID = /^[0-9A-HJKMNP-TV-Z]{26}$/;

function jsonl(n: number, task: (i: number) => unknown): string {
  return Array.from({ length: n }, (_, i) => JSON.stringify(task(i + 1))).join("\n") + "\n";
}

/** Every task of a queue through the API, following cursors. */
async function allTasks(queue: string) {
  const tasks = [];
  let cursor: string | undefined;
  for (;;) {
    const page = await expectOk(
      await api().v1.queues[":queue"].tasks.$get({ param: { queue }, query: { limit: "100", cursor } }),
    );
    tasks.push(...page.tasks);
    if (!page.next_cursor) return tasks;
    cursor = page.next_cursor;
  }
}

describe("edgeq enqueue", () => {
  it("--after waits for tasks (repeatable), with --on-dependency-failure; the policy alone is a usage error", async () => {
    const queue = uniqueQueue();
    const first = (await edgeq(["enqueue", queue, '{"n":1}'])).stdout.trim();
    const second = (await edgeq(["enqueue", queue, '{"n":2}'])).stdout.trim();
    const run = await edgeq([
      "enqueue",
      queue,
      "--after",
      first,
      "--after",
      second,
      "--on-dependency-failure",
      "continue",
      "--json",
    ]);
    expect(run.code, run.stderr).toBe(EXIT.ok);
    const { tasks } = JSON.parse(run.stdout) as { tasks: Array<{ id: string; state: string }> };
    expect(tasks[0]!.state).toBe("waiting");
    const deps = await expectOk(
      await api().v1.tasks[":id"].dependencies.$get({ param: { id: tasks[0]!.id }, query: {} }),
    );
    expect(deps.dependencies.map((d) => d.id).sort()).toEqual([first, second].sort());

    const alone = await edgeq(["enqueue", queue, "--on-dependency-failure", "cancel"]);
    expect(alone.code).toBe(EXIT.usage);
    expect(alone.stderr).toContain("--on-dependency-failure needs --after");
  });

  it("enqueues 1,000 tasks from a JSONL file, printing every id", async () => {
    const queue = uniqueQueue();
    const file = tempFile(
      "tasks.jsonl",
      jsonl(1000, (i) => ({ payload: { n: i } })),
    );
    const run = await edgeq(["enqueue", queue, "--file", file]);
    expect(run.stderr).toContain("1000 created, 0 deduplicated");
    expect(run.code).toBe(EXIT.ok);
    const ids = run.stdout.trim().split("\n");
    expect(ids).toHaveLength(1000);
    expect(new Set(ids).size).toBe(1000);
    for (const id of ids) expect(id).toMatch(ULID);
    expect(await counts(queue)).toMatchObject({ pending: 1000, processing: 0 });

    // The ids are the tasks', in file order.
    const tasks = await allTasks(queue);
    const byId = new Map(tasks.map((t) => [t.id, t]));
    expect(ids.map((id) => (byId.get(id)?.payload as { n: number }).n)).toEqual(
      Array.from({ length: 1000 }, (_, i) => i + 1),
    );
  });

  it("reads tasks from stdin with --file -, skipping blank lines", async () => {
    const queue = uniqueQueue();
    const input = `\n${jsonl(3, (i) => ({ payload: { n: i } }))}\n   \n${JSON.stringify({ payload: { n: 4 } })}`;
    const run = await edgeq(["enqueue", queue, "--file", "-"], { input });
    expect(run.code).toBe(EXIT.ok);
    expect(run.stdout.trim().split("\n")).toHaveLength(4);
    expect(await counts(queue)).toMatchObject({ pending: 4 });
  });

  it("reports deduplicated tasks, within a file and against live tasks, with --json", async () => {
    const queue = uniqueQueue();
    const file = tempFile(
      "dupes.jsonl",
      jsonl(5, (i) => ({ payload: { n: i }, dedupe_key: i <= 2 ? "same" : `key-${i}` })),
    );
    const first = await edgeq(["enqueue", queue, "--file", file, "--json"]);
    expect(first.code).toBe(EXIT.ok);
    const body = JSON.parse(first.stdout) as {
      created: number;
      deduplicated: number;
      tasks: Array<{ id: string; deduplicated: boolean }>;
    };
    expect(body).toMatchObject({ queue, created: 4, deduplicated: 1 });
    expect(body.tasks.map((t) => t.deduplicated)).toEqual([false, true, false, false, false]);
    expect(body.tasks[1]!.id).toBe(body.tasks[0]!.id); // the existing task's id
    expect(first.stderr).toContain("4 created, 1 deduplicated");

    const again = await edgeq(["enqueue", queue, "--file", file]);
    expect(again.code).toBe(EXIT.ok);
    expect(again.stderr).toContain("0 created, 5 deduplicated");
    expect(await counts(queue)).toMatchObject({ pending: 4 });
  });

  it("rejects invalid JSON on line N, naming the file and line, and enqueues nothing", async () => {
    const queue = uniqueQueue();
    const lines = jsonl(600, (i) => ({ payload: { n: i } })).split("\n");
    lines[536] = '{"payload": {"n": 537}'; // line 537: unterminated
    const file = tempFile("broken.jsonl", lines.join("\n"));
    const run = await edgeq(["enqueue", queue, "--file", file]);
    expect(run.code).toBe(EXIT.input);
    expect(run.stderr).toContain("broken.jsonl: line 537:");
    expect(run.stdout).toBe("");
    // Nothing was sent, although the first 500 lines were fine (one request's worth).
    expect(await counts(queue)).toMatchObject({ pending: 0 });
  });

  it("rejects a line the API would refuse (a bad field, not an object) before sending anything", async () => {
    const queue = uniqueQueue();
    const badField = tempFile("f.jsonl", `{"payload":1}\n{"payload":2,"priority":"high"}\n`);
    const run = await edgeq(["enqueue", queue, "--file", badField]);
    expect(run.code).toBe(EXIT.input);
    expect(run.stderr).toMatch(/f\.jsonl: line 2: priority:/);

    const notObject = await edgeq(["enqueue", queue, "--file", "-"], { input: '{"payload":1}\n[1,2]\n' });
    expect(notObject.code).toBe(EXIT.input);
    expect(notObject.stderr).toContain("stdin: line 2: expected a task object");

    const unknownKey = await edgeq(["enqueue", queue, "-f", "-"], { input: '{"paylod":1}\n' });
    expect(unknownKey.code).toBe(EXIT.input);
    expect(unknownKey.stderr).toContain("line 1:");
    expect(await counts(queue)).toMatchObject({ pending: 0 });
  });

  // Issue 8.12: a bare payload on a line got the schema's complaint and no hint.
  it('hints at the {"payload": …} wrapper for a line that is a bare payload', async () => {
    const queue = uniqueQueue();
    const bare = await edgeq(["enqueue", queue, "-f", "-"], { input: '{"payload":{"n":1}}\n{"n":2,"text":"hi"}\n' });
    expect(bare.code).toBe(EXIT.input);
    expect(bare.stderr).toMatch(/^edgeq: stdin: line 2: /);
    expect(bare.stderr).toContain('(each line is a task, its payload inside: {"payload": {...}}; to enqueue');
    // A line that is a task with one bad field gets no such hint.
    const typo = await edgeq(["enqueue", queue, "-f", "-"], { input: '{"payload":{"n":1},"priority":"high"}\n' });
    expect(typo.code).toBe(EXIT.input);
    expect(typo.stderr).not.toContain("each line is a task");
    expect(await counts(queue)).toMatchObject({ pending: 0 });
  });

  // Issue 8.12: `--priority -5` failed with node:util's "argument is ambiguous" jargon.
  it("takes negative numbers as flag values", async () => {
    const queue = uniqueQueue();
    const run = await edgeq(["enqueue", queue, '{"n":1}', "--priority", "-5", "--json"]);
    expect(run.code, run.stderr).toBe(EXIT.ok);
    const [id] = (JSON.parse(run.stdout) as { tasks: Array<{ id: string }> }).tasks.map((t) => t.id);
    const task = await expectOk(await api().v1.tasks[":id"].$get({ param: { id: id! } }));
    expect(task.priority).toBe(-5);
    const low = await edgeq(["enqueue", queue, "--priority", "-1000001"]);
    expect(low.code).toBe(EXIT.usage);
    expect(low.stderr).toMatch(/^edgeq: --priority: expected an integer from -1000000 to 1000000, got "-1000001"/);
    // A missing value is said plainly, naming the flag.
    const missing = await edgeq(["enqueue", queue, "--priority", "--json"]);
    expect(missing.code).toBe(EXIT.usage);
    expect(missing.stderr).toMatch(/^edgeq: --priority needs a value/);
  });

  it("uses flags as defaults for the fields a line lacks", async () => {
    const queue = uniqueQueue();
    const input = [
      { payload: { n: 1 } },
      { payload: { n: 2 }, priority: 1, type: "mine", group: "own" },
      { payload: { n: 3 }, run_at: new Date(Date.now() + 3_600_000).toISOString() },
    ]
      .map((t) => JSON.stringify(t))
      .join("\n");
    const flags = ["--priority", "7", "--type", "render", "--group", "g1", "--max-attempts", "5", "--delay", "10m"];
    const run = await edgeq(["enqueue", queue, "-f", "-", ...flags], { input });
    expect(run.code).toBe(EXIT.ok);
    const [a, b, c] = await allTasks(queue);
    expect(a).toMatchObject({ priority: 7, type: "render", group: "g1", max_attempts: 5 });
    expect(b).toMatchObject({ priority: 1, type: "mine", group: "own", max_attempts: 5 });
    // --delay is 10 minutes; line 3's own run_at (an hour) wins over it.
    expect(Date.parse(a!.run_at) - Date.parse(a!.created_at)).toBeGreaterThanOrEqual(599_000);
    expect(Date.parse(c!.run_at) - Date.now()).toBeGreaterThan(3_000_000);
  });

  it("enqueues one task from the argument, or {} without one", async () => {
    const queue = uniqueQueue();
    const one = await edgeq(["enqueue", queue, '{"to":"a@example.com"}', "--priority", "3", "--dedupe-key", "k"]);
    expect(one.code).toBe(EXIT.ok);
    const id = one.stdout.trim();
    expect(id).toMatch(ULID);
    const task = await expectOk(await api().v1.tasks[":id"].$get({ param: { id } }));
    expect(task).toMatchObject({ payload: { to: "a@example.com" }, priority: 3, dedupe_key: "k" });

    const dupe = await edgeq(["enqueue", queue, "{}", "--dedupe-key", "k"]);
    expect(dupe.stdout.trim()).toBe(id);
    expect(dupe.stderr).toContain("0 created, 1 deduplicated");

    const empty = await edgeq(["enqueue", queue]);
    const emptyTask = await expectOk(await api().v1.tasks[":id"].$get({ param: { id: empty.stdout.trim() } }));
    expect(emptyTask.payload).toEqual({});
  });

  it("names the line whose id is another queue's task, and enqueues nothing", async () => {
    const other = uniqueQueue();
    const [taken] = await enqueueTasks(other, [{ payload: "the other queue's" }]);
    const queue = uniqueQueue();
    const file = tempFile(
      "taken.jsonl",
      `{"payload": 1}\n\n{"payload": 2}\n${JSON.stringify({ id: taken, payload: 3 })}\n{"payload": 4}\n`,
    );
    const run = await edgeq(["enqueue", queue, "--file", file]);
    expect(run.code).toBe(EXIT.api);
    expect(run.stderr).toContain(`edgeq: id_in_other_queue: tasks[2].id: ${taken} belongs to queue ${other}`);
    expect(run.stderr).toMatch(/taken\.jsonl line 4\)\n$/);
    expect(run.stdout).toBe("");
    expect(await counts(queue)).toMatchObject({ pending: 0 });
  });

  it("refuses bad command lines with the usage exit code", async () => {
    const queue = uniqueQueue();
    const file = tempFile("x.jsonl", "{}\n");
    for (const args of [
      ["enqueue"],
      ["enqueue", queue, "{}", "--file", file],
      ["enqueue", queue, "--delay", "5", "--run-at", "2030-01-01T00:00:00Z"],
      ["enqueue", queue, "--priority", "high"],
      ["enqueue", queue, "--delay", "soon"],
      ["enqueue", "not a queue"],
    ]) {
      const run = await edgeq(args);
      expect(run.code, args.join(" ")).toBe(EXIT.usage);
      expect(run.stderr).toMatch(/^edgeq: /);
    }
    const badPayload = await edgeq(["enqueue", queue, "{not json"]);
    expect(badPayload.code).toBe(EXIT.input);
    const missing = await edgeq(["enqueue", queue, "--file", "/nonexistent/tasks.jsonl"]);
    expect(missing.code).toBe(EXIT.input);
    expect(missing.stderr).toContain("/nonexistent/tasks.jsonl");
    expect(await counts(queue)).toMatchObject({ pending: 0 });
  });

  it("takes a start deadline and an idempotency key; the key's second enqueue answers the first task", async () => {
    const queue = uniqueQueue();
    const first = await edgeq([
      "enqueue",
      queue,
      '{"n":1}',
      "--idempotency-key",
      "order-7",
      "--window",
      "10m",
      "--expires-in",
      "1h",
      "--json",
    ]);
    expect(first.code, first.stderr).toBe(EXIT.ok);
    const again = await edgeq([
      "enqueue",
      queue,
      '{"n":2}',
      "--idempotency-key",
      "order-7",
      "--window",
      "10m",
      "--json",
    ]);
    expect(again.code, again.stderr).toBe(EXIT.ok);
    const [a, b] = [first, again].map(
      (run) => (JSON.parse(run.stdout) as { tasks: Array<{ id: string; deduplicated: boolean }> }).tasks[0]!,
    );
    expect(b).toMatchObject({ id: a!.id, deduplicated: true });
    const task = await expectOk(await api().v1.tasks[":id"].$get({ param: { id: a!.id } }));
    expect(task.start_by).not.toBeNull();
    expect(await counts(queue)).toMatchObject({ pending: 1 });
  });

  it("refuses a key or deadline flag without its partner, or two of a kind, with the usage exit code", async () => {
    const queue = uniqueQueue();
    for (const args of [
      ["enqueue", queue, "--idempotency-key", "k"],
      ["enqueue", queue, "--window", "5"],
      ["enqueue", queue, "--singleton-key", "k", "--while-running", "cancel"],
      ["enqueue", queue, "--debounce-key", "k", "--singleton-key", "k", "--window", "5"],
      ["enqueue", queue, "--expires-in", "5", "--start-by", "2030-01-01T00:00:00Z"],
    ]) {
      const run = await edgeq(args);
      expect(run.code, args.join(" ")).toBe(EXIT.usage);
    }
    expect(await counts(queue)).toMatchObject({ pending: 0 });
  });
});
