import type { QueueFlowState } from "./flow-control";
import type { PrunedFlowKey } from "./flow-prune";
import type { FlowFigures } from "../contracts/flow-figures";
import type { StarvedKey } from "./flow-starved";

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
  /**
   * Every queue's `top` busiest keys (most due, then running) with their due and running tasks at `now`, one
   * OTHER_KEYS row per queue summing the others, and the queues paused as a whole: /metrics's key series,
   * bounded however many keys there are. Reads keyed live tasks only. Several stores' answers merge with
   * `mergeFlowFigures` (src/contracts/flow-figures.ts): a key's tasks are in one store.
   */
  flowFigures(now: number, top: number): Promise<FlowFigures>;
  /**
   * For each flow-controlled queue not paused (or only `queue`), its most starved key among its first
   * STARVED_KEYS_SCAN keys in key order: due tasks, none running or awaiting a retry, not paused, a whole
   * token when rate-limited — nothing stops a lease from starting its next task, yet none started — with
   * when that next task became due. Health's starvation check. Read-only, bounded per queue.
   */
  starvedKeys(now: number, queue?: string): Promise<StarvedKey[]>;
  /**
   * The cron tick's `starvedKeys`: the same answer for every queue, and each queue's window of keys moves on
   * (every key is looked at in its turn, once per ⌈keys / STARVED_KEYS_SCAN⌉ calls), its most starved key
   * remembered and looked at again by every later call until it runs. Writes a queue's cursor only when it
   * changed; overlapping calls move a window on once or twice, never skipping a key for good.
   */
  advanceStarvedKeys(now: number): Promise<StarvedKey[]>;
}
