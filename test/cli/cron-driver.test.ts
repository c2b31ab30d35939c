import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { parse } from "smol-toml";
import { describe, expect, it } from "vitest";
import { fireTick, readCrons, startCronDriver, type CronClock } from "../../scripts/cron-driver.mjs";

/** A clock the test moves: timers run when it passes their time, in order, never by waiting. */
class FakeClock implements CronClock {
  private timers: Array<{ id: number; at: number; run: () => void }> = [];
  private ids = 0;
  /** The longest delay any timer was set for. */
  longestDelay = 0;

  constructor(private t: number) {}

  now = () => this.t;

  setTimeout = (run: () => void, ms: number) => {
    this.longestDelay = Math.max(this.longestDelay, ms);
    this.timers.push({ id: ++this.ids, at: this.t + ms, run });
    return this.ids;
  };

  clearTimeout = (id: unknown) => {
    this.timers = this.timers.filter((timer) => timer.id !== id);
  };

  /** Moves the clock to `iso`, running each timer due on the way at its own time. */
  async advanceTo(iso: string): Promise<void> {
    const target = Date.parse(iso);
    for (;;) {
      const due = this.timers.filter((timer) => timer.at <= target).sort((a, b) => a.at - b.at)[0];
      if (!due) break;
      this.timers = this.timers.filter((timer) => timer !== due);
      this.t = Math.max(this.t, due.at);
      due.run();
      await new Promise((resolve) => setImmediate(resolve)); // let the fired calls run
    }
    this.t = target;
  }

  /** Jumps the clock without running timers (the machine slept), then runs what is due. */
  async sleepUntil(iso: string): Promise<void> {
    this.t = Date.parse(iso);
    await this.advanceTo(iso);
  }
}

function recorder() {
  const fired: string[] = [];
  return { fired, fire: (cron: string, at: Date) => void fired.push(`${at.toISOString()} ${cron}`) };
}

describe("the local cron driver (npm start)", () => {
  it("fires each cron at its due minutes, each on its own when two are due together", async () => {
    const clock = new FakeClock(Date.parse("2026-01-01T00:03:30Z"));
    const { fired, fire } = recorder();
    const driver = startCronDriver({ crons: ["*/20 * * * *", "0 * * * *"], fire, clock });
    expect(driver.next()).toEqual({ at: new Date("2026-01-01T00:20:00Z"), crons: ["*/20 * * * *"] });
    await clock.advanceTo("2026-01-01T01:10:00Z");
    expect(fired).toEqual([
      "2026-01-01T00:20:00.000Z */20 * * * *",
      "2026-01-01T00:40:00.000Z */20 * * * *",
      "2026-01-01T01:00:00.000Z */20 * * * *",
      "2026-01-01T01:00:00.000Z 0 * * * *",
    ]);
    expect(driver.next()).toEqual({ at: new Date("2026-01-01T01:20:00Z"), crons: ["*/20 * * * *"] });
    driver.stop();
    await clock.advanceTo("2026-01-01T03:00:00Z");
    expect(fired).toHaveLength(4);
    expect(driver.next()).toBeUndefined();
  });

  it("reads times in UTC, as Cloudflare does", async () => {
    const clock = new FakeClock(Date.parse("2026-06-30T23:30:00Z"));
    const { fired, fire } = recorder();
    startCronDriver({ crons: ["15 0 1 * *"], fire, clock }).next();
    await clock.advanceTo("2026-07-01T00:20:00Z");
    expect(fired).toEqual(["2026-07-01T00:15:00.000Z 15 0 1 * *"]);
  });

  it("waits for a far-off time in steps of at most an hour, and fires it once, on time", async () => {
    const clock = new FakeClock(Date.parse("2026-03-01T12:00:00Z"));
    const { fired, fire } = recorder();
    const driver = startCronDriver({ crons: ["0 0 1 1 *"], fire, clock });
    expect(driver.next()?.at).toEqual(new Date("2027-01-01T00:00:00Z"));
    await clock.advanceTo("2027-01-02T00:00:00Z");
    expect(fired).toEqual(["2027-01-01T00:00:00.000Z 0 0 1 1 *"]);
    expect(clock.longestDelay).toBeLessThanOrEqual(60 * 60 * 1000);
    driver.stop();
  });

  it("skips the minutes a sleeping machine missed instead of firing them all at once", async () => {
    const clock = new FakeClock(Date.parse("2026-01-01T00:00:30Z"));
    const { fired, fire } = recorder();
    const driver = startCronDriver({ crons: ["* * * * *"], fire, clock });
    await clock.sleepUntil("2026-01-01T00:07:10Z");
    // The late timer fires the minute it was set for, once; the next is the next minute from now.
    expect(fired).toEqual(["2026-01-01T00:01:00.000Z * * * * *"]);
    expect(driver.next()?.at).toEqual(new Date("2026-01-01T00:08:00Z"));
    driver.stop();
  });

  it("refuses an expression it cannot read", () => {
    expect(() => startCronDriver({ crons: ["61 * * * *"], fire: () => {} })).toThrow();
  });

  it("runs the local environment's schedule, the same as production's", () => {
    const production = (parse(readFileSync("wrangler.toml", "utf8")) as { triggers: { crons: string[] } }).triggers;
    expect(readCrons("wrangler.toml", "local")).toEqual(production.crons);
    expect(readCrons("wrangler.toml", "local").length).toBeGreaterThan(0);
  });
});

describe("fireTick (each due time of npm start's schedule)", () => {
  /** A server on 127.0.0.1 that records each request and answers `status` with `body`. */
  async function recordingServer(status: number, body: string) {
    const seen: string[] = [];
    const server = createServer((req, res) => {
      seen.push(`${req.method} ${req.url} ${req.headers.authorization ?? "-"}`);
      res.writeHead(status, { "Content-Type": "application/json" }).end(body);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    return { url: `http://127.0.0.1:${port}`, seen, close: () => new Promise((resolve) => server.close(resolve)) };
  }

  it("runs the tick on POST /__tick with the bearer token, never on wrangler's unauthenticated routes", async () => {
    const server = await recordingServer(200, JSON.stringify({ reaped: 2, woken: ["q"] }));
    try {
      expect(await fireTick(server.url, "the-token")).toEqual({ reaped: 2, woken: ["q"] });
      expect(server.seen).toEqual(["POST /__tick Bearer the-token"]);
    } finally {
      await server.close();
    }
  });

  it("throws with the status and the start of the answer when the tick is refused", async () => {
    const server = await recordingServer(401, '{"error":{"code":"unauthorized"}}');
    try {
      await expect(fireTick(server.url, "wrong")).rejects.toThrow(/\/__tick answered 401: .*unauthorized/);
    } finally {
      await server.close();
    }
  });
});
