import type { QueueFlowState } from "./flow-control";
import type { PrunedFlowKey } from "./flow-prune";

/**
 * Flow control by key (docs/flow-control.md), beside the lease that enforces it: a queue's limits are in its
 * config (`putQueueConfig`'s `flow`); every lease of the store applies them (TaskWrites.leaseTasks). These are
 * the rest: pausing and what the keys hold.
 */
export interface FlowControl {
  /**
   * Pauses or resumes a whole queue (`key` null) or one key of it. While paused nothing of it is handed out —
   * by any lease, on any isolate: the state is in one place — enqueues are accepted and running tasks finish.
   * Atomic; applies to leases made after it.
   */
  setFlowPaused(queue: string, key: string | null, paused: boolean, now: number): Promise<void>;
  /**
   * The queue's pause and up to `limit` (at most MAX_FLOW_KEYS_READ) of its keys, most due first: due and
   * running counts from the tasks themselves, pause, concurrency limit and whether it is reached, tokens.
   * What stats, the dashboard, metrics and health show of flow control.
   */
  readQueueFlow(queue: string, limit: number, now: number): Promise<QueueFlowState>;
  /**
   * Forgets the state of keys nothing needs (no live task, not paused, a full bucket) and of queues without
   * flow control any more, a bounded share per call, going on from where the last call stopped. A lease
   * after it hands out what it would have before. The cron tick's step; idempotent. Answers the rows it
   * deleted (at most a window's).
   */
  pruneIdleFlowKeys(now: number): Promise<{ pruned: number; keys: PrunedFlowKey[] }>;
}
