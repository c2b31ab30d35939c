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
  if (ms == null) return null;
  let iso = rendered.get(ms);
  if (iso === undefined) {
    if (rendered.size >= RENDERED_TIMES) rendered.clear();
    iso = new Date(ms).toISOString();
    rendered.set(ms, iso);
  }
  return iso;
}

/**
 * Times rendered lately. The times of a page of views repeat (a lease of 100 from one pack renders 5 distinct
 * ones 500 times: the pack's creation and run time, the lease's expiry, start and update), and rendering one
 * took most of a leased view's JavaScript; a lookup is cheaper.
 */
const rendered = new Map<number, string>();

/** Distinct times kept before the memo starts over: a few pages' worth (a page holds at most a few hundred),
 * so it stays small in a long-lived isolate. */
const RENDERED_TIMES = 1024;
