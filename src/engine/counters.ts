import { sql, type SQL } from "drizzle-orm";
import { encodeTime } from "ulid";
import { batchAll, type Db } from "../db/client";
import { COUNTERS, type CounterName } from "../db/schema";
import { bucketColumn, bucketIndex, HISTOGRAM_BOUNDS_S, HISTOGRAMS, type HistogramName } from "../db/histogram-buckets";
import { COUNTER_MINUTES_KEPT_S, MAX_COUNTER_FOLD_MINUTES, MAX_UNFOLDED_TASKS } from "../contracts/limits";
import { eventQueueSql, ofQueueOrItsTombstonesSql, TOMBSTONE_MARK, tombstoneRangeSql } from "./tombstone-mark";

/** One task's transition, as the engine function that made it reports it to the counters. */
export interface CounterEvent {
  queue: string;
  type: string;
  counter: CounterName;
  /** Milliseconds to add to the histograms (wait: due -> first lease; run: first lease -> end). */
  wait?: number;
  run?: number;
}

const MINUTE_MS = 60_000;

/** The start of the minute `now` falls in: the counters' time bucket. */
export function minuteOf(now: number): number {
  return Math.floor(now / MINUTE_MS) * MINUTE_MS;
}

const BUCKETS = HISTOGRAM_BOUNDS_S.length + 1;
/** Each histogram's column names, per bucket index and for its count and sum (built once). */
const HISTOGRAM_COLUMNS = Object.fromEntries(
  HISTOGRAMS.map((h) => [
    h,
    { buckets: Array.from({ length: BUCKETS }, (_, i) => bucketColumn(h, i)), count: `${h}_count`, sum: `${h}_sum_ms` },
  ]),
) as Record<HistogramName, { buckets: string[]; count: string; sum: string }>;

/** Every column an upsert adds to: the counters, then each histogram's buckets, count and sum. */
const ADDED_COLUMNS = [
  ...COUNTERS,
  ...HISTOGRAMS.flatMap((h) => [...HISTOGRAM_COLUMNS[h].buckets, HISTOGRAM_COLUMNS[h].count, HISTOGRAM_COLUMNS[h].sum]),
];

/** One (queue, type)'s additions: column -> amount, only the columns the events touched. */
interface CounterRow {
  queue: string;
  type: string;
  add: Map<string, number>;
}

/** Adds up events into one row of column -> amount per (queue, type). */
function aggregate(events: CounterEvent[]): CounterRow[] {
  const rows = new Map<string, CounterRow>();
  const add = (row: CounterRow, column: string, by: number) => row.add.set(column, (row.add.get(column) ?? 0) + by);
  const observe = (row: CounterRow, h: HistogramName, ms: number | undefined) => {
    if (ms === undefined) return;
    const clamped = Math.max(0, Math.round(ms));
    const columns = HISTOGRAM_COLUMNS[h];
    add(row, columns.buckets[bucketIndex(clamped)]!, 1);
    add(row, columns.count, 1);
    add(row, columns.sum, clamped);
  };
  for (const e of events) {
    const key = `${e.queue}\u0000${e.type}`;
    let row = rows.get(key);
    if (!row) rows.set(key, (row = { queue: e.queue, type: e.type, add: new Map() }));
    add(row, e.counter, 1);
    observe(row, "wait", e.wait);
    observe(row, "run", e.run);
  }
  return [...rows.values()];
}

/**
 * Adds a batch of transitions to the per-minute counters: ONE upsert statement, one row written per
 * (queue, type) the batch touched — a lease of 100 tasks of one type costs one counter row, i.e. 0.01 of a
 * row per task; a lease of one task costs one. Called by each engine function right after the guarded
 * statement whose RETURNING rows say what changed (only they tell which tasks moved, and D1 has no
 * interactive transaction to hold the two together). So counters never count a transition that did not
 * happen; a Worker that dies between the two statements loses that batch's counts — acceptable for
 * monitoring figures, never used for task state. The statement names only the columns the batch adds
 * to (a lease touches 4 or 5 of the 35): a short statement is quicker to compile and run.
 *
 * @example
 * await recordCounters(db, [{ queue: "emails", type: "send", counter: "completed", run: 1200 }], Date.now());
 */
export async function recordCounters(db: Db, events: CounterEvent[], now: number): Promise<void> {
  const statement = countersStatementSql(events, now);
  if (statement) await db.run(statement);
}

/**
 * recordCounters' upsert as a statement, for a store that runs it in the batch of the write it counts (one
 * transaction: the counts are exactly what the write did, src/engine/packs/), or null without events.
 */
export function countersStatementSql(events: CounterEvent[], now: number): SQL | null {
  if (events.length === 0) return null;
  const rows = aggregate(events);
  const touched = ADDED_COLUMNS.filter((c) => rows.some((r) => r.add.has(c)));
  const json = JSON.stringify(rows.map((r) => [r.queue, r.type, ...touched.map((c) => r.add.get(c) ?? 0)]));
  const columns = sql.raw(touched.join(", "));
  const values = sql.raw(touched.map((_, i) => `j.value->>${i + 2}`).join(", "));
  const updates = sql.raw(touched.map((c) => `${c} = ${c} + excluded.${c}`).join(", "));
  return sql`INSERT INTO task_counters (queue, type, minute, ${columns})
    SELECT j.value->>0, j.value->>1, ${minuteOf(now)}, ${values}
    FROM json_each(${json}) AS j
    WHERE true
    ON CONFLICT (queue, type, minute) DO UPDATE SET ${updates}`;
}

/** A histogram an in-SQL count observes: the source's column `ms` (whole milliseconds), for its rows
 * where `when` holds. */
export interface Observed {
  h: HistogramName;
  ms: string;
  when: string;
}

/** What an in-SQL count adds (see `countersSpec`): the statement's fixed text, rendered once. */
export interface CountersSpec {
  columns: SQL;
  amounts: SQL;
  /** The amounts, each named as its column. */
  named: SQL;
  updates: SQL;
  /** The bucket of each observed histogram, a column per row, or null. */
  buckets: SQL | null;
}

/**
 * The fixed part of an in-SQL count (`countersUpsertSql`), rendered once per call site: each of `sums` is
 * a counter column and the aggregate (over the source's rows of one queue and type) to add to it, and each
 * `observed` histogram is filled — the same buckets `recordCounters` fills from JS (bucketIndex,
 * HISTOGRAM_BOUNDS_S). A row's bucket is worked out once (a column of an inner select), then each bucket
 * column is one comparison per row. No parameter is bound here (D1 allows 100 per statement).
 */
export function countersSpec(
  sums: Array<[column: string, aggregate: string]>,
  observed: Observed[] = [],
): CountersSpec {
  const all = [
    ...sums,
    ...observed.flatMap(({ h, ms }): Array<[string, string]> => {
      const columns = HISTOGRAM_COLUMNS[h];
      return [
        ...columns.buckets.map((column, i): [string, string] => [column, `sum(s.${h}_bucket = ${i})`]),
        [columns.count, `sum(s.${h}_bucket >= 0)`],
        [columns.sum, `sum(CASE WHEN s.${h}_bucket >= 0 THEN max(0, s.${ms}) ELSE 0 END)`],
      ];
    }),
  ];
  const buckets = observed.map(({ h, ms, when }) => {
    const limits = HISTOGRAM_BOUNDS_S.map((bound, i) => `WHEN max(0, ${ms}) <= ${bound * 1000} THEN ${i}`).join(" ");
    return `CASE WHEN NOT (${when}) THEN -1 ${limits} ELSE ${HISTOGRAM_BOUNDS_S.length} END AS ${h}_bucket`;
  });
  return {
    columns: sql.raw(all.map(([c]) => c).join(", ")),
    amounts: sql.raw(all.map(([, amount]) => amount).join(", ")),
    named: sql.raw(all.map(([c, amount]) => `${amount} AS ${c}`).join(", ")),
    updates: sql.raw(all.map(([c]) => `${c} = ${c} + excluded.${c}`).join(", ")),
    buckets: buckets.length ? sql.raw(buckets.join(", ")) : null,
  };
}

/**
 * The counters upsert as a statement computed by SQLite over `source` (a SELECT of task rows with
 * `queue` and `type` columns): one row per (queue, type) among them, `spec`'s amounts added to this
 * minute's row. For a statement inside the D1 batch of the write it counts: `recordCounters` needs the
 * write's answer first, so it costs a D1 call (on Cloudflare a round trip and a commit) of its own. No
 * source row: nothing is written.
 *
 * @example
 * const LEASED = countersSpec([["leased", "count(*)"]]);
 * const count = countersUpsertSql(now, sql`SELECT queue, type FROM tasks WHERE id = ${id}`, LEASED);
 */
export function countersUpsertSql(now: number, source: SQL, spec: CountersSpec): SQL {
  // MATERIALIZED: each row's values and buckets are worked out once. Flattened into the aggregate (what
  // SQLite does with a plain subquery) every sum would evaluate the bucket CASE again.
  const rows = spec.buckets ? sql`SELECT *, ${spec.buckets} FROM (${source})` : source;
  return sql`WITH s AS MATERIALIZED (${rows})
    INSERT INTO task_counters (queue, type, minute, ${spec.columns})
    SELECT s.queue, s.type, ${minuteOf(now)}, ${spec.amounts}
    FROM s
    WHERE true
    GROUP BY s.queue, s.type
    ON CONFLICT (queue, type, minute) DO UPDATE SET ${spec.updates}`;
}

/**
 * The (queue, type) pairs of `task_counters` (of one queue, when given), as a recursive CTE named `pair`
 * whose column `k` is `[queue, type]` (a last row has k NULL): one primary-key probe per pair — a skip-scan —
 * instead of a read of every minute row. Joined to the counters by (queue, type) and a minute range, a
 * statement then reads the minutes it wants of each pair, never the other 1,440 a pair may keep.
 */
function counterPairsSql(queue?: string): SQL {
  const only = queue === undefined ? sql`` : sql` AND queue = ${queue}`;
  return sql`pair(k) AS (
      SELECT (SELECT json_array(queue, type) FROM task_counters WHERE true${only} ORDER BY queue, type LIMIT 1)
      UNION ALL
      SELECT coalesce(
        (SELECT json_array(queue, type) FROM task_counters WHERE queue = pair.k->>0 AND type > pair.k->>1
          ORDER BY type LIMIT 1),
        (SELECT json_array(queue, type) FROM task_counters WHERE queue > pair.k->>0${only} ORDER BY queue, type LIMIT 1))
      FROM pair WHERE pair.k IS NOT NULL)`;
}

/** The counter rows of every pair (`counterPairsSql`) whose minute satisfies `minutes` (over alias `c`). */
function pairRowsSql(minutes: SQL): SQL {
  return sql`pair JOIN task_counters c ON c.queue = pair.k->>0 AND c.type = pair.k->>1 AND ${minutes}`;
}

/**
 * Folds per-minute counters older than COUNTER_MINUTES_KEPT_S into each (queue, type)'s totals row
 * (minute 0), at most MAX_COUNTER_FOLD_MINUTES minutes per call, in one batch (one transaction: a minute is
 * never both added to the totals and kept, nor deleted without being added). Idempotent: a second run
 * finds nothing left to fold. Called by the cron tick. Reads one probe per (queue, type) and the minutes it
 * folds, never the minutes it keeps.
 *
 * @example
 * const { folded } = await foldOldCounters(db, Date.now());
 */
export async function foldOldCounters(db: Db, now: number): Promise<{ folded: number }> {
  const oldest = await db.get<{ m: number | null }>(sql`WITH RECURSIVE ${counterPairsSql()}
    SELECT min((SELECT min(c.minute) FROM task_counters c WHERE c.queue = pair.k->>0 AND c.type = pair.k->>1
      AND c.minute > 0)) AS m FROM pair WHERE pair.k IS NOT NULL`);
  if (oldest?.m == null) return { folded: 0 };
  const cutoff = Math.min(
    minuteOf(now - COUNTER_MINUTES_KEPT_S * 1000),
    oldest.m + MAX_COUNTER_FOLD_MINUTES * MINUTE_MS,
  );
  if (oldest.m >= cutoff) return { folded: 0 };
  const columns = sql.raw(ADDED_COLUMNS.join(", "));
  const sums = sql.raw(ADDED_COLUMNS.map((c) => `sum(c.${c})`).join(", "));
  const updates = sql.raw(ADDED_COLUMNS.map((c) => `${c} = ${c} + excluded.${c}`).join(", "));
  const folding = sql`c.minute > 0 AND c.minute < ${cutoff}`;
  const [, deleted = []] = await batchAll(db, [
    sql`WITH RECURSIVE ${counterPairsSql()}
      INSERT INTO task_counters (queue, type, minute, ${columns})
      SELECT c.queue, c.type, 0, ${sums} FROM ${pairRowsSql(folding)} WHERE pair.k IS NOT NULL
      GROUP BY c.queue, c.type
      ON CONFLICT (queue, type, minute) DO UPDATE SET ${updates}`,
    sql`WITH RECURSIVE ${counterPairsSql()}
      DELETE FROM task_counters
      WHERE (queue, type) IN (SELECT k->>0, k->>1 FROM pair WHERE k IS NOT NULL) AND minute > 0 AND minute < ${cutoff}
      RETURNING minute`,
  ]);
  return { folded: deleted.length };
}

/** One (queue, type)'s counter sums over some minutes. */
export type CounterSums = { queue: string; type: string } & Record<string, number>;

/**
 * The counters summed per queue and type over the minutes from `since` (ms; 0 for all time, totals row
 * included). Reads the counter rows and the tasks past the fold's cursor whose events are still in their
 * rows (at most MAX_UNFOLDED_TASKS), never older tasks.
 *
 * @example
 * const lastHour = await sumCounters(db, { since: Date.now() - 3_600_000 });
 */
export async function sumCounters(
  db: Db,
  opts: { since?: number; queue?: string; tailLimit?: number } = {},
): Promise<CounterSums[]> {
  const since = opts.since === undefined ? sql`` : sql` AND minute >= ${minuteOf(opts.since)}`;
  const queue = opts.queue === undefined ? sql`` : sql` AND queue = ${opts.queue}`;
  const sums = sql.raw(ADDED_COLUMNS.map((c) => `sum(${c}) AS ${c}`).join(", "));
  const [folded, unfolded] = await Promise.all([
    db.all<CounterSums>(
      sql`SELECT queue, type, ${sums} FROM task_counters WHERE true${since}${queue} GROUP BY queue, type ORDER BY queue, type`,
    ),
    unfoldedSums(db, opts),
  ]);
  if (unfolded.length === 0) return folded;
  const byKey = new Map(folded.map((r) => [`${r.queue}\u0000${r.type}`, r]));
  for (const u of unfolded) {
    const { queue: q, type } = u;
    const key = `${q}\u0000${type}`;
    let row = byKey.get(key);
    if (!row) {
      row = { queue: q, type, ...Object.fromEntries(ADDED_COLUMNS.map((c) => [c, 0])) } as CounterSums;
      byKey.set(key, row);
    }
    for (const c of ADDED_COLUMNS) if (c in u) (row as Record<string, number>)[c] = (row[c] ?? 0) + (u[c] ?? 0);
  }
  return [...byKey.values()].sort((a, b) =>
    a.queue < b.queue ? -1 : a.queue > b.queue ? 1 : a.type < b.type ? -1 : a.type > b.type ? 1 : 0,
  );
}

/** A task as an ending statement returns it: enough to count what happened to it. */
export interface EndedTask {
  queue: string;
  type: string;
  state: string;
  started_at: number | null;
}

/**
 * What one task's new state counts for, after a statement that ended or handed back its attempt:
 * completed (with its run time), dead (a failed attempt too when `attempt`, and its run time), cancelled,
 * or — back to pending — a failed attempt when `attempt` (fail, expired lease), nothing for a hand-back
 * (release, an unclaimed lease refunded). A task still processing (extend, heartbeat) counts nothing.
 *
 * @example
 * const events = rows.flatMap((r) => outcomeEvents(r, now, true));
 */
export function outcomeEvents(task: EndedTask, now: number, attempt: boolean): CounterEvent[] {
  const base = { queue: task.queue, type: task.type };
  const run = task.started_at == null ? undefined : now - task.started_at;
  switch (task.state) {
    case "completed":
      return [{ ...base, counter: "completed", run }];
    case "dead":
      return attempt
        ? [
            { ...base, counter: "failed" },
            { ...base, counter: "dead", run },
          ]
        : [{ ...base, counter: "dead", run }];
    case "cancelled":
      return [{ ...base, counter: "cancelled" }];
    case "pending":
      return attempt ? [{ ...base, counter: "failed" }] : [];
    default:
      return [];
  }
}

/** A queue's recent counts, from the per-minute counters: what health's rate checks read. */
export interface RecentCounts {
  queue: string;
  failed_5m: number;
  outcomes_5m: number;
  failed_15m: number;
  outcomes_15m: number;
  dead_1h: number;
}

/**
 * Failures and outcomes (completions + failed attempts) over the last 5 and 15 minutes and dead tasks over
 * the last hour, per queue, from the counters (whole minutes: a window starts at the minute `now - window`
 * falls in). Reads one probe per (queue, type) and at most its last hour of counter rows, never the older
 * minutes kept for charts, never tasks.
 *
 * @example
 * const recent = await recentCounts(db, Date.now(), "emails");
 */
export async function recentCounts(db: Db, now: number, queue?: string): Promise<RecentCounts[]> {
  const m5 = minuteOf(now - 5 * MINUTE_MS);
  const m15 = minuteOf(now - 15 * MINUTE_MS);
  const m60 = minuteOf(now - 60 * MINUTE_MS);
  const [folded, unfolded] = await Promise.all([
    recentFolded(db, { m5, m15, m60, now }, queue),
    unfoldedSums(db, { since: m60, queue, now }),
  ]);
  if (unfolded.length === 0) return folded;
  const byQueue = new Map(folded.map((r) => [r.queue, { ...r }]));
  for (const u of unfolded) {
    if (u.minute > now) continue;
    let r = byQueue.get(u.queue);
    if (!r)
      byQueue.set(
        u.queue,
        (r = { queue: u.queue, failed_5m: 0, outcomes_5m: 0, failed_15m: 0, outcomes_15m: 0, dead_1h: 0 }),
      );
    const failed = u.failed ?? 0;
    const outcomes = failed + (u.completed ?? 0);
    if (u.minute >= m5) {
      r.failed_5m += failed;
      r.outcomes_5m += outcomes;
    }
    if (u.minute >= m15) {
      r.failed_15m += failed;
      r.outcomes_15m += outcomes;
    }
  }
  return [...byQueue.values()].sort((a, b) => (a.queue < b.queue ? -1 : a.queue > b.queue ? 1 : 0));
}

/** recentCounts over task_counters alone. */
function recentFolded(
  db: Db,
  { m5, m15, m60, now }: { m5: number; m15: number; m60: number; now: number },
  queue?: string,
): Promise<RecentCounts[]> {
  return db.all<RecentCounts>(sql`WITH RECURSIVE ${counterPairsSql(queue)}
    SELECT c.queue AS queue,
      coalesce(sum(CASE WHEN c.minute >= ${m5} THEN c.failed END), 0) AS failed_5m,
      coalesce(sum(CASE WHEN c.minute >= ${m5} THEN c.failed + c.completed END), 0) AS outcomes_5m,
      coalesce(sum(CASE WHEN c.minute >= ${m15} THEN c.failed END), 0) AS failed_15m,
      coalesce(sum(CASE WHEN c.minute >= ${m15} THEN c.failed + c.completed END), 0) AS outcomes_15m,
      coalesce(sum(c.dead), 0) AS dead_1h
    FROM ${pairRowsSql(sql`c.minute >= ${m60} AND c.minute <= ${now}`)} WHERE pair.k IS NOT NULL
    GROUP BY c.queue ORDER BY c.queue`);
}

/** The counter fold's cursor in `sweep_cursors` (src/engine/counters-in-row.ts): tasks with an id at or below
 * it have their counts in task_counters; those above it may keep theirs in their rows. */
export const COUNTER_FOLD_CURSOR = "counters";

/** The fold's cursor, as SQL (NULL on a database where no fold ran). */
export const FOLD_CURSOR_SQL = sql`(SELECT position FROM sweep_cursors WHERE name = ${COUNTER_FOLD_CURSOR})`;

/** Whether task `t`'s (a table alias) counter events are kept in its row now (an SQL boolean). */
export function countedInRowSql(t: SQL): SQL {
  return sql`coalesce(${t}.uncounted IS NOT NULL AND ${t}.id > ${FOLD_CURSOR_SQL}, 0)`;
}

/** What counter events add up to: each counter, the wait of a first lease and the run time of a completion. */
export const EVENT_COUNTS = countersSpec(
  ["enqueued", "leased", "failed", "completed", "cancelled"].map((c): [string, string] => [c, `sum(s.c = '${c}')`]),
  [
    { h: "wait", ms: "ms", when: "c = 'leased' AND ms IS NOT NULL" },
    { h: "run", ms: "ms", when: "c = 'completed' AND ms IS NOT NULL" },
  ],
);

/** The events kept in the rows of `tasks` (as `t`) where `where` holds: rows of (queue, type, c, minute, ms) —
 * a tombstone's under its task's queue (src/engine/tombstone-mark.ts). */
export function rowEventsSql(where: SQL): SQL {
  return sql`SELECT ${eventQueueSql(sql`t`)} AS queue, t.type AS type, e.value->>0 AS c, e.value->>1 AS minute, e.value->>2 AS ms
    FROM tasks t, json_each(t.uncounted) AS e WHERE t.uncounted IS NOT NULL AND e.type = 'array' AND ${where}`;
}

type MinuteSums = { queue: string; type: string; minute: number } & Record<string, number>;

/** What a reader asks of the tail: as the reader's own options, plus how many tasks past the cursor it reads
 * at most (MAX_UNFOLDED_TASKS; smaller in tests). */
type UnfoldedOptions = { since?: number; queue?: string; now?: number; tailLimit?: number };

/**
 * The counts still kept in task rows (not folded yet), per queue, type and minute from `since`: what the
 * readers add to task_counters so that a count is seen at once, folded or not. A primary-key range from the
 * fold's cursor — the tasks of the last 30-90 s where the cron tick runs — never older tasks, and at most
 * `tailLimit` (MAX_UNFOLDED_TASKS) of them, the oldest first; and as many of their tombstones at most
 * (src/engine/tombstone-mark.ts). Nothing on a database where no fold ran.
 */
async function unfoldedSums(db: Db, opts: UnfoldedOptions): Promise<MinuteSums[]> {
  const queue = opts.queue === undefined ? sql`` : sql` AND ${ofQueueOrItsTombstonesSql(sql`t`, opts.queue)}`;
  // With a `now`, tasks created up to then only (ids are time-ordered): a reader's range stays the tasks since
  // the cursor even where the cursor lags far behind (a database whose tick has not run for a while).
  const bound = opts.now === undefined ? null : encodeTime(opts.now + 1, 10) + "0".repeat(16);
  // Tasks' ids only (below the tombstones, which are read apart: src/engine/tombstone-mark.ts).
  const upTo = sql` AND id < ${bound ?? TOMBSTONE_MARK}`;
  const tail = opts.tailLimit ?? MAX_UNFOLDED_TASKS;
  const since = opts.since === undefined ? sql`` : sql` WHERE s.minute >= ${minuteOf(opts.since)}`;
  // The range's end: the id `tailLimit` tasks past the cursor (a walk of the primary key), or none.
  const end = sql`(SELECT max(id) FROM (SELECT id FROM tasks WHERE id > ${FOLD_CURSOR_SQL}${upTo}
    ORDER BY id LIMIT ${tail}))`;
  // The tombstones of tasks past the cursor: every one's events are still in it (none was folded), the oldest
  // `tail` of them.
  const tombstoneUpTo = bound === null ? null : sql`${bound}`;
  const tombstones = sql`t.id IN (SELECT id FROM tasks
    WHERE ${tombstoneRangeSql(sql`tasks`, FOLD_CURSOR_SQL, tombstoneUpTo)} ORDER BY id LIMIT ${tail})`;
  return db.all<MinuteSums>(sql`WITH s AS MATERIALIZED (SELECT *, ${EVENT_COUNTS.buckets} FROM (${rowEventsSql(
    sql`t.id > ${FOLD_CURSOR_SQL} AND t.id <= ${end} AND ${countedInRowSql(sql`t`)}${queue}`,
  )} UNION ALL ${rowEventsSql(sql`${tombstones}${queue}`)}))
    SELECT s.queue AS queue, s.type AS type, CAST(s.minute AS INTEGER) AS minute, ${EVENT_COUNTS.named}
    FROM s${since} GROUP BY s.queue, s.type, s.minute`);
}
