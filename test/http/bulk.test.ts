import { describe, expect, it } from "vitest";
import { snapshot, uniqueQueue } from "../helpers";
import { coordinator, setClock } from "../support/coordinator";
import { until } from "../support/until";
import { call, deadTask, enqueue, expectError, getTask } from "./api";

// POST /v1/queues/{queue}/bulk: cancel, retry or redrive by filter over HTTP (the store's properties are
// test/engine/bulk.test.ts; the RPC binding's answers test/rpc/same-answers.test.ts).

const bulk = (queue: string, body: unknown) =>
  call<{ count: number; more: boolean }>("POST", `/v1/queues/${queue}/bulk`, { body });

describe("bulk actions by filter", () => {
  it("a dry run answers the count and changes nothing; the action then changes those tasks, each reported", async () => {
    const queue = uniqueQueue("bulk-http");
    const tasks = await enqueue(queue, {
      tasks: [
        { type: "a", group: "g" },
        { type: "a", group: "g" },
        { type: "b", group: "g" },
      ],
    });
    const before = await snapshot(queue);
    const dry = await bulk(queue, { action: "cancel", filter: { type: "a" }, dry_run: true });
    expect(dry.status).toBe(200);
    expect(dry.body).toEqual({ action: "cancel", dry_run: true, count: 2, more: false });
    expect(await snapshot(queue)).toEqual(before);

    // A wait on one of them: the bulk cancel answers it through the effects owner, as a single cancel would
    // (the coordinator's clock ahead leaves it no skip to run out: test/http/wait.test.ts).
    await setClock(queue, Date.now() + 3_600_000);
    const waited = call<{ finished: boolean }>("GET", `/v1/tasks/${tasks[0]!.id}/wait?timeout_s=20`);
    await until("the wait to be held", async () => (await coordinator(queue).waitingForTasks()) === 1);
    const started = Date.now();
    const res = await bulk(queue, { action: "cancel", filter: { type: "a", group: "g" } });
    expect(res.body).toEqual({ action: "cancel", dry_run: false, count: 2, more: false });
    expect((await waited).body).toMatchObject({ finished: true, task: { state: "cancelled" } });
    expect(Date.now() - started).toBeLessThan(10_000);
    expect((await getTask(tasks[1]!.id)).state).toBe("cancelled");
    expect((await getTask(tasks[2]!.id)).state).toBe("pending");
  });

  it("a cap per call, and `more` until none remain; a retry revives what the cancel ended", async () => {
    const queue = uniqueQueue("bulk-more");
    const dead = await deadTask(queue, { type: "y" });
    await enqueue(queue, { tasks: Array.from({ length: 3 }, () => ({ type: "x" })) });
    expect((await bulk(queue, { action: "cancel", filter: {}, limit: 2, dry_run: true })).body).toMatchObject({
      count: 2,
      more: true,
    });
    expect((await bulk(queue, { action: "cancel", filter: {}, limit: 2 })).body).toMatchObject({
      count: 2,
      more: true,
    });
    expect((await bulk(queue, { action: "cancel", filter: {}, limit: 2 })).body).toMatchObject({
      count: 1,
      more: false,
    });
    const since = new Date(Date.now() - 60_000).toISOString();
    const retried = await bulk(queue, { action: "retry", filter: { state: "cancelled", created_after: since } });
    expect(retried.body).toMatchObject({ count: 3, more: false });
    expect((await bulk(queue, { action: "redrive", filter: { type: "y" } })).body).toMatchObject({ count: 1 });
    expect((await getTask(dead)).state).toBe("pending");
  });

  it("a bad filter is a 400 naming the field, and nothing changes", async () => {
    const queue = uniqueQueue("bulk-bad");
    await enqueue(queue, { tasks: [{ type: "a" }, { type: "a" }] });
    const before = await snapshot(queue);
    const cases: Array<[unknown, RegExp]> = [
      [{ action: "cancel", filter: { state: "dead" } }, /^filter\.state: cancel acts on pending or processing tasks/],
      [{ action: "redrive", filter: { state: "cancelled" } }, /^filter\.state: redrive acts on dead tasks/],
      [{ action: "cancel", filter: { kind: "a" } }, /^filter: .*kind/],
      [{ action: "cancel", filter: { type: "no spaces allowed" } }, /^filter\.type: /],
      [{ action: "cancel", filter: { created_after: "yesterday" } }, /^filter\.created_after: /],
      [
        { action: "cancel", filter: { created_after: "2026-01-02T00:00:00Z", created_before: "2026-01-01T00:00:00Z" } },
        /^filter\.created_before: must be later than created_after/,
      ],
      [{ action: "delete", filter: {} }, /^action: /],
      [{ action: "cancel" }, /^filter: /],
      [{ action: "cancel", filter: {}, limit: 1001 }, /^limit: /],
    ];
    for (const [body, message] of cases) {
      expectError(await bulk(queue, body), 400, "invalid_request", message);
    }
    expect(await snapshot(queue)).toEqual(before);
  });
});
