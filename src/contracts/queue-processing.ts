/**
 * How a queue's tasks are run, as far as an enqueue checks them: its mode and, in push mode, its processor
 * (null: each task's own `type`). An enqueue to a push queue checks its tasks against the processors that
 * will run them (src/operations/enqueue-checks.ts), and the store's insert carries the processing it was
 * checked for as a guard (EnqueueOptions.checkedFor, src/engine/store-writes.ts), so that what it stores is
 * what was checked.
 */
export interface QueueProcessing {
  mode: "pull" | "push";
  processor: string | null;
}

/** A queue without a stored config: pull mode. */
export const PULL: QueueProcessing = { mode: "pull", processor: null };

/** The processing part of a queue's config. */
export function processingOf(config: QueueProcessing): QueueProcessing {
  return { mode: config.mode, processor: config.mode === "push" ? config.processor : null };
}

/** Whether two processings check tasks alike (a pull queue's processor setting checks nothing). */
export function sameProcessing(a: QueueProcessing, b: QueueProcessing): boolean {
  return a.mode === b.mode && (a.mode === "pull" || a.processor === b.processor);
}

/**
 * Thrown by an enqueue whose guard found the queue's processing changed since its tasks were checked
 * (`processing` is the stored one): nothing was inserted. The caller checks the tasks again and retries.
 */
export class ProcessingChanged extends Error {
  override readonly name = "ProcessingChanged";
  constructor(readonly processing: QueueProcessing) {
    super(
      `the queue's processing changed to ${processing.mode}${processing.processor ? ` (${processing.processor})` : ""}`,
    );
  }
}
