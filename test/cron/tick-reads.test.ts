import { env } from "cloudflare:workers";
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { LIVE_FRONT_CHUNK } from "../../src/contracts/limits";
import { runTick } from "../../src/cron/tick";
import { PRUNE_WINDOW } from "../../src/engine/purge";
import { DEFAULT_THRESHOLDS } from "../../src/health/thresholds";
import { db, uniqueQueue } from "../helpers";
import { clockRange } from "../support/clock-range";
import { meteredD1 } from "../support/metered-d1";
import { withDatabases } from "../support/metered-env";
import { seedPending } from "../support/seed-tasks";

const DAY = 86_400_000;

/** The tick reads the whole database, so this file works in a clock range of its own. */
const NOW = clockRange("cron/tick-reads").day(1);

/** Databases the tick walks (DB, DB_1, …). */
const shards = Object.keys(env).filter((name) => /^DB(_[1-9][0-9]*)?$/.test(name)).length;

/**
 * What one tick at NOW reads over every shard, the most one D1 call of it read, and what its statements
 * naming one of `queues` read (test files share the database: other files' tasks come and go meanwhile).
 * The tick also advances the moves other files have under way (src/shards/relay.ts): those statements name
 * the moving queue and are left out of the totals — a move's copy reads what the move has to copy (and
 * its finished-task part walks the source table: docs/scale.md), which is not what this file measures.
 */
async function tickReads(queues: string[]) {
  const moving = new Set(
    (await db().all<{ queue: string }>(sql`SELECT queue FROM placements WHERE moving_from IS NOT NULL`)).map(
      (r) => r.queue,
    ),
  );
  const all: Array<ReturnType<typeof meteredD1>> = [];
  const mine: Array<ReturnType<typeof meteredD1>> = [];
  const metered = withDatabases(env, (d1) => {
    const meter = meteredD1(d1, { only: (values) => !values.some((v) => moving.has(v as string)) });
    all.push(meter);
    return meter.db;
  });
  const both = withDatabases(metered, (d1) => {
    const meter = meteredD1(d1, { only: (values) => values.some((v) => queues.includes(v as string)) });
    mine.push(meter);
    return meter.db;
  });
  const result = await runTick(both, NOW);
  const rowsRead = all.reduce((n, m) => n + m.usage.rowsRead, 0);
  const largestCallRead = Math.max(...all.map((m) => m.usage.largestCallRead ?? 0));
  const queuesRead = mine.reduce((n, m) => n + m.usage.rowsRead, 0);
  return { rowsRead, largestCallRead, queuesRead, unhealthy: result.unhealthy, pruneWindows: result.pruneWindows };
}

/**
 * A tick whose health changes are already recorded: the reads of the ticks that follow, minute after minute.
 * Other files keep finishing tasks in days the prune deletes at NOW; a tick that prunes a backlog of them
 * takes one window after another (src/engine/purge.ts), so this measures a tick whose prune took one window
 * per shard, as a minute after minute does.
 */
async function steadyTickReads(queues: string[]) {
  await runTick(env, NOW);
  for (let tries = 0; ; tries++) {
    const reads = await tickReads(queues);
    if (reads.pruneWindows <= shards || tries === 20) return reads;
  }
}

describe("cron tick: what it reads", () => {
  it("does not grow with the live tasks of other queues: a backlog is read up to health's due-depth level", async () => {
    const backlog = uniqueQueue("backlog");
    const delayed = uniqueQueue("delayed");
    const queues = [backlog, delayed];
    const before = await steadyTickReads(queues);

    // N due tasks in one queue and N not yet due in another, then 2N of each.
    const n = 20_000;
    await seedPending(db(), backlog, n, { runAt: NOW - 60_000, createdAt: NOW - 60_000 });
    await seedPending(db(), delayed, n, { runAt: NOW + DAY, createdAt: NOW - 60_000 });
    const withN = await steadyTickReads(queues);
    await seedPending(db(), backlog, n, { runAt: NOW - 60_000, createdAt: NOW - 60_000, first: n });
    await seedPending(db(), delayed, n, { runAt: NOW + DAY, createdAt: NOW - 60_000, first: n });
    const with2N = await steadyTickReads(queues);

    // The same reads for N and 2N: the backlog counted to the critical level (5,000 by default), a few
    // probes for the rest — never the other 30,000 due tasks or the 40,000 not yet due.
    const critical = DEFAULT_THRESHOLDS.due_depth.critical!;
    expect(before.queuesRead).toBe(0);
    // The same up to a few rows: other files' ticks and wake-ups run beside this one on the shared database
    // (a full run read 5,004 for 2N against 5,002 for N); reading 2N would add thousands.
    expect(Math.abs(with2N.queuesRead - withN.queuesRead)).toBeLessThan(20);
    expect(withN.queuesRead).toBeGreaterThanOrEqual(critical);
    expect(withN.queuesRead).toBeLessThan(critical + 100);
    // The whole tick, every statement: 2N more live tasks (40,000) would add at least as many rows read to a
    // tick that read them; what other test files add or remove meanwhile is a few thousand at most, and the
    // retention prune's window on each shard (src/engine/purge.ts) up to 3 × PRUNE_WINDOW rows each — one
    // window per layout of a shard (its rows', and its packs': src/engine/packs/retention.ts).
    expect(with2N.pruneWindows).toBeLessThanOrEqual(2 * shards);
    expect(Math.abs(with2N.rowsRead - withN.rowsRead)).toBeLessThan(5_000 + shards * 3 * PRUNE_WINDOW);
    // The backlog is judged as a full count would judge it.
    expect(with2N.unhealthy).toContain(backlog);
    expect(with2N.unhealthy).not.toContain(delayed);
    // Counted only to the level, the backlog's reason says so: an alert never reads 10,000 for 40,000.
    const stored = await db().get<{ reasons: string }>(sql`SELECT reasons FROM queue_health WHERE queue = ${backlog}`);
    expect(JSON.parse(stored!.reasons)).toContainEqual(
      expect.objectContaining({
        check: "due_depth",
        value: critical,
        message: `at least ${critical} tasks are due and waiting (critical at ${critical})`,
      }),
    );
    // No statement (or batch) held the database for more than one walk's chunk.
    expect(with2N.largestCallRead).toBeLessThanOrEqual(LIVE_FRONT_CHUNK + 1);

    await db().run(sql`DELETE FROM tasks WHERE queue IN (${backlog}, ${delayed})`);
    await db().run(sql`DELETE FROM queue_health WHERE queue IN (${backlog}, ${delayed})`);
    // Up to 3 × 21 ticks over the whole database beside the suite's other files (a tick that first meets
    // their finished tasks prunes window after window): seconds on 2 cores, not the default 5 s.
  }, 120_000);
});
