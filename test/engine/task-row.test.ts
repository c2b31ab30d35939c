import { expect, it } from "vitest";
import { leasedTaskJson, toLeasedTaskView } from "../../src/contracts/task-view";
import { uniqueQueue } from "../helpers";
import { storeFixtures } from "./conformance/fixtures";
import { describeStore } from "./conformance/store-kinds";

describeStore("the lease answer rendered as text", (kind) => {
  const { store, row } = storeFixtures(kind);

  it("is exactly the JSON of the lease views, stored JSON spliced in unparsed", async () => {
    const queue = uniqueQueue("render");
    const now = Date.now();
    const payload = { text: 'héllo \u2028 "quoted" \\ ☃', n: [1, 2.5, null, { deep: true }] };
    const then = [{ type: "next", payload: { a: 1 } }];
    const [task] = (await store().enqueueTasks(queue, [{ payload, then, dedupeKey: "k", group: "g" }], now)).tasks;
    const [first] = await store().leaseTasks({ queue, max: 1, visibilityTimeoutS: 30, holder: "w" }, now);
    await store().heartbeatTask(
      { id: task!.id, leaseToken: first!.leaseToken!, extendS: 30, checkpoint: { step: 2 } },
      now,
    );
    await store().failTasks([{ id: task!.id, leaseToken: first!.leaseToken!, message: "boom", retryAfterS: 0 }], now);
    const leased = await store().leaseTasks({ queue, max: 1, visibilityTimeoutS: 30, holder: "w" }, now + 1);
    expect(leased).toHaveLength(1);
    const view = JSON.parse(leasedTaskJson(leased[0]!));
    expect(view).toEqual(toLeasedTaskView(leased[0]!));
    expect(view).toMatchObject({ payload, then, checkpoint: { step: 2 }, result: null });
    expect((await row(task!.id)).attempts).toBe(2);
  });
});

// The D1 store renders it in SQLite, inside the lease statement (leasedViewJsonSql).
describeStore("the lease answer as the store renders it (leaseAnswers)", (kind) => {
  const { store, row } = storeFixtures(kind);

  it("is the same view toLeasedTaskView renders from the stored row, field for field", async () => {
    const queue = uniqueQueue("sqlview");
    // Times whose milliseconds are awkward for a float (.001, .999, .500, odd ones) and the epoch's first.
    const now = Date.parse("2026-11-23T03:59:59.999Z");
    const runAts = [1, now - 1, now - 999, now - 86_400_001, now - 123_457, Date.parse("2000-02-29T23:59:59.500Z")];
    const payload = { text: 'héllo \u2028 "quoted" \\ ☃', n: [1, 2.5, -0.000001, 1e21, null, { deep: true }] };
    const input = runAts.map((runAt, k) => ({
      runAt,
      priority: k - 2,
      payload: k === 0 ? undefined : { ...payload, k },
      dedupeKey: k % 2 ? `d${k}` : undefined,
      group: k % 3 ? `g${k}` : undefined,
      then: k === 2 ? [{ type: "next", payload: { a: 1 } }] : undefined,
      maxAttempts: 5,
    }));
    const ids = (await store().enqueueTasks(queue, input, now - 86_400_003)).tasks.map((t) => t.id);
    // The two highest priorities: one gets a history (progress, checkpoint, a failed attempt, an expired
    // lease), the other stays held through the final lease.
    const [storied, held] = await store().leaseTasks(
      { queue, max: 2, visibilityTimeoutS: 3600, holder: "w" },
      now - 60_001,
    );
    await store().heartbeatTask(
      {
        id: storied!.id,
        leaseToken: storied!.leaseToken!,
        extendS: 30,
        progress: 40,
        progressMessage: "half ✓",
        checkpoint: { step: 2 },
      },
      now - 60_001,
    );
    await store().failTasks(
      [{ id: storied!.id, leaseToken: storied!.leaseToken!, message: 'boom\n"x"', retryAfterS: 0 }],
      now - 59_000,
    );
    const [again] = await store().leaseTasks({ queue, max: 1, visibilityTimeoutS: 1, holder: "w" }, now - 58_000);
    expect(again!.id).toBe(storied!.id);

    // A provisional lease (claim_by set), with the queue's own visibility timeout and no holder.
    const leased = await store().leaseAnswers(
      { queue, max: 100, visibilityTimeoutS: null, holder: null, provisional: true },
      now,
    );
    expect(leased.map((t) => t.id).sort()).toEqual(ids.filter((id) => id !== held!.id).sort());
    for (const task of leased) {
      const view = JSON.parse(task.view);
      const stored = await row(task.id);
      expect(view).toEqual(toLeasedTaskView(stored));
      // The long poll's answer (leasedTaskJson, rendered in the Worker) has its keys in the same order.
      expect(Object.keys(view)).toEqual(Object.keys(JSON.parse(leasedTaskJson(stored))));
    }
    const history = JSON.parse(leased.find((t) => t.id === storied!.id)!.view);
    expect(history).toMatchObject({ progress: 40, progress_message: "half ✓", checkpoint: { step: 2 } });
    expect(history.errors.map((e: { message: string }) => e.message)).toEqual(['boom\n"x"', "lease expired"]);
    expect(history.claim_by).toEqual(expect.any(String));
    // The answer is ordered as a lease is: priority, then run_at, then id.
    expect(leased.map((t) => t.priority)).toEqual([...leased.map((t) => t.priority)].sort((a, b) => b - a));
  });
});

describeStore("a task's dependency count in both renderings", (kind) => {
  const { store, row } = storeFixtures(kind);

  it("counts each dependency once, in the SQL view and in the Worker's, and waiting_on falls as they finish", async () => {
    const queue = uniqueQueue("depcount");
    const now = Date.parse("2026-11-23T04:10:00.000Z");
    const children = (await store().enqueueTasks(queue, [{}, {}, {}], now)).tasks.map((t) => t.id);
    const plain = (await store().enqueueTasks(queue, [{ type: "plain" }], now)).tasks[0]!.id;
    // A repeated id counts once.
    const [join] = (
      await store().enqueueTasks(queue, [{ type: "join", dependsOn: [...children, children[0]!] }], now + 1)
    ).tasks;
    const leased = await store().leaseTasks({ queue, max: 4, visibilityTimeoutS: 30, holder: "w" }, now + 2);
    expect(leased).toHaveLength(4);
    expect(await store().getTask(join!.id)).toMatchObject({ state: "waiting" });
    const children2 = leased.filter((t) => children.includes(t.id));
    await store().completeTasks(
      children2.map((t) => ({ id: t.id, leaseToken: t.leaseToken!, result: null })),
      now + 3,
    );
    const [answer] = await store().leaseAnswers(
      { queue, max: 1, visibilityTimeoutS: 30, holder: "w", provisional: false },
      now + 4,
    );
    expect(answer!.id).toBe(join!.id);
    const view = JSON.parse(answer!.view);
    const stored = await row(join!.id);
    expect(view).toEqual(toLeasedTaskView(stored));
    expect(view).toMatchObject({ dependency_count: 3, waiting_on: 0 });
    expect(toLeasedTaskView(await row(plain))).toMatchObject({ dependency_count: null, waiting_on: null });
  });
});
