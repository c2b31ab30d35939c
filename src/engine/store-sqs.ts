/**
 * The SQS endpoint's settings of a queue (src/sqs/queue-registry.ts), kept with the queue's record
 * (QueueRecords): its DelaySeconds and ReceiveMessageWaitTimeSeconds defaults and its tags, read back with
 * `readQueueRecord` (`sqsDelayS`, `sqsReceiveWaitS`, `sqsTags`). Each write is atomic.
 */
export interface SqsSettings {
  /** Sets the given SQS-only settings (absent: kept) on a queue that has a record; one without is unchanged. */
  setSqsSettings(queue: string, settings: { delayS?: number; receiveWaitS?: number }): Promise<void>;
  /**
   * Adds tags to a queue (a key it has takes the new value) unless it would then carry more than `max`:
   * false, and nothing changes. Atomic against concurrent calls: both land, and the bound holds on the
   * merged set. A queue without a record gets one holding only its tags (its config the defaults).
   */
  addQueueTags(queue: string, tags: Record<string, string>, max: number, now: number): Promise<boolean>;
  /** Removes the queue's tags of these keys; keys it does not have are ignored. */
  removeQueueTags(queue: string, keys: string[]): Promise<void>;
}
