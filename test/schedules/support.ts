import { sql } from "drizzle-orm";
import { fireDueSchedules, type FireReport } from "../../src/schedules/fire-schedules";
import { MAX_PAYLOAD_BYTES } from "../../src/contracts/limits";
import { deleteSchedule, getSchedule, upsertSchedule } from "../../src/schedules/schedule-store";
import { db, allRows } from "../helpers";

/** The tasks of a queue, oldest id first. */
export async function tasksOf(queue: string): Promise<Array<{ id: string; state: string }>> {
  const rows = await allRows<{ id: string; state: string }>(sql`SELECT id, state FROM tasks WHERE queue = ${queue}`);
  return rows.sort((a, b) => (a.id < b.id ? -1 : 1));
}

/** Fires at `now` and returns what happened to schedule `name` (other tests' schedules may fire too: the
 * tests share one D1, so only this schedule's report is looked at). */
export async function fireAt(name: string, now: number): Promise<FireReport | undefined> {
  const { reports } = await fireDueSchedules(db(), now);
  return reports.find((r) => r.name === name);
}

/** Fires schedule `name` at each of its slots in turn, `count` times; the slots fired. */
export async function fireEachSlot(name: string, count: number): Promise<number[]> {
  const fired: number[] = [];
  for (let i = 0; i < count; i++) {
    const { next_run_at } = await getSchedule(db(), name);
    const report = await fireAt(name, next_run_at);
    fired.push(...(report?.enqueued.map((e) => e.slot) ?? []));
  }
  return fired;
}

/** Deletes a test's schedule so later passes of other tests do not fire it. */
export async function dropSchedule(name: string): Promise<void> {
  await deleteSchedule(db(), name);
}

/**
 * Stores a schedule into `queue` whose every slot's task the queue refuses: its payload is over the enqueue
 * limit. PUT refuses such a schedule now; it is stored directly, as a PUT from before that check stored it.
 * `firstSlot` is its next_run_at (the first slot of `cron` after `now`).
 */
export async function storeRefusedSchedule(
  name: string,
  queue: string,
  cron: string,
  firstSlot: number,
  now: number,
): Promise<void> {
  const task = { payload: "x".repeat(MAX_PAYLOAD_BYTES + 1) };
  const input = { queue, cron, timezone: "UTC", task, overlap: "skip", catch_up: "none", paused: false } as const;
  await upsertSchedule(db(), name, input, firstSlot, now);
}
