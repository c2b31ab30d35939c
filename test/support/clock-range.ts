/**
 * A span of time of a test file's own, for the files whose tests run what reads the whole database by time
 * rather than by queue: the cron tick (it reaps, prunes and wakes every queue), the retention prune's walk
 * over ids, the live index's front, the counters' fold (the oldest minutes first) and the firing of every
 * due schedule.
 *
 * The worker project's files share one local D1 per Vitest worker (`isolate: false`, vitest.config.ts), one
 * file after another. A sweep at time `t` touches whatever any earlier file left before `t`, and a file that
 * reads ids by time sees another's tasks in the same span. So each such file works in a range no other file
 * uses, given by its place in CLOCK_RANGE_FILES: nothing to pick by hand, nothing two files can both claim.
 *
 * The ranges lie in the past, from 1971 on, in spans of RANGE_DAYS: every other test runs on today's clock
 * (`Date.now()`, leases of seconds, tasks finished today), which a sweep in the past cannot reach however the
 * calendar moves — a sweep in the future would reap their leases and prune their results.
 * test/docs/clock-ranges.test.ts checks that each name is a test file that asks for its own range, and that
 * the last range ends a year before today.
 *
 * @example
 * const clock = clockRange("cron/tick-interrupted");
 * await runTick(env, clock.day(3)); // midnight of this file's fourth day
 */
export interface ClockRange {
  /** The range's first instant (midnight UTC). */
  start: number;
  /** The range's end (exclusive): `start` + RANGE_DAYS days. */
  end: number;
  /** Midnight of day `n` of the range (0-based); throws past its end. */
  day(n: number): number;
}

/**
 * Test files (under test/, without `.test.ts`) that sweep by time, in the order their ranges were given:
 * append a new one at the end, so no other file's range moves.
 */
export const CLOCK_RANGE_FILES = [
  "cron/tick",
  "cron/tick-interrupted",
  "cron/tick-reads",
  "engine/d1/prune-walk",
  "engine/d1/live-front",
  "engine/live-front",
  "events/bulk-events",
  "effects/every-entry-point",
  "health/checks",
  "metrics/metrics-route",
  "metrics/counters",
  "engine/counters",
  "engine/d1/counters-fold",
  "engine/expiry",
  "engine/unique-keys",
  "engine/unique-expiry-cost",
  "cron/tick-expiry",
  "effects/dependents-woken",
  "shards/remote-dependencies-tick",
] as const;

/**
 * Files that need their range in the future, from 2100 on: a Durable Object alarm set in the past fires at
 * once, on its own, so a file that drives the Scheduler's alarm by hand (runDurableObjectAlarm) cannot work
 * before today. Their sweeps do reach every earlier file's leftovers (a tick there reaps and prunes them all).
 */
export const FUTURE_CLOCK_RANGE_FILES = ["schedules/eviction"] as const;

export type ClockRangeFile = (typeof CLOCK_RANGE_FILES)[number] | (typeof FUTURE_CLOCK_RANGE_FILES)[number];

const DAY_MS = 86_400_000;
/**
 * Days per file: the widest file needs about 850 (engine/d1/prune-walk: tasks due a year after its window
 * test, pruned 30 days on), tick-interrupted one per D1 call of a tick (a few dozen). 1,000 leaves room, and
 * 19 files fit before 2024.
 */
export const RANGE_DAYS = 1_000;
/** Where the first range starts: far enough back for every file, after 1970 (a time of 0 reads as unset). */
export const RANGES_START = Date.parse("1971-01-01T00:00:00.000Z");
/** Where the first future range starts: far beyond any test's `Date.now()` and its tasks' delays. */
export const FUTURE_RANGES_START = Date.parse("2100-01-01T00:00:00.000Z");

/** The range of time `file` works in (see above). */
export function clockRange(file: ClockRangeFile): ClockRange {
  const past = (CLOCK_RANGE_FILES as readonly string[]).indexOf(file);
  const future = (FUTURE_CLOCK_RANGE_FILES as readonly string[]).indexOf(file);
  if (past < 0 && future < 0) throw new Error(`test: ${file} has no clock range: add it to CLOCK_RANGE_FILES`);
  const start =
    past >= 0 ? RANGES_START + past * RANGE_DAYS * DAY_MS : FUTURE_RANGES_START + future * RANGE_DAYS * DAY_MS;
  const end = start + RANGE_DAYS * DAY_MS;
  return {
    start,
    end,
    day(n) {
      if (n < 0 || n >= RANGE_DAYS) throw new Error(`test: day ${n} is outside ${file}'s clock range`);
      return start + n * DAY_MS;
    },
  };
}
