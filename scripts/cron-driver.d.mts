/** The clock the driver reads and the timers it sets: the system's by default, a fake one in tests. */
export interface CronClock {
  now(): number;
  setTimeout(run: () => void, ms: number): unknown;
  clearTimeout(timer: unknown): void;
}

export interface CronDriverOptions {
  /** Cron expressions (UTC, as Cloudflare reads them); each fires on its own, as each trigger does. */
  crons: string[];
  /** Runs one trigger: `cron` is the expression, `scheduledTime` the minute it was due. Not awaited
   * before the next is planned: a slow tick overlaps the next one, as in production. */
  fire(cron: string, scheduledTime: Date): unknown;
  clock?: CronClock;
}

export interface CronDriver {
  /** The next planned fire time and the crons due then; undefined once stopped. */
  next(): { at: Date; crons: string[] } | undefined;
  stop(): void;
}

/** The crons of `[env.<env>.triggers]` in a wrangler.toml file (none when the section is absent). */
export function readCrons(wranglerToml: string, env: string): string[];

/** Calls each cron at its due times until stopped. Throws at once on an expression croner rejects. */
export function startCronDriver(options: CronDriverOptions): CronDriver;

/** Runs the tick once on a local server (`POST /__tick` with the bearer token): the Worker's TickResult. */
export function fireTick(url: string, token: string): Promise<Record<string, unknown>>;
