import { expect } from "vitest";
import type { StoredTask } from "../../src/contracts/stored-task";
import { completeTasks } from "../../src/engine/complete";
import { enqueueTasks, type NewTask } from "../../src/engine/enqueue";
import { failTasks } from "../../src/engine/fail";
import { leaseTasks } from "../../src/engine/lease";
import { T0, db } from "../helpers";

/** Shared shortcuts for the engine tests: every one goes through the real engine and real D1. */

export const VT_S = 30;
export const VT_MS = VT_S * 1000;

/** Enqueues one task at `now` and returns its id. */
export async function enqueueOne(queue: string, task: NewTask = {}, now = T0): Promise<string> {
  const { tasks } = await enqueueTasks(db(), queue, [task], now);
  return tasks[0]!.id;
}

/** Enqueues tasks at `now` and returns their ids in input order. */
export async function enqueueMany(queue: string, input: NewTask[], now = T0): Promise<string[]> {
  const { tasks } = await enqueueTasks(db(), queue, input, now);
  return tasks.map((t) => t.id);
}

/** Leases up to `max` tasks with a 30 s visibility timeout. */
export function lease(queue: string, now: number, max = 100, holder: string | null = "w"): Promise<StoredTask[]> {
  return leaseTasks(db(), { queue, max, visibilityTimeoutS: VT_S, holder }, now);
}

/** Leases exactly one task, failing the test if none is due. */
export async function leaseOne(queue: string, now: number): Promise<StoredTask & { leaseToken: string }> {
  const [task, ...rest] = await lease(queue, now, 1);
  expect(task, "a task should be due").toBeDefined();
  expect(rest).toEqual([]);
  expect(task!.leaseToken).toEqual(expect.any(String));
  return task as StoredTask & { leaseToken: string };
}

/** Enqueues one task and takes it through lease -> complete. */
export async function completedTask(queue: string, task: NewTask = {}, now = T0): Promise<string> {
  const id = await enqueueOne(queue, task, now);
  const leased = await leaseOne(queue, now);
  expect(leased.id).toBe(id);
  const [outcome] = await completeTasks(db(), [{ id, leaseToken: leased.leaseToken }], now + 1);
  expect(outcome).toMatchObject({ ok: true, state: "completed" });
  return id;
}

/** Enqueues one task and takes it through lease -> permanent failure (dead). */
export async function deadTask(queue: string, task: NewTask = {}, now = T0): Promise<string> {
  const id = await enqueueOne(queue, task, now);
  const leased = await leaseOne(queue, now);
  expect(leased.id).toBe(id);
  const [outcome] = await failTasks(
    db(),
    [{ id, leaseToken: leased.leaseToken, message: "broken", retryable: false }],
    now + 1,
  );
  expect(outcome).toMatchObject({ ok: true, state: "dead" });
  return id;
}

/** The conformance suite's own (test/engine/conformance/fixtures.ts): one definition for both. */
export { expectEdgeqError } from "./conformance/fixtures";
