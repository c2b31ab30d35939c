/**
 * Renders a stored time (ms since the epoch, UTC) as ISO-8601, or null.
 *
 * Time is a parameter throughout: every engine function takes `now` from its caller, and the coordinator
 * has a replaceable `now`, so tests move the clock instead of sleeping (fake timers reach neither D1 nor
 * Durable Object alarms).
 */
export function toIso(ms: number): string;
export function toIso(ms: number | null | undefined): string | null;
export function toIso(ms: number | null | undefined): string | null {
  return ms == null ? null : new Date(ms).toISOString();
}
