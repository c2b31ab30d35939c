import { expect } from "vitest";
import { EdgeqError, type ErrorCode } from "../../../src/contracts/errors";
import type { NewTask } from "../../../src/engine/enqueue";
import type { StoredTask, TaskStore } from "../../../src/engine/store";
import { T0 } from "../../helpers";
import type { StoreKind } from "./store-kinds";

/** The visibility timeout the shortcuts lease with. */
export const VT_S = 30;
export const VT_MS = VT_S * 1000;

/** Most tasks of one queue a test snapshots (a test's queue holds a few). */
const SNAPSHOT_LIMIT = 10_000;

/** A leased task, with the token its holder presents. */
export type Leased = StoredTask & { leaseToken: string };

/**
 * Shortcuts for the conformance tests, each through the port of `kind`'s store: enqueue, lease, take a task
 * to completed or dead, read one back, snapshot a queue.
 *
 * @example
 * const { enqueueOne, leaseOne, row } = storeFixtures(kind);
 */
export function storeFixtures(kind: StoreKind) {
  const store = (): TaskStore => kind.store();

  /** Enqueues one task at `now` and returns its id. */
  async function enqueueOne(queue: string, task: NewTask = {}, now = T0): Promise<string> {
    const { tasks } = await store().enqueueTasks(queue, [task], now);
    return tasks[0]!.id;
  }

  /** Enqueues tasks at `now` and returns their ids in input order. */
  async function enqueueMany(queue: string, input: NewTask[], now = T0): Promise<string[]> {
    const { tasks } = await store().enqueueTasks(queue, input, now);
    return tasks.map((t) => t.id);
  }

  /** Leases up to `max` tasks with a 30 s visibility timeout. */
  function lease(queue: string, now: number, max = 100, holder: string | null = "w"): Promise<StoredTask[]> {
    return store().leaseTasks({ queue, max, visibilityTimeoutS: VT_S, holder }, now);
  }

  /** Leases exactly one task, failing the test if none is due. */
  async function leaseOne(queue: string, now: number): Promise<Leased> {
    const [task, ...rest] = await lease(queue, now, 1);
    expect(task, "a task should be due").toBeDefined();
    expect(rest).toEqual([]);
    expect(task!.leaseToken).toEqual(expect.any(String));
    return task as Leased;
  }

  /** Enqueues one task and takes it through lease -> complete. */
  async function completedTask(queue: string, task: NewTask = {}, now = T0): Promise<string> {
    const id = await enqueueOne(queue, task, now);
    const leased = await leaseOne(queue, now);
    expect(leased.id).toBe(id);
    const [outcome] = await store().completeTasks([{ id, leaseToken: leased.leaseToken }], now + 1);
    expect(outcome).toMatchObject({ ok: true, state: "completed" });
    return id;
  }

  /** Enqueues one task and takes it through lease -> permanent failure (dead). */
  async function deadTask(queue: string, task: NewTask = {}, now = T0): Promise<string> {
    const id = await enqueueOne(queue, task, now);
    const leased = await leaseOne(queue, now);
    expect(leased.id).toBe(id);
    const [outcome] = await store().failTasks(
      [{ id, leaseToken: leased.leaseToken, message: "broken", retryable: false }],
      now + 1,
    );
    expect(outcome).toMatchObject({ ok: true, state: "dead" });
    return id;
  }

  /** The task as stored now, every field. */
  function row(id: string): Promise<StoredTask> {
    return store().getTask(id);
  }

  /** Every task of a queue as stored now, every field, in id order: for before/after comparisons. */
  async function snapshot(queue: string, on: TaskStore = store()): Promise<StoredTask[]> {
    const { tasks, next_cursor } = await on.listTasks(queue, { limit: SNAPSHOT_LIMIT });
    expect(next_cursor, "a snapshot holds the whole queue").toBeNull();
    return tasks;
  }

  /** How many tasks of `queue` the store holds, in any state. */
  async function countTasks(queue: string): Promise<number> {
    const { counts } = await store().queueStats(queue, {}, T0);
    return Object.values(counts).reduce((n, c) => n + c, 0);
  }

  return { store, countTasks, enqueueOne, enqueueMany, lease, leaseOne, completedTask, deadTask, row, snapshot };
}

/** The shortcuts of one kind of store. */
export type StoreFixtures = ReturnType<typeof storeFixtures>;

/** Awaits `promise`, which must reject with an EdgeqError of `code`; returns the error. */
export async function expectEdgeqError(promise: Promise<unknown>, code: ErrorCode): Promise<EdgeqError> {
  let caught: unknown;
  try {
    await promise;
  } catch (error) {
    caught = error;
  }
  expect(caught, `expected an EdgeqError ${code}`).toBeInstanceOf(EdgeqError);
  expect((caught as EdgeqError).code).toBe(code);
  return caught as EdgeqError;
}
