/**
 * Task states, defined once. Transitions (each guarded in SQL by the engine function that makes it):
 *
 *   pending ──lease──▶ processing ──complete──▶ completed
 *      ▲                   │ fail / lease expired (attempts left) ──▶ pending (after backoff)
 *      │                   │ release, or a long poll's lease left unclaimed ──▶ pending (attempt refunded)
 *      │                   │ fail permanent / attempts exhausted  ──▶ dead
 *      │                   │ ack or heartbeat after a cancel request ──▶ cancelled
 *      └── redrive/retry ── dead | cancelled | expired          pending ──cancel──▶ cancelled
 *      │
 *   waiting ──every dependency finished (completed; or failed under `continue`)──▶ pending
 *   (enqueued   ──a dependency dead / cancelled / expired, policy `fail`──▶ dead
 *    with       ──the same, policy `cancel`──▶ cancelled
 *    depends_on) ──cancel──▶ cancelled
 *
 *   pending or waiting, never leased, past its start deadline (`start_by`) ──cron tick──▶ expired
 *
 * A waiting task is live (no finished_at) but never leasable: its run_at is WAITING_RUN_AT until the batch
 * that finishes its last dependency releases it (src/engine/dependencies.ts, docs/dependencies.md).
 *
 * An expired (or unclaimed) lease is taken over by the next lease directly, processing ──▶ processing,
 * once due (src/engine/redelivery.ts); the cron reaper moves whatever nobody took. A task with a start deadline
 * is never leased at or after it unless it had started (redelivery.ts); the cron tick ends it `expired`
 * (src/engine/expire.ts). A task that started before its deadline is not expired by it, retries included.
 */
export const TASK_STATES = ["pending", "waiting", "processing", "completed", "dead", "cancelled", "expired"] as const;
export type TaskState = (typeof TASK_STATES)[number];

/** Final until redriven (`finished_at` set); pending, waiting and processing are live (`finished_at IS NULL`). */
export const FINAL_STATES = ["completed", "dead", "cancelled", "expired"] as const satisfies readonly TaskState[];

export type FinalState = (typeof FINAL_STATES)[number];

/** The final states an operator revives (redrive, retry): every one but completed. */
export const REVIVABLE_STATES = ["dead", "cancelled", "expired"] as const satisfies readonly TaskState[];
