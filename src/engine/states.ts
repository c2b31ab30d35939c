/**
 * Task states, defined once. Transitions (each guarded in SQL by the engine function that makes it):
 *
 *   pending ──lease──▶ processing ──complete──▶ completed
 *      ▲                   │ fail / lease expired (attempts left) ──▶ pending (after backoff)
 *      │                   │ fail permanent / attempts exhausted  ──▶ dead
 *      │                   │ ack or heartbeat after a cancel request ──▶ cancelled
 *      └── redrive/retry ── dead | cancelled          pending ──cancel──▶ cancelled
 */
export const TASK_STATES = ["pending", "processing", "completed", "dead", "cancelled"] as const;
export type TaskState = (typeof TASK_STATES)[number];

/** Live tasks have `finished_at IS NULL`; the others are final until redriven. */
export const LIVE_STATES = ["pending", "processing"] as const satisfies readonly TaskState[];
export const FINAL_STATES = ["completed", "dead", "cancelled"] as const satisfies readonly TaskState[];
