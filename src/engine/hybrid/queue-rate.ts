import { sql, type SQL } from "drizzle-orm";
import { batchAll, type Db } from "../../db/client";
import { QUEUE_ROW_KEY } from "../flow-lease";
import type { LeaseRequest } from "../lease";

/**
 * A flow queue's rate over its pack tasks (docs/design/packs.md, "A queue rate set over pack tasks"). Pack
 * tasks are never enqueued on a flow queue (route-enqueue.ts), but a queue may get a flow config after some
 * were: they stay in packs (a task keeps its layout), and flow control's lease (src/engine/flow-lease.ts)
 * reads rows only. They are the queue's unkeyed tasks, so of flow control's limits only the queue's own apply
 * to them — its pause (the hybrid's front read) and its rate, which this holds: the pack lease takes only
 * tokens of the queue's bucket (`flow_keys`' queue row, the very bucket the flow lease takes its rows'
 * starts from), so the rate holds for every start of the queue, in rows and in packs.
 *
 * Reserve, lease, give back: the tokens for up to `max` starts are taken first (one batch: the read of the
 * grant and its write see the same bucket), the packs leased for at most that, and the tokens of starts not
 * made given back. Two leasers at once never take more than the bucket holds, since each takes its tokens
 * before leasing; a crash between the lease and the give-back loses the unused tokens until the bucket
 * refills (fewer starts for a moment, never more than the rate). Rows written: the queue row once, and once
 * more when the packs had fewer due tasks than were reserved.
 */

/** The bucket of the queue's rate now, as flow-lease.ts computes it (`qt`): rows only when the queue has a rate. */
function bucketSql(queue: string, now: number): SQL {
  return sql`qs AS (SELECT flow ->> '$.rate.count' AS rc,
        CASE flow ->> '$.rate.per' WHEN 'minute' THEN 60000.0 ELSE 1000.0 END AS rp,
        coalesce(flow ->> '$.rate.burst', flow ->> '$.rate.count') AS rb
      FROM queues WHERE name = ${queue} AND flow ->> '$.rate.count' IS NOT NULL),
    qrow AS (SELECT tokens, refilled_at FROM flow_keys WHERE queue = ${queue} AND key = ${QUEUE_ROW_KEY}),
    qt AS (SELECT min(rb, coalesce((SELECT tokens FROM qrow), rb)
        + (${now} - coalesce((SELECT refilled_at FROM qrow), ${now})) * rc / rp) AS qtok FROM qs)`;
}

/**
 * Takes the tokens for up to `max` starts from the queue's rate bucket at `now`; answers how many it took, or
 * null when the queue has no rate (nothing to take: every start is allowed).
 */
async function reserveStarts(db: Db, queue: string, max: number, now: number): Promise<number | null> {
  // Inlined, not bound: D1 binds a JS number as a REAL, and min() with the bucket's whole tokens stays integer.
  const cap = sql.raw(String(Math.trunc(max)));
  const grant = sql`WITH ${bucketSql(queue, now)}, g AS (SELECT qtok, min(${cap}, CAST(qtok AS INTEGER)) AS n FROM qt)`;
  const [read = []] = await batchAll<{ n: number }>(db, [
    sql`${grant} SELECT n FROM g`,
    sql`${grant} INSERT INTO flow_keys (queue, key, tokens, refilled_at, updated_at)
      SELECT ${queue}, ${QUEUE_ROW_KEY}, qtok - n, ${now}, ${now} FROM g WHERE true
      ON CONFLICT (queue, key) DO UPDATE SET tokens = excluded.tokens, refilled_at = excluded.refilled_at,
        updated_at = excluded.updated_at`,
  ]);
  return read[0] === undefined ? null : Number(read[0].n);
}

/** Gives `n` reserved tokens back to the queue's bucket (no more than its size: a bucket refilled meanwhile). */
async function giveBack(db: Db, queue: string, n: number, now: number): Promise<void> {
  await db.run(sql`UPDATE flow_keys SET tokens = min(tokens + ${n},
      (SELECT coalesce(flow ->> '$.rate.burst', flow ->> '$.rate.count') FROM queues WHERE name = ${queue})),
      updated_at = ${now}
    WHERE queue = ${queue} AND key = ${QUEUE_ROW_KEY} AND tokens IS NOT NULL`);
}

/**
 * Leases a rated flow queue's pack tasks within its rate: `lease` gets a request for at most the tokens taken.
 *
 * @example
 * const taken = await leaseUnderQueueRate(db, request, now, (r) => packs.leaseTasks(r, now));
 */
export async function leaseUnderQueueRate<T>(
  db: Db,
  request: LeaseRequest,
  now: number,
  lease: (request: LeaseRequest) => Promise<T[]>,
): Promise<T[]> {
  const granted = await reserveStarts(db, request.queue, request.max, now);
  if (granted === null) return lease(request);
  if (granted <= 0) return [];
  let taken: T[];
  try {
    taken = await lease({ ...request, max: granted });
  } catch (error) {
    await giveBack(db, request.queue, granted, now);
    throw error;
  }
  if (taken.length < granted) await giveBack(db, request.queue, granted - taken.length, now);
  return taken;
}
