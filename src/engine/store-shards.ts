import type { PartitionSelection, DeliveredRow, TransitDestination, TransitRow, TransitSelection } from "./transit";
import type { QueueConfig, WhyUnavailable } from "./queue-config";
import type { StoredQueue } from "../contracts/stored-task";

/**
 * What the layers that choose databases (src/shards) ask of one task store (src/engine/store.ts): its
 * queues' configs, what it holds, and the tasks in transit to another store.
 */

/** Queue configs and records. */
export interface QueueRecords {
  /** A queue's effective config: stored values over the defaults (DEFAULT_QUEUE_CONFIG). */
  getQueueConfig(queue: string): Promise<QueueConfig>;
  /**
   * Stores the given fields of a queue's config over its stored or default values and answers the whole
   * config. One that breaks a rule spanning fields (`queueConfigProblem`: the cap below the base, a processor
   * this Worker lacks or cannot run) is `invalid_request` and stores nothing. Concurrent writes of one queue
   * resolve last-write-wins.
   */
  putQueueConfig(
    queue: string,
    patch: Partial<QueueConfig>,
    now: number,
    processors: readonly string[],
    whyUnavailable?: WhyUnavailable,
  ): Promise<QueueConfig>;
  /** Stores a whole config as given, unchecked: the copy of one already accepted (another shard's). */
  storeQueueConfig(queue: string, config: QueueConfig, now: number): Promise<void>;
  /** A queue's stored record, every field as stored, or null when it has none (defaults only). */
  readQueueRecord(queue: string): Promise<StoredQueue | null>;
  /** Replaces a queue's stored record with `record`, unchecked: the other half of a copy between stores. */
  replaceQueueRecord(record: StoredQueue): Promise<void>;
  /** The names of the queues with a stored record (a config or SQS settings), unsorted. */
  listConfiguredQueues(): Promise<string[]>;
  /** Deletes a queue's record (config, SQS settings, tags): it runs with the defaults again. Tasks are left as
   * they are. */
  deleteQueueRecord(queue: string): Promise<void>;
}

/** What the store holds. Each is one read; none reads finished tasks unless it says so. */
export interface Presence {
  /** Whether the store holds anything of the queue: a stored config or any task (live or finished). */
  hasQueueData(queue: string): Promise<boolean>;
  /** Which of `queues` have a live task here. */
  findQueuesWithLiveTasks(queues: string[]): Promise<string[]>;
  /** Which of `ids` are here: live, finished, or in transit out. */
  findTaskIdsHeld(ids: string[]): Promise<string[]>;
  /** How many of the queue's tasks are here, in any state or in transit out (with `partition`: only that
   * partition's, and those in transit to it). */
  countQueueTasksHeld(queue: string, partition?: PartitionSelection): Promise<number>;
  /** Whether the queue has a live task here that no cancel is pending for. */
  hasUncancelledLiveTask(queue: string): Promise<boolean>;
  /** The queues in use here, unsorted and distinct: those with a stored config and those with a live task no
   * cancel is pending for (both seen at one moment). */
  listQueueNamesInUse(): Promise<string[]>;
}

/**
 * Tasks in transit between stores: `takeOutForTransit` on the store a task leaves, `putInFromTransit` on the
 * one it joins, then `clearTransit` on the first. A task is live on one store or in transit, never both and
 * never neither, so never live on two. A transit row's `row` is the store's own record of the task, read
 * back by `putInFromTransit` of a store of the same kind.
 */
export interface Transit {
  /** Takes up to `limit` of the selected tasks out into transit, each whole with its destination, in one
   * atomic step; answers how many. */
  takeOutForTransit(selection: TransitSelection, to: TransitDestination, limit: number, now: number): Promise<number>;
  /** Up to `limit` of the tasks in transit out of this store, oldest id first. */
  listTransit(limit: number): Promise<TransitRow[]>;
  /**
   * Puts in tasks another store has in transit, by id, all or none: one already here (a repeat after a crash)
   * is left as it is; one whose dedupe key a live task here holds — or another of these rows took first —
   * goes in without its key (both were accepted: dropping one would lose it).
   */
  putInFromTransit(rows: DeliveredRow[]): Promise<void>;
  /** Forgets tasks in transit out of this store once delivered; answers the ids this call removed (two
   * relays at once: each task is counted by one). */
  clearTransit(ids: string[]): Promise<string[]>;
  /** Whether a task is in transit out of this store right now. */
  isInTransit(id: string): Promise<boolean>;
  /** Which of `ids` are in transit out of this store right now (one read). */
  findInTransit(ids: string[]): Promise<string[]>;
}
