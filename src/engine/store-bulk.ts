import type { BulkAction } from "../contracts/bulk";
import type { BulkChanged, TaskFilter } from "./bulk";

/**
 * An operator's actions on many tasks of a queue at once, chosen by a filter (src/engine/store.ts): cancel,
 * retry, redrive — what the single-task and queue-wide operator writes do, to the tasks a filter matches.
 */
export interface BulkWrites {
  /** How many tasks `action` would change under `filter` (see applyBulk), counting at most `cap + 1`. Writes
   * nothing. */
  countForBulk(queue: string, action: BulkAction, filter: TaskFilter, cap: number): Promise<number>;
  /** Applies `action` to at most `cap` matching tasks, in id order, atomically (one statement): a cancel ends
   * pending tasks cancelled and asks processing ones to stop (never one already asked); a retry (dead or
   * cancelled) or redrive (dead) revives them as `retryTask` does, skipping one whose dedupe key a live task
   * holds. Answers the count changed, the ids that ended cancelled or were revived, and whether more remain. */
  applyBulk(queue: string, action: BulkAction, filter: TaskFilter, cap: number, now: number): Promise<BulkChanged>;
}

export type { BulkChanged, TaskFilter } from "./bulk";
