/**
 * The packs prototype's engine (docs/design/packs.md): enqueue, lease, ack (complete, fail, release),
 * heartbeat and read by id over the `packs` table (bench/packs-schema.ts), each one statement or one
 * D1 batch, as src/engine's functions are. Bench only: it exists to measure what packing many tasks into
 * one row costs and how fast it runs, with the real statements on local D1.
 *
 * Not in the prototype (the design says how each works): `then` children, cancel, redrive, the reaper,
 * purge, client-supplied ids, partitions and moves, events.
 */
import { sql, type SQL } from "drizzle-orm";
import { monotonicFactory } from "ulid";
import { batchAll, type Db } from "../src/db/client";
import { countersSpec, countersUpsertSql, recordCounters, type CounterEvent } from "../src/engine/counters";
import { DEFAULT_QUEUE_CONFIG } from "../src/engine/queue-config";
import { CLAIM_WINDOW_S, MAX_BATCH } from "../src/contracts/limits";
import { PACK_MAX_BYTES, PACK_SLOTS, packOf, slotChars } from "./packs-schema";
import {
  slotIdSql,
  slotBlobSql,
  ackedSlot,
  fence,
  int,
  leasable,
  leasableAt,
  leasedSlot,
  slotViewSql,
  type AckKind,
  type Backoff,
} from "./packs-slot-sql";

/** One task to enqueue (the prototype's subset of src/engine/enqueue.ts's NewTask). */
export interface PackTask {
  type?: string;
  payload?: unknown;
  priority?: number;
  runAt?: number;
  maxAttempts?: number;
  dedupeKey?: string;
  group?: string;
}

/** The queue's settings a statement needs, read once per call (the prototype keeps them constant). */
export interface PackQueueConfig {
  maxAttempts: number;
  visibilityS: number;
  backoff: Backoff;
}

export const DEFAULT_PACK_CONFIG: PackQueueConfig = {
  maxAttempts: DEFAULT_QUEUE_CONFIG.max_attempts,
  visibilityS: DEFAULT_QUEUE_CONFIG.visibility_timeout_s,
  backoff: { baseMs: DEFAULT_QUEUE_CONFIG.backoff_base_s * 1000, capMs: DEFAULT_QUEUE_CONFIG.backoff_cap_s * 1000 },
};

const nextUlid = monotonicFactory();

/** A fresh pack id: a monotonic ULID without two of its random characters (the slot takes their place). */
function packId(now: number): string {
  const u = nextUlid(now);
  return u.slice(0, 10) + u.slice(12);
}

/**
 * Enqueues tasks as packs: consecutive tasks of one priority and run_at share a pack of up to PACK_SLOTS
 * tasks and PACK_MAX_BYTES of JSON. One statement for the packs (one JSON array bound), plus, when any task
 * has a dedupe key, the keys' upsert first in the same batch: a key held by a live task leaves its new task
 * `z` (never created). Returns the task ids in input order (a deduplicated task's id is reported as such).
 */
export async function enqueuePacks(
  db: Db,
  queue: string,
  input: PackTask[],
  now: number,
  config: PackQueueConfig = DEFAULT_PACK_CONFIG,
): Promise<{ ids: string[]; deduplicated: number }> {
  const packs: Array<{ id: string; priority: number; runAt: number; slots: string[]; bytes: number }> = [];
  const ids: string[] = [];
  const keys: Array<{ d: string; id: string }> = [];
  const seenKeys = new Set<string>();
  for (const task of input) {
    const priority = task.priority ?? 0;
    const runAt = task.runAt ?? now;
    const slot = JSON.stringify({
      s: "p",
      a: 0,
      t: runAt,
      x: task.maxAttempts ?? config.maxAttempts,
      y: task.type ?? "default",
      b: task.payload ?? null,
      g: task.group ?? null,
      d: task.dedupeKey ?? null,
      er: [],
    });
    let pack = packs.at(-1);
    if (
      !pack ||
      pack.priority !== priority ||
      pack.runAt !== runAt ||
      pack.slots.length >= PACK_SLOTS ||
      pack.bytes + slot.length > PACK_MAX_BYTES
    ) {
      pack = { id: packId(now), priority, runAt, slots: [], bytes: 2 };
      packs.push(pack);
    }
    const id = pack.id + slotChars(pack.slots.length);
    if (task.dedupeKey !== undefined) {
      if (seenKeys.has(task.dedupeKey)) {
        // The same key twice in one call: the first task holds it.
        pack.slots.push(slot.replace('"s":"p"', '"s":"z"'));
      } else {
        seenKeys.add(task.dedupeKey);
        keys.push({ d: task.dedupeKey, id });
        pack.slots.push(slot);
      }
    } else pack.slots.push(slot);
    pack.bytes += slot.length + 1;
    ids.push(id);
  }
  const packsJson = `[${packs
    .map((p) => `{"id":"${p.id}","pr":${p.priority},"t":${p.runAt},"n":${p.slots.length},"sl":[${p.slots.join(",")}]}`)
    .join(",")}]`;
  // A pack whose every slot is `z` is not inserted; `live` counts the created slots.
  const slotsOf = keys.length
    ? sql`(SELECT json_group_array(json(CASE WHEN (s.value->>'d') IS NOT NULL AND (s.value->>'s') = 'p'
          AND coalesce((SELECT k.task_id FROM pack_keys k WHERE k.queue = ${queue} AND k.dedupe_key = s.value->>'d'), '')
            <> j.value->>'id' || substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ', s.key / 32 + 1, 1)
              || substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ', s.key % 32 + 1, 1)
          THEN json_set(s.value, '$.s', 'z') ELSE s.value END) ORDER BY s.key)
        FROM json_each(j.value->'sl') AS s)`
    : sql`j.value->'sl'`;
  const insert = sql`WITH made AS (SELECT j.value->>'id' AS id, j.value->>'pr' AS pr, j.value->>'t' AS t, ${slotsOf} AS sl
      FROM json_each(${packsJson}) AS j),
    counted AS (SELECT *, (SELECT count(*) FROM json_each(made.sl) s WHERE s.value->>'s' = 'p') AS live FROM made)
    INSERT INTO packs (id, queue, priority, run_at, next_at, n, live, ready, created_at, updated_at, slots)
    SELECT id, ${queue}, pr, t, t, json_array_length(sl), live, live, ${int(now)}, ${int(now)}, jsonb(sl) FROM counted
    WHERE live > 0
    RETURNING live`;
  // A key row names the task holding it; a row whose task is no longer live (finished, or never created)
  // is taken over. The prototype reads the holder's state from its pack's slot.
  const holderLive = sql`coalesce((SELECT p.slots->('$[' || ((instr('0123456789ABCDEFGHJKMNPQRSTVWXYZ', substr(pack_keys.task_id, 25, 1)) - 1) * 32
      + instr('0123456789ABCDEFGHJKMNPQRSTVWXYZ', substr(pack_keys.task_id, 26, 1)) - 1) || ']')->>'s'
    FROM packs p WHERE p.id = substr(pack_keys.task_id, 1, 24)), 'gone') IN ('p', 'r')`;
  const statements: SQL[] = keys.length
    ? [
        sql`INSERT INTO pack_keys (queue, dedupe_key, task_id)
          SELECT ${queue}, j.value->>'d', j.value->>'id' FROM json_each(${JSON.stringify(keys)}) AS j WHERE true
          ON CONFLICT (queue, dedupe_key) DO UPDATE SET task_id = excluded.task_id WHERE NOT (${holderLive})`,
        insert,
      ]
    : [insert];
  const results = await batchAll<{ live: number }>(db, statements);
  const created = (results.at(-1) ?? []).reduce((n, r) => n + r.live, 0);
  if (created > 0) {
    // One counters row per (queue, type), as enqueueTasks: the prototype's calls are of one type each.
    const type = input[0]?.type ?? "default";
    await recordCounters(
      db,
      Array.from({ length: created }, () => ({ queue, type, counter: "enqueued" as const })),
      now,
    );
  }
  return { ids, deduplicated: input.length - created };
}

/** A lease of a pack's slice: the pack, its views as the API sends them, and what the counters need. */
export interface PackLease {
  /** The tasks' LeasedTaskViews, a JSON array's inside (no brackets), ready to join into `{"tasks":[…]}`. */
  views: string;
  count: number;
  token: string;
  /** Per task: id, and [type, ms waited for a first lease or null, 1 when an expired lease was taken over]. */
  tasks: Array<{ id: string; type: string; wait: number | null; tookOver: boolean }>;
}

export interface PackLeaseRequest {
  queue: string;
  max: number;
  visibilityTimeoutS: number | null;
  holder: string | null;
  provisional?: boolean;
}

/**
 * Leases up to `max` leasable tasks of a queue in ONE statement: a CTE walks the live packs in lease
 * order (priority DESC, run_at, id — the `packs_live` index) whose next leasable time has come, counts
 * each one's leasable slots, gives each pack a quota (a running sum, so the first packs fill the lease),
 * rewrites each chosen pack's slots — its first `quota` leasable slots leased under this call's token —
 * and returns the leased tasks' views rendered by SQLite. One row written per pack touched.
 *
 * Never leased twice: D1 runs one statement at a time, and a slot is leased only if it is leasable in the
 * row this very statement rewrites. The token is this call's own (128 random bits); a slot's fence is
 * (pack, slot, token), so a stale holder of an earlier lease of the same slot is refused.
 */
export async function leasePacks(
  db: Db,
  request: PackLeaseRequest,
  now: number,
  config: PackQueueConfig = DEFAULT_PACK_CONFIG,
): Promise<PackLease> {
  if (!Number.isInteger(request.max) || request.max < 1 || request.max > MAX_BATCH) {
    throw new Error(`max must be an integer from 1 to ${MAX_BATCH} (got ${request.max})`);
  }
  const token = [...crypto.getRandomValues(new Uint8Array(16))].map((x) => x.toString(16).padStart(2, "0")).join("");
  const vtS = request.visibilityTimeoutS ?? config.visibilityS;
  const rows = await db.all<{ id: string; priority: number; run_at: number; views: string; meta: string }>(
    leaseSql(request, now, token, vtS, config.backoff),
  );
  // RETURNING order is unspecified in SQLite: restore the lease order (a pack's slots are in order).
  rows.sort((x, y) => y.priority - x.priority || x.run_at - y.run_at || (x.id < y.id ? -1 : x.id > y.id ? 1 : 0));
  const tasks = rows.flatMap((r) =>
    (JSON.parse(r.meta) as Array<[string, string, number | null, number]>).map(([id, type, wait, o]) => ({
      id,
      type,
      wait,
      tookOver: o === 1,
    })),
  );
  const events = tasks.flatMap((t): CounterEvent[] => {
    const lease: CounterEvent = { queue: request.queue, type: t.type, counter: "leased", wait: t.wait ?? undefined };
    return t.tookOver ? [lease, { queue: request.queue, type: t.type, counter: "failed" }] : [lease];
  });
  await recordCounters(db, events, now);
  return { views: rows.map((r) => r.views).join(","), count: tasks.length, token, tasks };
}

/** The lease statement (see leasePacks). */
export function leaseSql(request: PackLeaseRequest, now: number, token: string, vtS: number, b: Backoff): SQL {
  const v = sql`l.v`;
  const leased = leasedSlot(v, {
    now,
    token,
    holder: request.holder,
    vtS,
    provisionalMs: request.provisional ? CLAIM_WINDOW_S * 1000 : null,
  });
  const pack = { id: sql`pid`, queue: sql`queue`, priority: sql`priority`, createdAt: sql`created_at` };
  const taken = sql`(nv->>'k') = ${token} AND (nv->>'u') = ${int(now)}`;
  return sql`WITH cand AS (
      SELECT id, priority, run_at, ready, n FROM packs
      WHERE queue = ${request.queue} AND finished_at IS NULL AND next_at <= ${int(now)}
      ORDER BY priority DESC, run_at, id
      LIMIT ${int(request.max)}
    ),
    cut AS (
      SELECT id, priority, run_at, coalesce(sum(CASE WHEN ready > 0 THEN ready ELSE n END) OVER (ORDER BY priority DESC, run_at, id
        ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS before
      FROM cand
    ),
    sl AS MATERIALIZED (
      SELECT c.id AS pid, p.queue, c.priority, c.run_at, p.created_at, s.key, ${slotBlobSql} AS v
      FROM cut c CROSS JOIN packs p ON p.id = c.id, json_each(p.slots) AS s
      WHERE c.before < ${int(request.max)}
    ),
    lz AS MATERIALIZED (SELECT *, ${leasable(sql`sl.v`, now, b)} AS lz FROM sl),
    quota AS MATERIALIZED (
      SELECT pid, min(free, ${int(request.max)} - coalesce(sum(free) OVER (ORDER BY priority DESC, run_at, pid
        ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0)) AS take
      FROM (SELECT pid, priority, run_at, sum(lz) AS free FROM lz GROUP BY pid)
    ),
    ranked AS MATERIALIZED (
      SELECT l.pid, l.queue, l.priority, l.created_at, l.key,
        CASE WHEN l.lz AND row_number() OVER (PARTITION BY l.pid, l.lz ORDER BY l.key) <= q.take
          THEN ${leased} ELSE l.v END AS nv
      FROM lz l JOIN quota q ON q.pid = l.pid
      WHERE q.take > 0
    ),
    fresh AS MATERIALIZED (
      SELECT pid, jsonb_group_array(nv ORDER BY key) AS slots, sum((nv->>'s') = 'p') AS ready,
        min(${leasableAt(sql`nv`, b)}) AS next_at,
        group_concat(CASE WHEN ${taken} THEN ${slotViewSql(sql`nv`, sql`key`, pack)} END, ',' ORDER BY key) AS views,
        json_group_array(json_array(${slotIdSql(sql`pid`, sql`key`)}, nv->>'y',
          CASE WHEN (nv->>'st') = ${int(now)} THEN ${int(now)} - max(created_at, nv->>'t') END, nv->>'o') ORDER BY key)
          FILTER (WHERE ${taken}) AS meta
      FROM ranked GROUP BY pid
    )
    UPDATE packs SET slots = fresh.slots, ready = fresh.ready, next_at = fresh.next_at, updated_at = ${int(now)}
    FROM fresh
    WHERE packs.id = fresh.pid
    RETURNING packs.id AS id, packs.priority AS priority, packs.run_at AS run_at,
      (SELECT f.views FROM fresh f WHERE f.pid = packs.id) AS views,
      (SELECT f.meta FROM fresh f WHERE f.pid = packs.id) AS meta`;
}

/** One ack item: the task, its lease token, and the kind's own fields. */
export interface PackAckItem {
  id: string;
  leaseToken: string;
  result?: unknown;
  message?: string;
  permanent?: boolean;
  retryAfterMs?: number;
}

export interface PackAckOutcome {
  id: string;
  ok: boolean;
  /** The state the slot is in now (`ok`), or why not: not_found, lease_lost, duplicate. */
  state?: string;
  error?: string;
  repeated?: boolean;
}

/** What each ack counts, in SQL over the changed slots (`s.value`): the counters' columns and aggregates. */
const ACK_COUNTS = {
  complete: countersSpec(
    [
      ["completed", "sum(s.state = 'c')"],
      ["cancelled", "sum(s.state = 'x')"],
    ],
    [{ h: "run", ms: "run_ms", when: "state = 'c' AND started_at IS NOT NULL" }],
  ),
  fail: countersSpec(
    [
      ["failed", "count(*)"],
      ["dead", "sum(s.state = 'd')"],
      ["cancelled", "sum(s.state = 'x')"],
    ],
    [{ h: "run", ms: "run_ms", when: "state = 'd' AND started_at IS NOT NULL" }],
  ),
  release: countersSpec([["cancelled", "sum(s.state = 'x')"]]),
};

/**
 * Acks items of one queue in ONE D1 batch: the fenced rewrite of every pack an item names (one row written
 * per pack, whatever the number of its items), then the counters upsert over exactly the slots it changed
 * (the same batch, so it counts what the rewrite did). Each item succeeds or fails on its own: a wrong,
 * stale or expired token changes nothing for its slot (`lease_lost`); repeating an applied ack with the same
 * token is a success with `repeated`, as src/engine/ack.ts answers it.
 */
export async function ackPacks(
  db: Db,
  kind: AckKind,
  queue: string,
  items: PackAckItem[],
  now: number,
  config: PackQueueConfig = DEFAULT_PACK_CONFIG,
): Promise<PackAckOutcome[]> {
  const seen = new Set<string>();
  const parsed = items.map((item) => {
    const at = packOf(item.id);
    const dup = seen.has(item.id);
    seen.add(item.id);
    return { item, at, dup };
  });
  const valid = parsed.filter((p) => p.at && !p.dup);
  const json = JSON.stringify(
    valid.map(({ item, at }) => ({
      p: at!.pack,
      s: at!.slot,
      k: item.leaseToken,
      r: item.result ?? null,
      m: item.message ?? null,
      perm: item.permanent ? 1 : 0,
      ra: item.retryAfterMs ?? null,
    })),
  );
  const b = config.backoff;
  // The slots this ack changed, each found by index in its pack (not by scanning the pack's slots).
  const changedSlots = sql`FROM (SELECT p.queue, p.slots->('$[' || (j.value->>'s') || ']') AS sv, j.value->>'k' AS k
      FROM json_each(${json}) AS j JOIN packs p ON p.id = j.value->>'p')
    WHERE (sv->>'u') = ${int(now)} AND (sv->>'w') = ${kind + ":"} || k`;
  const [changed = []] = valid.length
    ? await batchAll<{ id: string; changed: string }>(db, [
        sql`WITH items AS MATERIALIZED (SELECT j.value->>'p' AS p, j.value->>'s' AS slot, jsonb(j.value) AS item
            FROM json_each(${json}) AS j),
          sl AS MATERIALIZED (
            SELECT p.id AS pid, s.key, ${slotBlobSql} AS v, i.item
            FROM packs p CROSS JOIN json_each(p.slots) AS s LEFT JOIN items i ON i.p = p.id AND i.slot = s.key
            WHERE p.id IN (SELECT p FROM items) AND p.queue = ${queue} AND p.finished_at IS NULL
          ),
          ranked AS MATERIALIZED (
            SELECT pid, key, hit, CASE WHEN hit THEN ${ackedSlot(kind, sql`v`, sql`item`, now, b)} ELSE v END AS nv
            FROM (SELECT *, coalesce(item IS NOT NULL AND ${fence(sql`v`, sql`(item->>'k')`, now)}, 0) AS hit FROM sl)
          ),
          fresh AS MATERIALIZED (
            SELECT pid, jsonb_group_array(nv ORDER BY key) AS slots, sum((nv->>'s') IN ('p', 'r')) AS live,
              sum((nv->>'s') = 'p') AS ready, min(${leasableAt(sql`nv`, b)}) AS next_at,
              json_group_array(json_array(key, nv->>'s', nv->>'w')) FILTER (WHERE hit) AS changed, sum(hit) AS hits
            FROM ranked GROUP BY pid
          )
          UPDATE packs SET slots = fresh.slots, live = fresh.live, ready = fresh.ready, next_at = fresh.next_at,
            finished_at = CASE WHEN fresh.live = 0 THEN ${int(now)} ELSE NULL END, updated_at = ${int(now)}
          FROM fresh
          WHERE packs.id = fresh.pid AND fresh.hits > 0
          RETURNING packs.id AS id, (SELECT f.changed FROM fresh f WHERE f.pid = packs.id) AS changed`,
        countersUpsertSql(
          now,
          sql`SELECT queue, sv->>'y' AS type, sv->>'s' AS state, sv->>'st' AS started_at,
              ${int(now)} - (sv->>'st') AS run_ms ${changedSlots}`,
          ACK_COUNTS[kind],
        ),
      ])
    : [];
  const slotState = new Map<string, { state: string; w: string | null }>();
  for (const row of changed) {
    for (const [key, state, w] of JSON.parse(row.changed) as Array<[number, string, string | null]>) {
      slotState.set(row.id + slotChars(key), { state, w });
    }
  }
  const missing = valid.filter(({ item }) => slotState.get(item.id)?.w !== `${kind}:${item.leaseToken}`);
  const stored = new Map<string, { state: string; w: string | null }>();
  if (missing.length) {
    const probe = JSON.stringify(missing.map(({ item, at }) => ({ id: item.id, p: at!.pack, s: at!.slot })));
    const rows = await db.all<{ id: string; state: string | null; w: string | null }>(sql`SELECT j.value->>'id' AS id,
        p.slots->('$[' || (j.value->>'s') || ']')->>'s' AS state, p.slots->('$[' || (j.value->>'s') || ']')->>'w' AS w
      FROM json_each(${probe}) AS j JOIN packs p ON p.id = j.value->>'p' AND p.queue = ${queue}`);
    for (const r of rows) if (r.state !== null && r.state !== "z") stored.set(r.id, { state: r.state, w: r.w });
  }
  return parsed.map(({ item, at, dup }): PackAckOutcome => {
    if (dup) return { id: item.id, ok: false, error: "invalid_request" };
    if (!at) return { id: item.id, ok: false, error: "not_found" };
    const now_ = slotState.get(item.id);
    if (now_?.w === `${kind}:${item.leaseToken}`) {
      return now_.state === "x"
        ? { id: item.id, ok: false, error: "task_cancelled" }
        : { id: item.id, ok: true, state: now_.state };
    }
    const before = stored.get(item.id);
    if (!before) return { id: item.id, ok: false, error: "not_found" };
    if (before.w === `${kind}:${item.leaseToken}`)
      return { id: item.id, ok: true, state: before.state, repeated: true };
    return { id: item.id, ok: false, error: "lease_lost" };
  });
}

/**
 * Heartbeat of one task (extends its lease, records progress): one fenced rewrite of its pack, one row.
 * Returns false when the fence refused it (stale token, expired lease, no such task).
 */
export async function heartbeatPack(
  db: Db,
  id: string,
  leaseToken: string,
  progress: number,
  now: number,
): Promise<boolean> {
  const at = packOf(id);
  if (!at) return false;
  const v = sql`s.value`;
  const rows = await db.all<{ id: string }>(sql`UPDATE packs SET
      slots = (SELECT jsonb_group_array((CASE WHEN s.key = ${int(at.slot)} AND ${fence(v, sql`${leaseToken}`, now)}
          THEN jsonb_set(s.value, '$.e', ${int(now)} + (s.value->>'v') * 1000, '$.p', ${int(progress)}, '$.c', NULL, '$.u', ${int(now)})
          ELSE s.value END) ORDER BY s.key) FROM json_each(packs.slots) AS s),
      updated_at = ${int(now)}
    WHERE id = ${at.pack} AND finished_at IS NULL
      AND ${fence(sql`(packs.slots->${`$[${at.slot}]`})`, sql`${leaseToken}`, now)}
    RETURNING id`);
  return rows.length === 1;
}

/** Inspection by id: the task's view (the same JSON as a lease answer's, its state as it is), or null. */
export async function readPackTask(db: Db, id: string): Promise<string | null> {
  const at = packOf(id);
  if (!at) return null;
  const row = await db.get<{ view: string | null }>(sql`SELECT ${slotViewSql(sql`s.value`, sql`s.key`)} AS view
    FROM packs, json_each(packs.slots) AS s WHERE packs.id = ${at.pack} AND s.key = ${int(at.slot)}
      AND (s.value->>'s') <> 'z'`);
  return row?.view ?? null;
}
