import { FINAL_STATES } from "../contracts/states";
import type { StoredTask } from "../contracts/stored-task";
import { coordinatorOf } from "../effects/wake";
import type { OperationContext } from "./context";
import { readTask } from "./task";

/** Whether a task is in a final state (completed, dead, cancelled — and any final state FINAL_STATES adds). */
export function isFinished(row: Pick<StoredTask, "state">): boolean {
  return (FINAL_STATES as readonly string[]).includes(row.state);
}

/**
 * Waits up to `timeoutMs` for a task to finish, wherever it lives (the task locator, as the single-task
 * routes: any shard, during moves), and answers it as it is then, with whether it is finished. A finished
 * task answers at once. Otherwise the wait is held by its queue's coordinator (partition 0), which the
 * effects owner tells when a task of the queue finishes (src/effects/task-waiters.ts) — nothing polls D1 —
 * and the task is read once more for the answer. The wait is named, and withdrawn when the client's
 * disconnect is seen (`op.signal`), so a wait whose client went away holds nothing; where a disconnect is
 * not seen, it ends at its timeout.
 *
 * @example
 * const { finished, row } = await waitForTask(op, id, 20_000);
 */
export async function waitForTask(
  op: OperationContext,
  id: string,
  timeoutMs: number,
): Promise<{ finished: boolean; row: StoredTask }> {
  const row = await readTask(op, id);
  if (isFinished(row) || timeoutMs === 0 || op.signal.aborted) return { finished: isFinished(row), row };
  const coordinator = coordinatorOf(op.env, row.queue);
  const waiterId = crypto.randomUUID();
  // The handler itself is cancelled with the request (nothing after its await runs): withdraw from here.
  const withdraw = () => op.defer(coordinator.withdrawTaskWait({ waiterId }));
  op.signal.addEventListener("abort", withdraw, { once: true });
  try {
    await coordinator.awaitTask({ id, timeoutMs, waiterId });
  } finally {
    op.signal.removeEventListener("abort", withdraw);
  }
  const now = await readTask(op, id);
  return { finished: isFinished(now), row: now };
}
