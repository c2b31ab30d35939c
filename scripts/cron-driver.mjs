// The cron schedule of wrangler.toml, run locally. `wrangler dev` never fires a cron on its own, so
// `npm start` plans each trigger's due times with croner and runs the tick at each one, as Cloudflare
// calls the deployed Worker — through POST /__tick with the bearer token: the ways wrangler offers to call
// scheduled() answer anyone, so the Worker refuses them in development (src/http/routes/local-tick.ts).
/* global AbortSignal */
import { readFileSync } from "node:fs";
import { clearTimeout, setTimeout } from "node:timers";
import { Cron } from "croner";
import { parse } from "smol-toml";

/** @typedef {import("./cron-driver.d.mts").CronClock} CronClock */
/** @typedef {import("./cron-driver.d.mts").CronDriverOptions} CronDriverOptions */
/** @typedef {import("./cron-driver.d.mts").CronDriver} CronDriver */

/** Longest single timer: Node caps a timer at ~24.8 days, and re-reading the clock at least hourly keeps a
 * schedule on time after the machine slept or its clock was set. */
const MAX_TIMER_MS = 60 * 60 * 1000;

/** POST /__tick answers once the tick has run, in milliseconds to a few seconds on a local database: 30 s
 * only catches a server that hangs. */
const FIRE_TIMEOUT_MS = 30_000;

/** Where the Worker runs the tick in development (LOCAL_TICK_PATH in src/http/routes/local-tick.ts). */
const LOCAL_TICK_PATH = "/__tick";

/** @type {CronClock} */
const systemClock = {
  now: () => Date.now(),
  setTimeout: (run, ms) => setTimeout(run, ms),
  clearTimeout: (timer) => clearTimeout(/** @type {NodeJS.Timeout} */ (timer)),
};

/**
 * The crons of `[env.<env>.triggers]` in a wrangler.toml file.
 * @param {string} wranglerToml
 * @param {string} env
 * @returns {string[]}
 * @example readCrons("wrangler.toml", "local") // ["* * * * *"]
 */
export function readCrons(wranglerToml, env) {
  const config = /** @type {{ env?: Record<string, { triggers?: { crons?: unknown } }> }} */ (
    parse(readFileSync(wranglerToml, "utf8"))
  );
  const crons = config.env?.[env]?.triggers?.crons ?? [];
  if (!Array.isArray(crons) || !crons.every((c) => typeof c === "string")) {
    throw new Error(`${wranglerToml}: env.${env}.triggers.crons must be a list of cron expressions`);
  }
  return crons;
}

/**
 * Calls `fire(cron, scheduledTime)` for each cron at each of its due times (UTC) until stopped. Several
 * crons due at the same moment each fire, as separate Cron Triggers do. A time missed while the machine
 * slept is skipped, not caught up: Cloudflare does not replay missed triggers either.
 * @param {CronDriverOptions} options
 * @returns {CronDriver}
 * @example
 * const driver = startCronDriver({ crons: ["* * * * *"], fire: () => fireTick(url, token) });
 * driver.next(); // { at: 2026-11-22T23:01:00.000Z, crons: ["* * * * *"] }
 */
export function startCronDriver({ crons, fire, clock = systemClock }) {
  const jobs = crons.map((cron) => ({ cron, pattern: new Cron(cron, { timezone: "UTC", paused: true }) }));
  /** @type {{ at: number, crons: string[] } | undefined} */
  let planned;
  /** @type {unknown} */
  let timer;
  let stopped = false;

  /** @param {number} after */
  const plan = (after) => {
    const due = jobs.flatMap(({ cron, pattern }) => {
      const at = pattern.nextRun(new Date(after));
      return at ? [{ cron, at: at.getTime() }] : [];
    });
    if (due.length === 0) {
      planned = undefined;
      return;
    }
    const at = Math.min(...due.map((d) => d.at));
    planned = { at, crons: due.filter((d) => d.at === at).map((d) => d.cron) };
    arm();
  };
  const arm = () => {
    if (!planned) return;
    const wait = Math.min(Math.max(planned.at - clock.now(), 0), MAX_TIMER_MS);
    timer = clock.setTimeout(onTimer, wait);
  };
  const onTimer = () => {
    if (stopped || !planned) return;
    if (clock.now() < planned.at) return arm(); // a long wait in hourly steps: not due yet
    const { at, crons: due } = planned;
    for (const cron of due) {
      Promise.resolve()
        .then(() => fire(cron, new Date(at)))
        .catch((error) => console.error(`edgeq: cron ${cron}: ${error instanceof Error ? error.message : error}`));
    }
    plan(Math.max(at, clock.now()));
  };

  plan(clock.now());
  return {
    next: () => (planned && !stopped ? { at: new Date(planned.at), crons: [...planned.crons] } : undefined),
    stop() {
      stopped = true;
      if (timer !== undefined) clock.clearTimeout(timer);
    },
  };
}

/**
 * Runs the tick once on a local server (POST /__tick with the bearer token) and returns what it did, the
 * Worker's TickResult. Throws unless it answers 2xx.
 * @param {string} url
 * @param {string} token
 * @returns {Promise<Record<string, unknown>>}
 * @example const result = await fireTick("http://127.0.0.1:8787", "edgeq-dev-token"); // { reaped: 0, ... }
 */
export async function fireTick(url, token) {
  const res = await fetch(`${url}${LOCAL_TICK_PATH}`, {
    method: "POST",
    headers: { Authorization: `Bearer ${token}` },
    signal: AbortSignal.timeout(FIRE_TIMEOUT_MS),
  });
  const body = await res.text();
  if (!res.ok) throw new Error(`${LOCAL_TICK_PATH} answered ${res.status}: ${body.slice(0, 200)}`);
  return /** @type {Record<string, unknown>} */ (JSON.parse(body));
}
