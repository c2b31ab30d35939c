import { expect, it } from "vitest";
import { ProcessingChanged, PULL } from "../../src/contracts/queue-processing";
import { PROCESSORS, T0, uniqueQueue } from "../helpers";
import { describeStore } from "./conformance/store-kinds";

// An enqueue told which processing its tasks were checked for (src/operations/enqueue-checks.ts) stores
// nothing when the queue's stored processing differs, and says what it is; when it matches, it stores and
// counts as an unguarded enqueue does, writing the same rows. And its refusals name the caller's fields.

describeStore("enqueueTasks options: checkedFor and field", (kind) => {
  const store = () => kind.store();

  /** The queue's tasks (any state) and its `enqueued` counter, through the port. */
  async function stored(queue: string): Promise<{ tasks: number; counted: number }> {
    const { counts } = await store().queueStats(queue, {}, T0);
    const sums = await store().sumCounters({ queue });
    const counted = sums.reduce((n, row) => n + (row.enqueued ?? 0), 0);
    return { tasks: Object.values(counts).reduce((a, b) => a + b, 0), counted };
  }

  it("stores nothing when the queue is push and the tasks were checked for pull, and names the processing", async () => {
    const queue = uniqueQueue("guard");
    await store().putQueueConfig(queue, { mode: "push", processor: "echo" }, T0, PROCESSORS);
    const error = await store()
      .enqueueTasks(queue, [{ type: "x" }, { type: "y" }], T0, { checkedFor: PULL })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ProcessingChanged);
    expect((error as ProcessingChanged).processing).toEqual({ mode: "push", processor: "echo" });
    expect(await stored(queue)).toEqual({ tasks: 0, counted: 0 });
  });

  it("stores nothing when another processor now runs the queue, or when it turned pull", async () => {
    const queue = uniqueQueue("guard");
    await store().putQueueConfig(queue, { mode: "push", processor: "tag" }, T0, PROCESSORS);
    const echo = { mode: "push", processor: "echo" } as const;
    await expect(store().enqueueTasks(queue, [{}], T0, { checkedFor: echo })).rejects.toBeInstanceOf(ProcessingChanged);
    await store().putQueueConfig(queue, { mode: "pull" }, T0, PROCESSORS);
    await expect(store().enqueueTasks(queue, [{}], T0, { checkedFor: echo })).rejects.toMatchObject({
      processing: PULL,
    });
    expect(await stored(queue)).toEqual({ tasks: 0, counted: 0 });
  });

  it("stores and counts as checked when the processing matches, writing the rows an unguarded enqueue writes", async () => {
    const written = async (queue: string, checked: boolean) => {
      const meter = kind.measure();
      meter.reset();
      const tasks = Array.from({ length: 20 }, (_, i) => ({ type: "echo", payload: { text: `${i}` } }));
      const push = { mode: "push", processor: null } as const;
      await meter.store.enqueueTasks(queue, tasks, T0, checked ? { checkedFor: push } : {});
      return meter.rowsWritten();
    };
    const guarded = uniqueQueue("guard");
    const plain = uniqueQueue("guard");
    for (const queue of [guarded, plain]) await store().putQueueConfig(queue, { mode: "push" }, T0, PROCESSORS);
    expect(await written(guarded, true)).toBe(await written(plain, false));
    expect(await stored(guarded)).toEqual({ tasks: 20, counted: 20 });
    // A queue with no stored config is a pull queue.
    const fresh = uniqueQueue("guard");
    expect((await store().enqueueTasks(fresh, [{}], T0, { checkedFor: PULL })).tasks).toHaveLength(1);
  });

  it("guards an enqueue of client ids too (its insert is not batched with counters)", async () => {
    const queue = uniqueQueue("guard");
    await store().putQueueConfig(queue, { mode: "push" }, T0, PROCESSORS);
    const id = "01KB0000000000000000000000";
    await expect(store().enqueueTasks(queue, [{ id }], T0, { checkedFor: PULL })).rejects.toBeInstanceOf(
      ProcessingChanged,
    );
    expect(await stored(queue)).toEqual({ tasks: 0, counted: 0 });
  });

  it("names a refused task's field as `options.field` says, and stores nothing", async () => {
    const queue = uniqueQueue("guard");
    const field = (i: number, name: string) => `items[${i + 10}]${name ? `.${name}` : ""}`;
    await expect(store().enqueueTasks(queue, [{}, { id: "not-a-ulid" }], T0, { field })).rejects.toMatchObject({
      message: expect.stringContaining("items[11].id"),
    });
    expect(await stored(queue)).toEqual({ tasks: 0, counted: 0 });
  });
});
