/**
 * Time is a parameter: every engine function takes `now` (ms since the epoch) from its caller, so tests
 * move the clock instead of sleeping (Vitest fake timers do not reach D1 or Durable Object alarms).
 */
export type Clock = () => number;

export const systemClock: Clock = () => Date.now();

export const SECOND_MS = 1000;

export function toIso(ms: number): string;
export function toIso(ms: number | null | undefined): string | null;
export function toIso(ms: number | null | undefined): string | null {
  return ms == null ? null : new Date(ms).toISOString();
}
