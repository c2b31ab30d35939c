import { applyD1Migrations } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { encodeTime } from "ulid";
import { COUNTER_FOLD_CURSOR } from "../../src/engine/counters";

/**
 * The counter fold's cursor (src/engine/counters-in-row.ts) placed before every clock range's end (2199): tasks
 * below it are counted on their path. Test files share the database and a tick's fold moves the cursor to
 * its `now`, so without this a file's counting would depend on which files ran a tick before it. Files that
 * test counting in rows start after the cursor (test/support/fold-clock.ts: 2200 or later).
 */
const COUNTED_ON_PATH_UNTIL = encodeTime(Date.parse("2199-01-01T00:00:00.000Z"), 10) + "0".repeat(16);

/** Applies the migrations wrangler applies to a shard (those not applied yet) and places the fold's cursor. */
export async function prepareShard(db: D1Database): Promise<void> {
  await applyD1Migrations(db, env.TEST_MIGRATIONS);
  await db
    .prepare(
      `INSERT INTO sweep_cursors (name, position) VALUES (?1, ?2)
       ON CONFLICT (name) DO UPDATE SET position = max(position, excluded.position)`,
    )
    .bind(COUNTER_FOLD_CURSOR, COUNTED_ON_PATH_UNTIL)
    .run();
}

/** The pairs of databases (vitest.config.ts) that stand in for the two shards, one pair per file. */
export type OwnShardPair = "TICK" | "SETTLE";

/**
 * The Worker's bindings with its two shards (DB, DB_1) replaced by a pair of databases of one test file's own
 * (`${pair}_DB`, `${pair}_DB_1`, migrated like the shards), for a file whose cron ticks read the whole database
 * many times over: the tests that stop a tick at every D1 call. On the shards every file shares, a tick there
 * also evaluated the health of, woke and swept what every file before it left (thousands of queues by the end
 * of the worker project), so its cost and its D1 calls grew with what ran before it. Everything reached through
 * these bindings uses the pair; a Durable Object (a coordinator woken by the tick) reads its own bindings, the
 * shared shards, where these files' queues do not exist: it finds nothing to do, as it found nothing to do for
 * their pull queues before.
 *
 * @example
 * const shards = await ownShards("TICK");
 * await runTick(shards, now); // reaps, prunes and folds TICK_DB and TICK_DB_1 only
 */
export async function ownShards(pair: OwnShardPair): Promise<typeof env> {
  const bindings = env as unknown as Record<string, D1Database>;
  const home = bindings[`${pair}_DB`]!;
  const second = bindings[`${pair}_DB_1`]!;
  await prepareShard(home);
  await prepareShard(second);
  return { ...env, DB: home, DB_1: second };
}
