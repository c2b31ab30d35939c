import { expect, it } from "vitest";
import { tasksField } from "../../src/contracts/task-field";
import { MAX_ENQUEUE_CHUNK_TASKS } from "../../src/contracts/limits";
import { slotIdFactory } from "../../src/shards/task-slot";
import { T0, uniqueQueue } from "../helpers";
import { describeStore } from "./conformance/store-kinds";

// An enqueue prepared for a batch of the caller's own (CallerBatches.prepareEnqueue, what prepareEnqueue in
// src/operations/batch-enqueue.ts hands out): its tasks commit with the caller's writes, or not at all.

const slotId = slotIdFactory();

describeStore("prepareEnqueue: an enqueue inside the caller's batch", (kind) => {
  const store = () => kind.store();
  const ownTable = "caller_batch_rows";

  async function ownInsert(id: string): Promise<D1PreparedStatement> {
    const d1 = kind.callerDb();
    await d1.prepare(`CREATE TABLE IF NOT EXISTS ${ownTable} (id TEXT PRIMARY KEY)`).run();
    return d1.prepare(`INSERT INTO ${ownTable} (id) VALUES (?)`).bind(id);
  }

  it("writes nothing until the batch runs; then the tasks and their counters commit with the caller's row", async () => {
    const queue = uniqueQueue("cbatch");
    const tasks = [{ payload: { n: 1 } }, { payload: { n: 2 }, priority: 5 }].map((t) => ({ ...t, id: slotId(0, T0) }));
    const prepared = store().prepareEnqueue(queue, tasks, T0, tasksField);
    expect(prepared.ids).toEqual(tasks.map((t) => t.id));
    expect(prepared.earliestRunAt).toBe(T0);
    expect(await store().findTaskState(tasks[0]!.id)).toBeNull();

    await kind.callerDb().batch([await ownInsert(queue), ...prepared.statements]);
    expect(await store().findTaskState(tasks[0]!.id)).toBe("pending");
    expect((await store().getTask(tasks[1]!.id)).priority).toBe(5);
    const [sums] = await store().sumCounters({ queue });
    expect(sums?.enqueued).toBe(2);
  });

  it("a batch the caller's own write fails stores no task", async () => {
    const queue = uniqueQueue("cbatch");
    const own = await ownInsert(queue);
    await kind.callerDb().batch([own]);
    const task = { id: slotId(0, T0) };
    const prepared = store().prepareEnqueue(queue, [task], T0, tasksField);
    await expect(kind.callerDb().batch([...prepared.statements, await ownInsert(queue)])).rejects.toThrow();
    expect(await store().findTaskState(task.id)).toBeNull();
    expect(await store().sumCounters({ queue })).toEqual([]);
  });

  it("a task whose dedupe key a live task holds is not created, and the batch commits", async () => {
    const queue = uniqueQueue("cbatch");
    const { tasks } = await store().enqueueTasks(queue, [{ dedupeKey: "k" }], T0);
    const again = { id: slotId(0, T0), dedupeKey: "k" };
    const prepared = store().prepareEnqueue(queue, [again], T0, tasksField);
    await kind.callerDb().batch([await ownInsert(queue), ...prepared.statements]);
    expect(await store().findTaskState(again.id)).toBeNull();
    expect(await store().findTaskState(tasks[0]!.id)).toBe("pending");
  });

  it("refuses more than one statement's worth, and a bad task naming its field, before anything is written", () => {
    const queue = uniqueQueue("cbatch");
    const many = Array.from({ length: MAX_ENQUEUE_CHUNK_TASKS + 1 }, () => ({ id: slotId(0, T0) }));
    expect(() => store().prepareEnqueue(queue, many, T0, tasksField)).toThrow(
      expect.objectContaining({ code: "payload_too_large" }),
    );
    expect(() =>
      store().prepareEnqueue(queue, [{ id: slotId(0, T0) }, { id: slotId(0, T0), startBy: T0 - 1 }], T0, tasksField),
    ).toThrow(/tasks\[1\]\.start_by/);
  });
});
