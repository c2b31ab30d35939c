/**
 * The packs prototype's engine (docs/design/packs.md): enqueue, heartbeat and read by id over the `packs`
 * table (bench/packs-schema.ts); the lease is bench/packs-lease.ts, the acks bench/packs-ack.ts. Each is one
 * statement or one D1 batch, as src/engine's functions are. Bench only: it exists to measure what packing
 * many tasks into one row costs and how fast it runs, with the real statements on local D1.
 *
 * Not in the prototype (the design says how each works): `then` children, cancel, redrive, the reaper,
 * purge, client-supplied ids, partitions and moves, events.
 */
import { sql, type SQL } from "drizzle-orm";
import { monotonicFactory } from "ulid";
import { batchAll, type Db } from "../src/db/client";
import { recordCounters } from "../src/engine/counters";
import { B32, PACK_MAX_BYTES, PACK_SLOTS, packOf } from "./packs-schema";
import {
  at,
  charNum,
  countChar,
  DEFAULT_PACK_CONFIG,
  fence,
  int,
  numChar,
  rep,
  slotViewSql,
  splice,
  type PackQueueConfig,
} from "./packs-slot-sql";

import { prepareAck, type AckKind, type PackAckItem, type PackAckOutcome } from "./packs-ack";
import { prepareLease, type PackLease, type PackLeaseRequest } from "./packs-lease";

export { leasePacks, type PackLease, type PackLeaseRequest } from "./packs-lease";
export { DEFAULT_PACK_CONFIG, type PackQueueConfig } from "./packs-slot-sql";
export { ackPacks, type AckKind, type PackAckItem, type PackAckOutcome } from "./packs-ack";

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

const nextUlid = monotonicFactory();

/** A fresh pack id: a monotonic ULID without two of its random characters (the slot takes their place). */
function packId(now: number): string {
  const u = nextUlid(now);
  return u.slice(0, 10) + u.slice(12);
}

/**
 * Enqueues tasks as packs: consecutive tasks of one type, priority, run_at and max_attempts share a pack
 * of up to PACK_SLOTS tasks and PACK_MAX_BYTES of JSON. One statement for the packs (one JSON array bound),
 * plus, when any task has a dedupe key, the keys' upsert first in the same batch: a key held by a live task
 * leaves its new task `z` (never created). Returns the task ids in input order.
 */
export async function enqueuePacks(
  db: Db,
  queue: string,
  input: PackTask[],
  now: number,
  config: PackQueueConfig = DEFAULT_PACK_CONFIG,
): Promise<{ ids: string[]; deduplicated: number }> {
  type Pack = { id: string; ty: string; pr: number; t: number; x: number; st: string; sl: string[]; bytes: number };
  const packs: Pack[] = [];
  const ids: string[] = [];
  const keys: Array<{ d: string; id: string }> = [];
  const seenKeys = new Set<string>();
  for (const task of input) {
    const ty = task.type ?? "default";
    const pr = task.priority ?? 0;
    const t = task.runAt ?? now;
    const x = task.maxAttempts ?? config.maxAttempts;
    const body = JSON.stringify({ b: task.payload ?? null, g: task.group, d: task.dedupeKey });
    let pack = packs.at(-1);
    if (
      !pack ||
      pack.ty !== ty ||
      pack.pr !== pr ||
      pack.t !== t ||
      pack.x !== x ||
      pack.sl.length >= PACK_SLOTS ||
      pack.bytes + body.length > PACK_MAX_BYTES
    ) {
      pack = { id: packId(now), ty, pr, t, x, st: "", sl: [], bytes: 2 };
      packs.push(pack);
    }
    const id = pack.id + B32[Math.floor(pack.sl.length / 32)]! + B32[pack.sl.length % 32]!;
    let state = "p";
    if (task.dedupeKey !== undefined) {
      // The same key twice in one call: the first task holds it.
      if (seenKeys.has(task.dedupeKey)) state = "z";
      else {
        seenKeys.add(task.dedupeKey);
        keys.push({ d: task.dedupeKey, id });
      }
    }
    pack.st += state;
    pack.sl.push(body);
    pack.bytes += body.length + 1;
    ids.push(id);
  }
  const packsJson = `[${packs
    .map(
      (p) =>
        JSON.stringify({ id: p.id, ty: p.ty, pr: p.pr, t: p.t, x: p.x, st: p.st }).slice(0, -1) +
        `,"sl":[${p.sl.join(",")}]}`,
    )
    .join(",")}]`;
  // A slot whose key another live task holds is `z`; a pack whose every slot is `z` is not inserted.
  const st = keys.length
    ? sql`(SELECT group_concat(CASE WHEN (s.value->>'d') IS NOT NULL AND substr(j.value->>'st', s.key + 1, 1) = 'p'
          AND coalesce((SELECT k.task_id FROM pack_keys k WHERE k.queue = ${queue} AND k.dedupe_key = s.value->>'d'), '')
            <> (j.value->>'id') || substr(${B32}, s.key / 32 + 1, 1) || substr(${B32}, s.key % 32 + 1, 1)
          THEN 'z' ELSE substr(j.value->>'st', s.key + 1, 1) END, '' ORDER BY s.key)
        FROM json_each(j.value->'sl') AS s)`
    : sql`j.value->>'st'`;
  const insert = sql`WITH made AS (SELECT j.value->>'id' AS id, j.value->>'ty' AS ty, j.value->>'pr' AS pr,
        j.value->>'t' AS t, j.value->>'x' AS x, ${st} AS st, j.value->'sl' AS sl FROM json_each(${packsJson}) AS j),
      counted AS (SELECT *, length(st) AS n, ${countChar(sql`st`, "p")} AS live FROM made)
    INSERT INTO packs (id, queue, type, priority, run_at, max_attempts, next_at, rare_at, n, live, ready,
      created_at, updated_at, st, at, lk, leases, slots)
    SELECT id, ${queue}, ty, pr, t, x, t, NULL, n, live, live, ${int(now)}, ${int(now)}, st, ${rep(sql`'0'`, sql`n`)},
      ${rep(sql`' '`, sql`n`)}, jsonb('[]'), jsonb(sl) FROM counted
    WHERE live > 0
    RETURNING live`;
  // A key row names the task holding it; a row whose task is no longer live (finished, or never created)
  // is taken over. The holder's liveness is its state character.
  const slotOf = sql`(instr(${B32}, substr(pack_keys.task_id, 25, 1)) - 1) * 32 + instr(${B32}, substr(pack_keys.task_id, 26, 1)) - 1`;
  const holderLive = sql`coalesce((SELECT substr(p.st, ${slotOf} + 1, 1) FROM packs p
    WHERE p.id = substr(pack_keys.task_id, 1, 24)), 'gone') IN ('p', 'w', 'r')`;
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

/**
 * Heartbeat of one task (extends its lease, records progress): one fenced rewrite of its pack, one row.
 * The slot's lease entry is extended in place when no other slot points at it; else the slot gets a copy
 * of it, so its neighbours' leases are not extended. Returns false when the fence refused it.
 */
export async function heartbeatPack(
  db: Db,
  id: string,
  leaseToken: string,
  progress: number,
  now: number,
): Promise<boolean> {
  const place = packOf(id);
  if (!place) return false;
  const k = int(place.slot);
  const expires = sql`${int(now)} + (x.le->>'v') * 1000`;
  const rows = await db.all<{ id: string }>(sql`UPDATE packs SET
      leases = CASE WHEN x.sole THEN jsonb_set(leases, ${at(sql`x.li`, "e")}, ${expires}, ${at(sql`x.li`, "c")}, NULL)
        ELSE jsonb_insert(leases, '$[#]', jsonb_set(x.le, '$.e', ${expires}, '$.c', NULL)) END,
      lk = CASE WHEN x.sole THEN lk ELSE ${splice(sql`lk`, k, sql`1`, numChar(sql`json_array_length(leases)`))} END,
      slots = jsonb_set(slots, ${at(k, "p")}, ${int(progress)}),
      updated_at = ${int(now)}
    FROM (SELECT li, sole, jsonb_extract(leases, ${at(sql`li`)}) AS le FROM (
        SELECT ${charNum(sql`substr(lk, ${k} + 1, 1)`)} AS li,
          length(lk) - length(replace(lk, substr(lk, ${k} + 1, 1), '')) = 1 AS sole, leases
        FROM packs WHERE id = ${place.pack} AND substr(lk, ${k} + 1, 1) <> ' ')) AS x
    WHERE packs.id = ${place.pack} AND finished_at IS NULL
      AND ${fence(sql`substr(packs.st, ${k} + 1, 1)`, sql`x.le`, sql`${leaseToken}`, now)}
    RETURNING id`);
  return rows.length === 1;
}

/** Inspection by id: the task's view (the same JSON as a lease answer's, its state as it is), or null. */
export async function readPackTask(db: Db, id: string): Promise<string | null> {
  const place = packOf(id);
  if (!place) return null;
  const k = int(place.slot);
  const row = await db.get<{ view: string | null }>(sql`SELECT ${slotViewSql({
    packId: sql`id`,
    queue: sql`queue`,
    type: sql`type`,
    priority: sql`priority`,
    maxAttempts: sql`max_attempts`,
    runAt: sql`run_at`,
    createdAt: sql`created_at`,
    k,
    ch: sql`ch`,
    a: sql`a`,
    le: sql`le`,
    sb: sql`sb`,
  })} AS view FROM (
      SELECT *, substr(st, ${k} + 1, 1) AS ch, ${charNum(sql`substr(at, ${k} + 1, 1)`)} AS a,
        CASE WHEN substr(lk, ${k} + 1, 1) <> ' ' THEN jsonb_extract(leases, ${at(charNum(sql`substr(lk, ${k} + 1, 1)`))}) END AS le,
        jsonb_extract(slots, ${at(k)}) AS sb
      FROM packs WHERE id = ${place.pack} AND ${k} < n)
    WHERE ch <> 'z'`);
  return row?.view ?? null;
}

/**
 * An ack that carries the next lease, as one D1 batch (one round trip, one transaction): the ack's rewrite
 * and counters, then the lease's counters and lease. What a worker loop does between two batches — give back
 * what it finished, take the next — and what the HTTP API's ack with `lease` asks for; BullMQ's worker does
 * the same (finishing a job fetches the next). The lease runs after the ack in the same transaction, so it
 * never takes what the ack just gave back in the same call unless the ack made it pending (a retry due now,
 * a release), as two calls in a row would.
 */
export async function ackThenLeasePacks(
  db: Db,
  ack: { kind: AckKind; items: PackAckItem[] },
  lease: PackLeaseRequest,
  now: number,
  config: PackQueueConfig = DEFAULT_PACK_CONFIG,
): Promise<{ outcomes: PackAckOutcome[]; lease: PackLease }> {
  const acked = prepareAck(db, ack.kind, lease.queue, ack.items, now, config);
  const next = prepareLease(db, lease, now, config);
  const results = await db.$client.batch([...acked.statements, ...next.statements]);
  const split = acked.statements.length;
  return { outcomes: await acked.finish(results.slice(0, split)), lease: next.finish(results.slice(split)) };
}
