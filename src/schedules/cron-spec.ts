import { Cron } from "croner";
import { EdgeqError } from "../contracts/errors";
import { LATEST_ALARM_AT, MAX_CRON_CHARS, MAX_EVERY_S, MIN_EVERY_S } from "../contracts/limits";

/** When a schedule fires: the slots after a time, computed by croner (cron, time zones, DST) or as fixed
 * intervals for `@every`. */
export interface CronSpec {
  /** The first slot strictly after `after` (ms), or null when the expression has no more. */
  next(after: number): number | null;
}

const EVERY = /^@every\s+(\d+)\s*(s|m|h|d)$/;
const UNIT_S = { s: 1, m: 60, h: 3600, d: 86400 } as const;

/** True when `zone` is an IANA time zone this runtime knows. */
function knownZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

/**
 * Parses a schedule's expression in its time zone, or throws `invalid_request` naming the field and why.
 * - 5 fields (minute first) or 6 (second first), as croner reads them, in `timezone` with its DST rules:
 *   a local time that does not exist on a spring-forward day fires at the first time after the gap, and
 *   one that occurs twice on a fall-back day fires once.
 * - `@every 30s` (also m, h, d): every interval, on multiples of it since the Unix epoch, so the slots are
 *   the same whenever and wherever they are computed; the time zone does not apply.
 *
 * @example
 * const spec = parseCronSpec("0 30 2 * * *", "Europe/Berlin");
 * spec.next(Date.now());
 */
export function parseCronSpec(cron: string, timezone: string): CronSpec {
  const expression = cron.trim();
  if (expression.length > MAX_CRON_CHARS) {
    throw new EdgeqError("invalid_request", `cron: at most ${MAX_CRON_CHARS} characters`);
  }
  if (!knownZone(timezone)) {
    throw new EdgeqError("invalid_request", `timezone: "${timezone}" is not an IANA time zone (e.g. Europe/Berlin)`);
  }
  const every = EVERY.exec(expression);
  if (every) {
    const seconds = Number(every[1]) * UNIT_S[every[2] as keyof typeof UNIT_S];
    if (seconds < MIN_EVERY_S || seconds > MAX_EVERY_S) {
      throw new EdgeqError("invalid_request", `cron: @every must be from ${MIN_EVERY_S} s to ${MAX_EVERY_S} s`);
    }
    const ms = seconds * 1000;
    return { next: (after) => (Math.floor(after / ms) + 1) * ms };
  }
  if (expression.startsWith("@every")) {
    throw new EdgeqError(
      "invalid_request",
      "cron: @every takes a whole number and a unit, e.g. @every 30s or @every 5m",
    );
  }
  const fields = expression.split(/\s+/).length;
  if (!expression.startsWith("@") && fields !== 5 && fields !== 6) {
    throw new EdgeqError(
      "invalid_request",
      `cron: expected 5 fields (minute first) or 6 (second first), got ${fields}`,
    );
  }
  let job: Cron;
  try {
    job = new Cron(expression, { timezone, paused: true });
  } catch (error) {
    throw new EdgeqError("invalid_request", `cron: ${(error as Error).message}`);
  }
  return {
    next: (after) => {
      const date = job.nextRun(new Date(after));
      return date ? date.getTime() : null;
    },
  };
}

/**
 * The first slot of a new or changed schedule, strictly after `now` — or `invalid_request` naming `cron`
 * when there is none an alarm can wait for: an expression no date matches (`0 0 30 2 *`, 30 February) would
 * be stored and never fire.
 *
 * @example
 * const next = firstSlot(parseCronSpec("0 3 * * *", "UTC"), "0 3 * * *", Date.now());
 */
export function firstSlot(spec: CronSpec, cron: string, now: number): number {
  const next = spec.next(now);
  if (next === null || next > LATEST_ALARM_AT) {
    throw new EdgeqError(
      "invalid_request",
      `cron: "${cron.trim()}" matches no date before ${new Date(LATEST_ALARM_AT).getUTCFullYear()} (such as 30 February), so the schedule would never fire`,
    );
  }
  return next;
}

/** The next `n` slots after `after` (fewer when the expression ends). */
export function nextSlots(spec: CronSpec, after: number, n: number): number[] {
  const slots: number[] = [];
  let at = after;
  while (slots.length < n) {
    const next = spec.next(at);
    if (next === null) break;
    slots.push(next);
    at = next;
  }
  return slots;
}
