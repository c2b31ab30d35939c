import { describe, expect, it } from "vitest";
import { EXIT } from "../../cli/errors";
import { completeOne, counts, edgeq, enqueueTasks, start, uniqueQueue } from "./commands-support";

describe("edgeq wait", () => {
  it("waits until the task completes and prints its result; a wait that runs out exits 1", async () => {
    const queue = uniqueQueue();
    const [id] = await enqueueTasks(queue, [{}]);
    // Completed while the command waits, or before its wait arrives (then answered at once): either way it
    // prints the result (that a wait is answered by the completion itself is test/http/wait.test.ts's).
    const waiting = start(["wait", id!, "--json"]);
    await completeOne(queue, { n: 1 });
    const run = await waiting.done;
    expect(run.code).toBe(EXIT.ok);
    expect(JSON.parse(run.stdout)).toMatchObject({ id, state: "completed", result: { n: 1 } });

    const [pending] = await enqueueTasks(queue, [{}]);
    const late = await edgeq(["wait", pending!, "--timeout", "0.3"]);
    expect(late.code).toBe(1);
    expect(late.stdout).toBe(`${pending}: still pending after 0.3 s\n`);
  });
});

describe("edgeq bulk", () => {
  it("counts on a dry run, then cancels what the filter matches; a bad filter names the field", async () => {
    const queue = uniqueQueue();
    await enqueueTasks(queue, [{ group: "a" }, { group: "a" }, { group: "b" }]);
    const dry = await edgeq(["bulk", "cancel", queue, "--group", "a", "--dry-run"]);
    expect(dry.code).toBe(EXIT.ok);
    expect(dry.stdout).toBe(`2 tasks of ${queue} to cancel (dry run)\n`);
    expect(await counts(queue)).toMatchObject({ pending: 3 });

    const run = await edgeq(["bulk", "cancel", queue, "--group", "a", "--limit", "1", "--json"]);
    expect(JSON.parse(run.stdout)).toEqual({ action: "cancel", dry_run: false, count: 2, more: false });
    expect(await counts(queue)).toMatchObject({ pending: 1, cancelled: 2 });

    const retried = await edgeq(["bulk", "retry", queue, "--state", "cancelled"]);
    expect(retried.stdout).toBe(`retried 2 tasks of ${queue}\n`);

    const bad = await edgeq(["bulk", "cancel", queue, "--state", "dead"]);
    expect(bad.code).toBe(EXIT.api);
    expect(bad.stderr).toMatch(/filter\.state: cancel acts on pending or processing tasks/);
    expect((await edgeq(["bulk", "delete", queue])).code).toBe(EXIT.usage);
    expect(await counts(queue)).toMatchObject({ pending: 3 });
  });
});
