/** A queue's health, best first. On its own (no imports) so the wire schemas, and the dashboard's types
 * derived from them, do not pull in the evaluation and its D1 reads. */
export const HEALTH_STATUSES = ["ok", "warn", "critical"] as const;
export type HealthStatus = (typeof HEALTH_STATUSES)[number];
