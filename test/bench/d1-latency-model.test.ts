import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { modelD1, type D1ModelParams } from "../../bench/d1-latency-model";

// The D1 latency model of bench section 7 (bench/d1-latency-model.ts), on the real local D1 shards (DB,
// DB_1). It is a model of time, so these tests measure wall-clock time; the bounds are the model's own
// (a lower bound it must respect) or half-way between "side by side" and "one after the other", so a slow
// machine cannot make them fail, only a model that stops serialising or starts serialising everything.

const params = (over: Partial<D1ModelParams>): D1ModelParams => ({
  rttMs: 0,
  execMsPerStatement: 0,
  execMsPerRowWritten: 0,
  slowdown: 1,
  rttJitter: 0,
  ...over,
});

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const t0 = Date.now();
  await fn();
  return Date.now() - t0;
}

describe("D1 latency model", () => {
  it("runs the calls of one database one at a time, in the order they arrived", async () => {
    const db = modelD1(env.DB, params({ execMsPerStatement: 40 }));
    const finished: number[] = [];
    const ms = await timed(() =>
      Promise.all(
        [0, 1, 2, 3, 4].map(async (k) => {
          await db.db.prepare("SELECT ? AS k").bind(k).first();
          finished.push(k);
        }),
      ),
    );
    expect(finished).toEqual([0, 1, 2, 3, 4]);
    expect(ms).toBeGreaterThanOrEqual(5 * 40);
    expect(db.stats).toMatchObject({ calls: 5, statements: 5 });
    // Every call but the first waited for the ones before it: 40 + 80 + 120 + 160 ms at least.
    expect(db.stats.waitMs).toBeGreaterThanOrEqual(400);
    expect(db.stats.busyMs).toBeGreaterThanOrEqual(200);
  });

  it("lets two databases work side by side", async () => {
    const p = params({ execMsPerStatement: 60 });
    const a = modelD1(env.DB, p);
    const b = modelD1(env.DB_1, p);
    const five = (db: D1Database) =>
      Promise.all([0, 1, 2, 3, 4].map((k) => db.prepare("SELECT ? AS k").bind(k).first()));
    const ms = await timed(() => Promise.all([five(a.db), five(b.db)]));
    // Side by side: 5 × 60 = 300 ms; one database for all ten would be 600 ms.
    expect(ms).toBeGreaterThanOrEqual(300);
    expect(ms).toBeLessThan(450);
  });

  it("adds the round trip to every call, outside the database's hold", async () => {
    const db = modelD1(env.DB, params({ rttMs: 50 }));
    const ms = await timed(async () => {
      for (let k = 0; k < 3; k++) await db.db.prepare("SELECT 1").first();
    });
    expect(ms).toBeGreaterThanOrEqual(3 * 50);
    // Nothing modelled inside the hold: the database was held for the real calls only.
    expect(db.stats.busyMs).toBeLessThan(ms / 2);
  });

  it("charges rows written from D1's meta, and counts a batch's statements", async () => {
    const table = `model_probe_${crypto.randomUUID().replaceAll("-", "")}`;
    await env.DB.prepare(`CREATE TABLE ${table} (x INTEGER)`).run();
    try {
      const db = modelD1(env.DB, params({ execMsPerRowWritten: 20 }));
      const insert = db.db.prepare(`INSERT INTO ${table} (x) VALUES (1), (2), (3), (4), (5)`);
      const count = db.db.prepare(`SELECT count(*) AS n FROM ${table}`);
      const ms = await timed(() => db.db.batch([insert, count]));
      expect(db.stats).toMatchObject({ calls: 1, statements: 2, rowsWritten: 5 });
      expect(ms).toBeGreaterThanOrEqual(5 * 20);
      expect(await db.db.prepare(`SELECT count(*) AS n FROM ${table}`).first("n")).toBe(5);
    } finally {
      await env.DB.prepare(`DROP TABLE ${table}`).run();
    }
  });
});
