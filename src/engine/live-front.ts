import { sql, type SQL } from "drizzle-orm";
import { batchAll, type Db } from "../db/client";
import { LIVE_FRONT_BATCH, LIVE_FRONT_CHUNK, LIVE_FRONT_FIRST_LOOK, LIVE_FRONT_MIN_PENDING } from "../contracts/limits";
import { expiredClaimedSql, leasableSql, unclaimedExpiredSql } from "./redelivery";

/**
 * The front of the live index: what the cron tick reads instead of every live task.
 *
 * The `tasks_live` index orders each queue's live tasks by (priority DESC, run_at, id) — lease order. Take one
 * (queue, priority) run of it, a *segment*. A lease takes the first leasable tasks of its queue, and a
 * processing task's run_at is at most the moment it was leased, so a segment reads, from its start: the
 * tasks in flight and the due pending tasks (mostly in that order), then the pending tasks not yet due
 * (run_at > now). Every lease that can lapse — expired, or provisional and unclaimed — is in flight, so it
 * sits in the due part, and in practice ahead of the due pending tasks: a pending task gets ahead of a task
 * in flight only when it is enqueued with a run_at in the past or handed back, and the next lease takes it.
 *
 * So the tick walks each segment's due part from its start, with D1 reading one index entry per task, and
 * stops once it has passed `LIVE_FRONT_MIN_PENDING` due pending tasks of the segment and as many of the
 * queue's as the caller wants counted (health's due-depth levels): its reads grow with the tasks in flight
 * and the due backlog up to those counts, never with the pending tasks behind them, the tasks not yet due
 * or the finished ones. A lapsed lease behind more due pending tasks than that (only tasks enqueued with a
 * past run_at or handed back can put them there) is found once fewer are ahead of it; a lease takes it over
 * in its turn meanwhile, as always.
 */

/** One (queue, priority) run of the live index. */
export interface LiveSegment {
  queue: string;
  priority: number;
}

/** A processing task the walk found with its lease lapsed: expired (a provisional one unclaimed too: before
 * its expiry an unclaimed lease is still its holder's, src/engine/redelivery.ts). */
export interface LapsedTask {
  id: string;
  /** Counted in `lease_expired` (its lease_expires_at has passed). */
  expired: boolean;
  /** Counted in `overrun`. */
  overrun: boolean;
}

/** What the walk saw of one queue on one database. */
export interface QueueFront {
  queue: string;
  /** Due pending tasks passed: exact unless `capped`, then at least the count asked for. */
  due: number;
  /** The walk stopped before the end of a segment's due part (its figures are lower bounds). */
  capped: boolean;
  /** run_at of the oldest due pending task, or null (exact: it is the first one the walk meets). */
  oldest_due_at: number | null;
  /** Processing tasks passed whose lease ran out (lease_expires_at <= now). */
  lease_expired: number;
  /** Processing tasks passed that were first leased longer ago than the queue's max_run_s. */
  overrun: number;
  /** Whether a task passed can be leased now (due work: the coordinator is worth waking). */
  leasable: boolean;
  /** Lapsed leases passed: what the reaper tidies. */
  lapsed: LapsedTask[];
}

/** A queue's front before the walk has seen anything of it. */
export function emptyFront(queue: string): QueueFront {
  return {
    queue,
    due: 0,
    capped: false,
    oldest_due_at: null,
    lease_expired: 0,
    overrun: 0,
    leasable: false,
    lapsed: [],
  };
}

export interface FrontOptions {
  /** How many due pending tasks of a queue to count at most (health's largest due-depth level); the walk
   * passes at least LIVE_FRONT_MIN_PENDING of each segment whatever this says. Default: none beyond that. */
  dueCountFor?: (queue: string) => number;
}

/**
 * Every (queue, priority) segment of the live index on `db` (of `queue` only, when given), in index order: one
 * index probe per segment (a skip-scan written as a recursive CTE), never a read of each live task. `from`: the
 * table whose live index is walked (`tasks_live` of `tasks` by default; the pack store's `packs_live`).
 *
 * @example
 * const segments = await listLiveSegments(db);
 */
export async function listLiveSegments(db: Db, from: SQL = sql`tasks`, queue?: string): Promise<LiveSegment[]> {
  const next = (where: SQL) =>
    sql`(SELECT json_array(queue, priority) FROM ${from} WHERE finished_at IS NULL${where}
      ORDER BY queue, priority DESC LIMIT 1)`;
  // One queue's runs only: start at it and never step to the next queue.
  const first = queue === undefined ? sql`` : sql` AND queue = ${queue}`;
  const nextQueue = queue === undefined ? next(sql` AND queue > seg.k->>0`) : sql`NULL`;
  return db.all<LiveSegment>(sql`WITH RECURSIVE seg(k) AS (
      SELECT ${next(first)}
      UNION ALL
      SELECT coalesce(
        ${next(sql` AND queue = seg.k->>0 AND priority < seg.k->>1`)},
        ${nextQueue})
      FROM seg WHERE seg.k IS NOT NULL
    )
    SELECT k->>0 AS queue, k->>1 AS priority FROM seg WHERE k IS NOT NULL`);
}

/** Where a segment's walk goes on from: the last (run_at, id) it read. */
interface Position {
  runAt: number;
  id: string;
}

/** One statement's view of a stretch of a segment. */
interface Chunk {
  n: number;
  pending: number;
  oldest: number | null;
  lease_expired: number;
  overrun: number;
  leasable: number;
  lapsed: string;
  last: string | null;
}

/** Offset that makes any run_at (ms, possibly before 1970) a non-negative 17-digit number: the sort key of
 * the last position read is that number zero-padded, then the id. */
const RUN_AT_OFFSET = 8_640_000_000_000_000;

function parsePosition(last: string | null): Position | null {
  if (last === null) return null;
  return { runAt: Number(last.slice(0, 17)) - RUN_AT_OFFSET, id: last.slice(17) };
}

/** Reads up to `limit` entries of a segment's due part after `after`, in lease order; one row of figures. */
function chunkSql(segment: LiveSegment, after: Position | null, limit: number, maxRunMs: number | null, now: number) {
  const from = after === null ? sql`` : sql` AND (run_at, id) > (${after.runAt}, ${after.id})`;
  const overrun = maxRunMs === null ? sql`0` : sql`state = 'processing' AND started_at <= ${now - maxRunMs}`;
  return sql`SELECT count(*) AS n,
      coalesce(sum(state = 'pending'), 0) AS pending,
      min(CASE WHEN state = 'pending' THEN run_at END) AS oldest,
      coalesce(sum(state = 'processing' AND lease_expires_at <= ${now}), 0) AS lease_expired,
      coalesce(sum(${overrun}), 0) AS overrun,
      coalesce(max(leasable), 0) AS leasable,
      json_group_array(json_array(id, state = 'processing' AND lease_expires_at <= ${now}, ${overrun}))
        FILTER (WHERE lapsed) AS lapsed,
      max(printf('%017d', run_at + ${RUN_AT_OFFSET}) || id) AS last
    FROM (SELECT id, state, run_at, lease_expires_at, started_at,
        ${leasableSql(now)} AS leasable, (${unclaimedExpiredSql(now)} OR ${expiredClaimedSql(now)}) AS lapsed
      FROM tasks
      WHERE queue = ${segment.queue} AND finished_at IS NULL AND priority = ${segment.priority}
        AND run_at <= ${now}${from}
      ORDER BY run_at, id LIMIT ${limit})`;
}

/** A segment's walk so far. */
interface Walk {
  segment: LiveSegment;
  after: Position | null;
  /** The last statement read fewer entries than it asked for: the due part is done. */
  done: boolean;
  pending: number;
}

/**
 * Walks the front of every live segment on `db` (see the module comment) and returns, per queue, what it
 * saw: due pending tasks (counted up to what `dueCountFor` asks), the oldest due, expired and overrunning
 * leases, whether anything is leasable, and the lapsed leases to reap. Read-only. The first look at every
 * segment goes in batches of LIVE_FRONT_BATCH statements (one round trip each); a segment with more to
 * read goes on in statements of at most LIVE_FRONT_CHUNK entries, so no statement holds the database long.
 *
 * @example
 * const fronts = await readLiveFront(db, Date.now(), { dueCountFor: () => 10_000 });
 */
export async function readLiveFront(db: Db, now: number, opts: FrontOptions = {}): Promise<QueueFront[]> {
  const segments = await listLiveSegments(db);
  if (segments.length === 0) return [];
  const maxRun = new Map(
    (
      await db.all<{ name: string; max_run_s: number }>(
        sql`SELECT name, max_run_s FROM queues WHERE max_run_s IS NOT NULL`,
      )
    ).map((r) => [r.name, r.max_run_s * 1000]),
  );
  const fronts = new Map<string, QueueFront>();
  const frontOf = (queue: string) => {
    let front = fronts.get(queue);
    if (!front) fronts.set(queue, (front = emptyFront(queue)));
    return front;
  };
  const add = (walk: Walk, chunk: Chunk, limit: number) => {
    const front = frontOf(walk.segment.queue);
    front.due += chunk.pending;
    if (chunk.oldest !== null) front.oldest_due_at = Math.min(front.oldest_due_at ?? Infinity, chunk.oldest);
    front.lease_expired += chunk.lease_expired;
    front.overrun += chunk.overrun;
    front.leasable ||= chunk.leasable === 1;
    for (const [id, expired, overrun] of JSON.parse(chunk.lapsed) as Array<[string, number, number]>) {
      front.lapsed.push({ id, expired: expired === 1, overrun: overrun === 1 });
    }
    walk.pending += chunk.pending;
    walk.after = parsePosition(chunk.last) ?? walk.after;
    walk.done = chunk.n < limit;
  };
  const statement = (walk: Walk, limit: number) =>
    chunkSql(walk.segment, walk.after, limit, maxRun.get(walk.segment.queue) ?? null, now);

  // First look: every segment's first entries, many segments per round trip.
  const walks: Walk[] = segments.map((segment) => ({ segment, after: null, done: false, pending: 0 }));
  for (let i = 0; i < walks.length; i += LIVE_FRONT_BATCH) {
    const group = walks.slice(i, i + LIVE_FRONT_BATCH);
    const results = await batchAll<Chunk>(
      db,
      group.map((w) => statement(w, LIVE_FRONT_FIRST_LOOK)),
    );
    group.forEach((walk, k) => add(walk, results[k]![0]!, LIVE_FRONT_FIRST_LOOK));
  }
  // Then on, segment by segment in lease order, while the segment's own look-out or the queue's count wants more.
  for (const walk of walks) {
    const queue = walk.segment.queue;
    const wanted = () =>
      Math.max(LIVE_FRONT_MIN_PENDING - walk.pending, (opts.dueCountFor?.(queue) ?? 0) - frontOf(queue).due);
    while (!walk.done && wanted() > 0) {
      const limit = Math.min(LIVE_FRONT_CHUNK, wanted());
      const chunk = await db.get<Chunk>(statement(walk, limit));
      add(walk, chunk!, limit);
    }
    if (!walk.done) frontOf(queue).capped = true;
  }
  return [...fronts.values()];
}

/** A task as the reaper left it (src/engine/reap.ts). */
export interface ReapedTask {
  id: string;
  queue: string;
  state: string;
  run_at: number;
}
